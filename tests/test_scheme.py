"""Bit-for-bit: every mode equals the exact-rational reference of its own scaled integers;
``exact`` equals the correctly rounded exact product."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import ozaki
from ozaki import crt, reference, scheme
from ozaki.backends import numpy_backend
from tests import inputs


def same_bits(x, y):
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    return x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64))


def plan_of(A, B, mode, nm):
    return scheme.make_plan(np, np.ascontiguousarray(A), np.ascontiguousarray(B.T), mode, nm, numpy_backend)


def check_mode(A, B, mode, nm=None):
    C = ozaki.matmul(A, B, mode=mode, num_moduli=nm)
    if mode == "exact":
        ref = reference.exact_matmul(A, B)
    else:
        p = plan_of(A, B, mode, nm)
        ref = reference.scaled_matmul(A, B, p.beta_a, p.beta_b, nearest=p.nearest)
        # The exactness precondition of the CRT: |A'B'| <= crt_bound.
        Ai = reference.scaled_integers(A, p.beta_a, 1, p.nearest)
        Bi = reference.scaled_integers(B, p.beta_b, 0, p.nearest)
        bound = max((sum(abs(a) * abs(Bi[k][j]) for k, a in enumerate(row))
                     for row in Ai for j in range(B.shape[1])), default=0)
        assert bound <= crt.crt_bound(p.num_moduli)
        if p.mode == "fast":
            assert bound < 2 ** crt.usable_bits(p.num_moduli)
    assert same_bits(C, ref)
    return C


@pytest.mark.parametrize("mode,nm", [("fast", 3), ("fast", 9), ("fast", None), ("accurate", 2),
                                     ("accurate", 7), ("accurate", None), ("exact", None)])
@pytest.mark.parametrize("spread", [0, 8, 40, 300, 1000])
def test_modes_bit_for_bit(rng, mode, nm, spread):
    m, k, n = rng.integers(1, 14, 3)
    check_mode(inputs.wide(rng, (m, k), spread), inputs.wide(rng, (k, n), spread), mode, nm)


@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_adversarial_families(rng, mode):
    cases = [(inputs.subnormal_heavy(rng, (6, 9)), inputs.normal(rng, (9, 5))),
             (inputs.subnormal_heavy(rng, (6, 9)), inputs.subnormal_heavy(rng, (9, 5))),
             (inputs.huge(rng, (5, 8)), inputs.huge(rng, (8, 4))),
             inputs.cancelling(rng, 6, 20, 5),
             (inputs.phi(rng, (7, 30), 4), inputs.phi(rng, (30, 6), 4)),
             (np.full((3, 40), 2.0 ** 1023), np.full((40, 2), -(2.0 ** 1023)))]
    for A, B in cases:
        check_mode(A, B, mode)


def test_exact_is_correctly_rounded_on_full_range(rng):
    """Every exponent of float64, subnormals included, in one product."""
    k = 24
    A = rng.standard_normal((5, k)) * np.exp2(rng.integers(-1074, 1000, (5, k)).astype(float))
    B = rng.standard_normal((k, 4)) * np.exp2(rng.integers(-1074, 1000, (k, 4)).astype(float))
    A[0, :] = np.nextafter(0, 1) * rng.integers(1, 5, k)
    p = plan_of(A, B, "exact", None)
    assert p.slices_a > 1 and p.slices_b > 1          # the Kulisch sum of slice pairs is exercised
    check_mode(A, B, "exact")


def test_exact_cancellation_to_tiny(rng):
    """Huge terms cancel exactly, leaving a subnormal: only an exact sum gets it."""
    A = np.array([[2.0 ** 1000, 2.0 ** -1074, -(2.0 ** 1000)]])
    B = np.array([[1.0], [3.0], [1.0]])
    C = ozaki.matmul(A, B, mode="exact")
    assert C[0, 0] == 3 * 2.0 ** -1074
    check_mode(A, B, "exact")


def test_exact_num_moduli_override(rng):
    A, B = inputs.wide(rng, (6, 10), 30), inputs.wide(rng, (10, 6), 30)
    check_mode(A, B, "exact", 30)
    with pytest.raises(ValueError, match="exact mode"):
        ozaki.matmul(A, B, mode="exact", num_moduli=3)


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@given(st.data(), st.sampled_from(["fast", "accurate", "exact"]))
@settings(max_examples=60, deadline=None)
def test_property_bit_for_bit(data, mode):
    m, k, n = (data.draw(st.integers(1, 6)) for _ in range(3))
    A = data.draw(hnp.arrays(np.float64, (m, k), elements=finite))
    B = data.draw(hnp.arrays(np.float64, (k, n), elements=finite))
    nm = data.draw(st.sampled_from([None, 4, 12])) if mode != "exact" else None
    check_mode(A, B, mode, nm)


def test_specials_follow_ieee(rng):
    A = inputs.sprinkle_specials(rng, inputs.normal(rng, (12, 15)), 0.15)
    B = inputs.sprinkle_specials(rng, inputs.normal(rng, (15, 10)), 0.15)
    ref = reference.exact_matmul(A, B)
    for mode in ("fast", "accurate", "exact"):
        C = ozaki.matmul(A, B, mode=mode)
        special = ~np.isfinite(ref)
        assert same_bits(C[special], ref[special])
        assert np.isfinite(C[~special]).all()
    assert same_bits(ozaki.matmul(A, B, mode="exact"), ref)


def test_signed_zeros():
    z = np.array([[-0.0, 0.0], [0.0, 0.0]])
    B = np.array([[1.0, -1.0], [-0.0, 0.0]])
    for mode in ("fast", "accurate", "exact"):
        C = ozaki.matmul(z, B, mode=mode)
        assert same_bits(C, reference.exact_matmul(z, B))
    # -0 * 1 + 0 * -0 = -0 + -0 = -0
    assert np.signbit(ozaki.matmul(np.array([[-0.0, 0.0]]), np.array([[1.0], [-0.0]]))[0, 0])
    # exact cancellation of nonzero terms gives +0
    C = ozaki.matmul(np.array([[1.0, 1.0]]), np.array([[-2.0], [2.0]]), mode="exact")
    assert C[0, 0] == 0 and not np.signbit(C[0, 0])


def test_zero_signs_settled_elsewhere():
    """Inside scheme.zero_signs_settled_elsewhere (this thread only) an all -0 sum comes out
    +0 as rounded; NaN/inf inputs still get IEEE results; outside, and after an exception
    inside, the sign rule holds again."""
    import threading
    a, b = np.array([[-0.0, 0.0], [1.0, 2.0]]), np.array([[1.0], [-0.0]])
    assert np.signbit(ozaki.matmul(a, b)[0, 0])
    with scheme.zero_signs_settled_elsewhere():
        for mode in ("fast", "accurate", "exact"):
            C = ozaki.matmul(a, b, mode=mode)
            assert C[0, 0] == 0 and not np.signbit(C[0, 0]) and C[1, 0] == 1.0
        other = []
        t = threading.Thread(target=lambda: other.append(ozaki.matmul(a, b)))
        t.start()
        t.join()
        assert np.signbit(other[0][0, 0])                          # another thread: the rule
        inf = ozaki.matmul(np.array([[np.inf, -0.0]]), np.array([[1.0], [1.0]]))
        assert inf[0, 0] == np.inf
        with scheme.zero_signs_settled_elsewhere(False):              # the rule again, inside
            assert np.signbit(ozaki.matmul(a, b)[0, 0])
        assert not np.signbit(ozaki.matmul(a, b)[0, 0])
    with pytest.raises(RuntimeError):
        with scheme.zero_signs_settled_elsewhere():
            raise RuntimeError
    assert np.signbit(ozaki.matmul(a, b)[0, 0])


def test_zero_sprinkled(rng):
    A = inputs.sprinkle_zeros(rng, inputs.normal(rng, (10, 6)), 0.7)
    B = inputs.sprinkle_zeros(rng, inputs.normal(rng, (6, 9)), 0.7)
    for mode in ("fast", "accurate", "exact"):
        check_mode(A, B, mode)


def test_overflow_gives_inf():
    A = np.full((1, 4), 2.0 ** 1000)
    C = ozaki.matmul(A, A.T, mode="exact")
    assert C[0, 0] == np.inf
    C = ozaki.matmul(A, -A.T, mode="accurate")
    assert C[0, 0] == -np.inf


def test_cpu_speed_256_exact(rng):
    import time
    A, B = inputs.normal(rng, (256, 256)), inputs.normal(rng, (256, 256))
    ozaki.matmul(A[:8], B, mode="exact")
    t = time.perf_counter()
    ozaki.matmul(A, B, mode="exact")
    assert time.perf_counter() - t < 1.0


def test_exact_larger_sampled(rng):
    A, B = inputs.wide(rng, (200, 300), 20), inputs.wide(rng, (300, 150), 20)
    C = ozaki.matmul(A, B, mode="exact")
    entries = [(int(i), int(j)) for i, j in zip(rng.integers(0, 200, 40), rng.integers(0, 150, 40))]
    assert same_bits(C[tuple(np.array(entries).T)], reference.exact_matmul(A, B, entries))


@pytest.mark.parametrize("mode", ["accurate", "exact"])
def test_blocked_workspace_same_bits(rng, mode):
    """A workspace far too small for one pass: blocked over rows and columns, same bits."""
    A, B = inputs.wide(rng, (37, 50), 30), inputs.wide(rng, (50, 23), 30)
    whole = ozaki.matmul(A, B, mode=mode)
    p = plan_of(A, B, mode, None)
    mb, nb = scheme.blocks(37, 23, 50, p, 20000)
    assert mb < 37 and nb < 23
    with ozaki.config(workspace=20000):
        blocked = ozaki.matmul(A, B, mode=mode)
    assert same_bits(blocked, whole)


def test_blocks_are_aligned():
    """Blocks smaller than the whole dimension come in multiples of BLOCK_ALIGN (a block's
    columns are its products' leading dimension), unless the budget holds fewer; never empty."""
    p = scheme.Plan("accurate", 16, None, None, None, 1, 1, (), True)
    for m, n, k, workspace in [(49152, 49152, 49152, 30 << 30), (40000, 30000, 4096, 3 << 30),
                               (5000, 5000, 5000, 1 << 20), (37, 23, 50, 20000)]:
        mb, nb = scheme.blocks(m, n, k, p, workspace)
        for size, b in ((m, mb), (n, nb)):
            assert 1 <= b <= size
            assert b == size or b % scheme.BLOCK_ALIGN == 0 or b < scheme.BLOCK_ALIGN
    mb, nb = scheme.blocks(49152, 49152, 49152, p, 30 << 30)
    assert mb % scheme.BLOCK_ALIGN == 0 and nb % scheme.BLOCK_ALIGN == 0 and mb < 49152


def test_blocks_count_each_paths_products():
    """The products' bytes per output decide the rows a block takes: int32 products
    (cuBLAS) more than int8 residues (the residue GEMM), none on chip (fused)."""
    p = scheme.Plan("accurate", 16, None, None, None, 1, 1, (), True)
    for complex_ in (False, True):
        rows = {path: scheme.blocks(40000, 4096, 4096, p, 1 << 30, complex_, path)[0]
                for path in ("cublas", "cutlass", "fused")}
        assert rows["cublas"] < rows["cutlass"] < rows["fused"] <= 40000


@pytest.mark.parametrize("mode", ["fast", "accurate", "exact"])
def test_stack_equals_each(rng, mode):
    """A stack goes through the pipeline at once; every matrix gets the bits of its own product."""
    A = inputs.wide(rng, (5, 9, 14), 20)
    B = inputs.wide(rng, (5, 14, 7), 20)
    A[1] *= 2.0 ** 300                       # matrices of very different scales in one stack
    B[3, 2, 1] = np.inf
    A[4, 0, :] = -0.0
    whole = ozaki.matmul(A, B, mode=mode)
    for g in range(5):
        assert same_bits(whole[g], ozaki.matmul(A[g], B[g], mode=mode))
    Z = A + 1j * inputs.wide(rng, (5, 9, 14), 5)
    W = B + 1j * inputs.wide(rng, (5, 14, 7), 5)
    whole = ozaki.matmul(Z, W, mode=mode)
    for g in range(5):
        assert np.array_equal(whole[g].view(np.int64), ozaki.matmul(Z[g], W[g], mode=mode).view(np.int64))


def test_stack_in_pieces_same_bits(rng):
    A, B = inputs.wide(rng, (6, 8, 10), 10), inputs.wide(rng, (6, 10, 5), 10)
    whole = ozaki.matmul(A, B)
    with ozaki.config(workspace=30000):            # a piece of one or two matrices at a time
        assert same_bits(ozaki.matmul(A, B), whole)


def stack_in_pieces(rng, monkeypatch):
    """A stack of 11 small products, its product in one piece, the workspace one matrix takes,
    and the list the sizes of matmul_stack's pieces go into, call by call."""
    A, B = inputs.wide(rng, (11, 8, 10), 10), inputs.wide(rng, (11, 10, 5), 10)
    whole = ozaki.matmul(A, B)
    pieces = []
    piece = scheme._stack_piece
    monkeypatch.setattr(scheme, "_stack_piece", lambda A, *rest, **kw: pieces.append(A.shape[0]) or piece(A, *rest, **kw))
    return A, B, whole, scheme.stack_matrix_bytes(8, 5, 10, "accurate", False), pieces


@pytest.mark.parametrize("fit", [1, 3, 5, 7])
def test_stack_pieces_are_powers_of_two(rng, monkeypatch, fit):
    """A stack past the workspace is cut into pieces of the largest power of two matrices that
    fit (the last one the rest): the shapes, hence the GPU's cached graphs, stay the same
    while the free memory moves the workspace a little; the bits are the whole stack's."""
    A, B, whole, per_matrix, pieces = stack_in_pieces(rng, monkeypatch)
    with ozaki.config(workspace=fit * per_matrix + per_matrix // 2):
        assert same_bits(ozaki.matmul(A, B), whole)
    step = 1 << (fit.bit_length() - 1)
    assert pieces == [step] * (11 // step) + ([11 % step] if 11 % step else [])


def test_stack_pieces_keep_their_size_under_the_default_workspace(rng, monkeypatch):
    """Under the default workspace (the GPU's: half the free memory, which cached graphs take),
    a stack of the same shapes keeps the piece size it took while that still fits: a call with
    more room does not cut it coarser, one with less cuts it finer from then on."""
    A, B, whole, per_matrix, pieces = stack_in_pieces(rng, monkeypatch)
    monkeypatch.setattr(scheme, "_stack_steps", {})
    for fit, step in ((5, 4), (7, 4), (3, 2), (6, 2)):
        monkeypatch.setattr(numpy_backend, "default_workspace", lambda: fit * per_matrix + per_matrix // 2)
        pieces.clear()
        assert same_bits(ozaki.matmul(A, B), whole)
        assert pieces == [step] * (11 // step) + [11 % step], fit


@pytest.mark.parametrize("mode,nm", [("fast", 2), ("fast", 17), ("accurate", 2), ("accurate", 17)])
def test_same_sign_products_at_the_crt_bound(mode, nm):
    """Every term of one sign and of maximal size: the sum meets the bound the scaling promises."""
    k = 1500
    A = np.full((3, k), 1.0 - 2.0 ** -53)
    B = np.full((k, 2), -(1.0 + 2.0 ** -52))
    A[1] = 2.0 ** -1000
    check_mode(A, B, mode, nm)


def test_fixups_on_a_stack_match_each_matrix(rng):
    """Signed zeros and NaN/inf fixed on the stack's matrices that need them, at once: the same
    bits as each matrix alone, and IEEE's zero signs where every term is a zero."""
    import ozaki
    A = rng.standard_normal((5, 6, 9))
    B = rng.standard_normal((5, 9, 4))
    A[1] = -0.0                                  # every term -0 * b: zero results, signs from b
    A[3, 2, 4] = np.inf
    A[4], B[4] = 0.0, -0.0                       # every term +0 * -0 = -0: sums -0
    C = ozaki.matmul(A, B)
    for g in range(5):
        assert np.array_equal(C[g].view(np.int64), ozaki.matmul(A[g], B[g]).view(np.int64)), g
    assert np.signbit(C[4]).all() and (C[4] == 0).all()
    assert np.isinf(C[3, 2]).all() and np.isfinite(np.delete(C[3], 2, axis=0)).all()


@pytest.mark.parametrize("complex_", [False, True])
@pytest.mark.parametrize("out_dtype", [np.float64, np.float32])
def test_blocks_written_in_place_keep_the_bits(rng, complex_, out_dtype):
    """A product cut into blocks (a small workspace) has each block's epilogue write into
    the result and its residuals where they lie (scheme._result_parts: a complex one's
    parts and residuals the halves of complex arrays, one element stride for all, as the
    GPU kernel indexes them); the bits are the unblocked product's."""
    A, B = inputs.wide(rng, (1, 70, 90), 30), inputs.wide(rng, (1, 90, 50), 30)
    if complex_:
        A, B = A + 1j * inputs.wide(rng, A.shape, 30), B - 1j * inputs.wide(rng, B.shape, 30)
    be = numpy_backend
    got, want = (scheme._finite_piece(A, B, "accurate", 20, be, workspace, complex_, "int8", "cublas",
                                      np.dtype(out_dtype), residual=True)[0]
                 for workspace in (150_000, be.default_workspace()))
    assert len(got) == len(want) == (4 if complex_ else 2)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        assert np.array_equal(np.ascontiguousarray(g).view(np.uint8), np.ascontiguousarray(w).view(np.uint8))
    strides = {tuple(s // c.itemsize for s in c.strides) for c in got}
    assert strides == {(70 * 50 * (2 if complex_ else 1), 50 * (2 if complex_ else 1), 2 if complex_ else 1)}


def _rows_spanning(rng, rows, k, span):
    """rows x k floats whose every row spans exactly ``span`` bits (top - lowest set bit):
    entries 2**(span - 1) and 1, the rest integers in between with random bits, each row
    scaled by its own power of two, signs random."""
    X = np.empty((rows, k))
    for r in range(rows):
        row = [2.0 ** (span - 1), 1.0]
        for _ in range(k - 2):
            bits = int(rng.integers(1, min(53, max(span - 1, 1)) + 1))
            shift = int(rng.integers(0, max(span - 1 - bits, 0) + 1))
            row.append(float(int(rng.integers(1, 2 ** bits)) * 2 ** shift))
        row = np.array(row[:k]) if k >= 2 else np.array([2.0 ** (span - 1) if span > 1 else 1.0])
        X[r] = rng.permutation(row) * rng.choice([-1.0, 1.0], k) * 2.0 ** int(rng.integers(-40, 40))
    return X


@settings(max_examples=25, deadline=None)
@given(span_a=st.integers(1, 260), span_b=st.integers(1, 260), k=st.sampled_from([1, 2, 9, 300]),
       seed=st.integers(0, 2 ** 32 - 1))
def test_exact_caps_carry_their_spans_exactly(span_a, span_b, k, seed):
    """Data spanning up to exact_caps' bits, multiplied with the slicing planned for narrower
    spans (what a replayed CUDA graph does, graphs.Speculation), is still the correctly
    rounded exact product (Fraction reference)."""
    rng = np.random.default_rng(seed)
    sa, sb = (s if k > 1 else 1 for s in (span_a, span_b))      # one entry a row spans 1 bit
    plan = scheme.exact_sizes_beside(sa, sb, k)
    cap_a, cap_b = scheme.exact_caps(sa, sb, k, *plan)
    assert cap_a >= sa and cap_b >= sb
    wa, wb, m, ta, tb = plan
    assert cap_a <= ta * wa and cap_b <= tb * wb
    assert min(wa, cap_a) + min(wb, cap_b) + scheme._clog2(k) <= crt.usable_bits(m)
    A = _rows_spanning(rng, 3, k, cap_a if k > 1 else 1)
    B = _rows_spanning(rng, 2, k, cap_b if k > 1 else 1).T.copy()
    real = scheme.to_host_ints

    def planned_for_narrower(xp, values, *speculation):  # the spans read: those planned for
        got = real(xp, values, *speculation)
        return [sa, sb] + got[2:] if len(got) == 3 else got
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scheme, "to_host_ints", planned_for_narrower)
        C = ozaki.matmul(A, B, mode="exact")
    assert same_bits(C, reference.exact_matmul(A, B))


def test_exact_caps_refuse_a_slicing_too_narrow():
    with pytest.raises(ValueError, match="exact_caps"):
        scheme.exact_caps(200, 200, 100, 32, 32, 2, 7, 7)


@pytest.mark.parametrize("shape", [(5, 7, 3), (2, 1, 4), (3, 6, 1), (0, 4, 5), (4, 0, 3)])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_operand_rows_of_a_stack_through_the_backends_tiled_transposes(shape, dtype):
    """A backend with tiled_bt (cupy_backend's NEW_KERNELS tiled_bt) makes a stack's B^T rows
    through its ``contiguous`` (transpose.cu's tiles there): the same rows as the default way,
    for real and complex stacks, empty ones and single rows or columns included."""
    import types
    rng = np.random.default_rng(5)
    B = rng.standard_normal(shape)
    if dtype == np.complex128:
        B = B + 1j * rng.standard_normal(shape)
    seen = []

    def contiguous(x):
        seen.append(x.shape)
        return np.ascontiguousarray(x)
    tiled = types.SimpleNamespace(**{name: getattr(numpy_backend, name) for name in dir(numpy_backend)
                                     if not name.startswith("__")})
    tiled.contiguous, tiled.tiled_bt = contiguous, lambda: True
    want_parts, want_joined = scheme.operand_rows(numpy_backend, B, "right")
    parts, joined = scheme.operand_rows(tiled, B, "right")
    assert joined.shape == want_joined.shape and np.array_equal(joined, want_joined)
    assert len(parts) == len(want_parts) and all(np.array_equal(p, q) for p, q in zip(parts, want_parts))
    assert seen                                          # the tiled way was taken
