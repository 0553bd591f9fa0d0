"""Backends: the same named pipeline steps (split, residues, gemm, epilogue) for numpy and cupy."""
