"""FFTs on the emulated GEMMs (Bailey six-step): planned, not yet built.

Nothing is exported yet; importing this package is harmless.
"""
__all__ = []
