"""bench.counts on a batch of direct transforms: what a GPU call of it pays in products and
host syncs (a shape's int() is no sync, nor the zero-sign fix-ups the FFT settles itself)."""

from bench import counts


def test_a_batch_of_direct_transforms_syncs_twice(monkeypatch):
    monkeypatch.setitem(counts.FFT_CASES, "batch 16x1024", ("fft", (16, 1024)))
    c, _ = counts.fft_counts("batch 16x1024")
    # one product (the quarter turns: three GEMMs, one epilogue a quarter on the CPU), and two
    # host transfers, as the GPU's profile of a batch shows (run 8b1f31d: two device-to-host
    # copies a call): the rows' flags (specials.prepare's row_specials) and exact mode's plan
    # (its spans and flags together)
    assert c["products"] == 1 and c["gemm"] == 3 and c["syncs"] == 2, c
