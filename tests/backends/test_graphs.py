"""Repeated small products replayed as CUDA graphs (ozaki/backends/graphs.py) give the
CPU's bits on fresh data every call, NaN/inf and signed zeros included, on any stream
and from several threads (needs a CUDA device)."""

import threading

import numpy as np
import pytest

import ozaki
from tests import inputs

pytestmark = pytest.mark.gpu


def same_bits(x, y):
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and np.array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.fixture
def graphs():
    from ozaki.backends import graphs
    graphs.clear()
    yield graphs
    graphs.clear()


def draws(rng, shape_a, shape_b, complex_, calls):
    """Fresh operands per call; the later ones with specials and wide exponents."""
    out = []
    for c in range(calls):
        A, B = inputs.wide(rng, shape_a, 40 * c), inputs.wide(rng, shape_b, 40 * c)
        if complex_:
            A = A + 1j * inputs.wide(rng, shape_a, 10)
            B = B - 1j * inputs.wide(rng, shape_b, 10)
        if c == 3:
            A = A.copy()
            A.real = inputs.sprinkle_specials(rng, A.real.copy(), 0.02)
        if c == 4:
            B[..., 0, :] = -0.0
        out.append((A, B))
    return out


@pytest.mark.parametrize("case", [
    ("accurate", (96, 80), (80, 64), False, None),
    ("fast", (96, 80), (80, 64), False, None),
    ("accurate", (33, 17, 40), (33, 40, 9), False, None),   # a stack
    ("accurate", (48, 64), (64, 32), True, None),           # complex
    ("accurate", (96, 80), (80, 64), False, np.float32),    # float32: rounded to float32
    ("exact", (96, 80), (80, 64), False, None),             # by speculation: its plan's spans checked
    ("exact", (48, 64), (64, 32), True, None),
    ("exact", (33, 17, 40), (33, 40, 9), False, None),      # exact-mode stacks
    ("exact", (5, 24, 32), (5, 32, 16), True, None),
])
def test_replays_give_the_cpu_bits(rng, graphs, case):
    import cupy
    mode, shape_a, shape_b, complex_, dtype = case
    results = []
    for A, B in draws(rng, shape_a, shape_b, complex_, 6):
        if dtype is not None:
            A, B = A.astype(dtype), B.astype(dtype)
        gpu = ozaki.matmul(cupy.asarray(A), cupy.asarray(B), mode=mode)
        results.append((ozaki.matmul(A, B, mode=mode), gpu))
    assert len(graphs._graphs) == 1, "the repeated shape was not captured"
    for c, (cpu, gpu) in enumerate(results):            # earlier results untouched by later replays
        assert same_bits(cpu, cupy.asnumpy(gpu)), c


def test_replays_on_a_user_stream(rng, graphs):
    import cupy
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for A, B in draws(rng, (64, 64), (64, 64), False, 4):
            dA, dB = cupy.asarray(A), cupy.asarray(B)
            gpu = ozaki.matmul(dA, dB)
            assert same_bits(ozaki.matmul(A, B), cupy.asnumpy(gpu))
    assert len(graphs._graphs) == 1


def test_replays_from_threads(rng, graphs):
    import cupy
    pairs = draws(rng, (50, 70), (70, 40), False, 3) * 4
    expected = [ozaki.matmul(A, B) for A, B in pairs]
    got = [None] * len(pairs)

    def work(i):
        with cupy.cuda.Stream(non_blocking=True):
            for j in range(i, len(pairs), 4):
                got[j] = cupy.asnumpy(ozaki.matmul(cupy.asarray(pairs[j][0]), cupy.asarray(pairs[j][1])))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for j, (e, g) in enumerate(zip(expected, got)):
        assert same_bits(e, g), j
    assert len(graphs._graphs) == 1, "the shape was not captured"


def test_the_same_arrays_again_replay_directly(rng, graphs):
    """A stack called again with the same device arrays replays the direct graph over them
    (no copy in, graphs.DIRECT): the CPU's bits while they hold one stack, after they are
    overwritten in place (specials included), and for fresh arrays after them."""
    import cupy
    pairs = draws(rng, (33, 17, 40), (33, 40, 9), False, 5)
    dA, dB = cupy.asarray(pairs[0][0]), cupy.asarray(pairs[0][1])

    def check(A, B, dA, dB, calls):
        for c in range(calls):
            cpu = ozaki.matmul(A, B, mode="accurate")
            assert same_bits(cpu, cupy.asnumpy(ozaki.matmul(dA, dB, mode="accurate"))), c
    check(*pairs[0], dA, dB, 5)         # eager, the capture, the direct capture, two direct replays
    assert graphs.stats["direct_captured"] == 1 and graphs.stats["direct"] == 3, (
        dict(graphs.stats), graphs._refused)
    for A, B in pairs[3:]:              # NaN/inf, then signed zeros, written into the same arrays
        dA[...], dB[...] = cupy.asarray(A), cupy.asarray(B)
        check(A, B, dA, dB, 2)
    assert graphs.stats["direct"] == 7, dict(graphs.stats)
    for A, B in pairs[1:3]:             # fresh arrays, each pair called twice: copied in, then captured over
        check(A, B, cupy.asarray(A), cupy.asarray(B), 2)
    assert len(graphs._graphs) == 1 and not graphs.stats["direct_failed"], dict(graphs.stats)
    assert graphs.stats["direct_captured"] == 3 and graphs.stats["direct"] == 9, dict(graphs.stats)


def test_graphs_off_and_large_products_stay_eager(rng, graphs, monkeypatch):
    import cupy
    monkeypatch.setattr(graphs, "ENABLED", False)
    A = cupy.asarray(rng.standard_normal((64, 64)))
    for _ in range(3):
        ozaki.matmul(A, A)
    assert not graphs._graphs
    monkeypatch.setattr(graphs, "ENABLED", True)
    from ozaki import scheme
    n = int(round(scheme.GRAPH_MAX_WORK ** (1 / 3))) + 16     # past GRAPH_MAX_WORK: eager
    B = cupy.asarray(rng.standard_normal((n, n)))
    for _ in range(3):
        ozaki.matmul(B, B)
    assert not graphs._graphs


@pytest.mark.parametrize("case", [
    ("accurate", (96, 80), (80, 64), False),
    ("fast", (96, 80), (80, 64), False),
    ("accurate", (33, 17, 40), (33, 40, 9), False),         # a stack: one residue GEMM, one epilogue
    ("accurate", (48, 64), (64, 32), True),                  # complex
])
def test_replays_on_the_residue_gemm(rng, graphs, case):
    """The residue GEMM's path (CUTLASS through ctypes, then the epilogue) captured and
    replayed: the CPU's bits on fresh data each call, specials included."""
    import cupy
    from tests.backends.test_residue_gemm import residue_gemm_backend
    residue_gemm_backend()                     # skipped off Hopper or without nvcc and CUTLASS
    mode, shape_a, shape_b, complex_ = case
    results = []
    with ozaki.config(path="cutlass"):
        for A, B in draws(rng, shape_a, shape_b, complex_, 6):
            results.append((ozaki.matmul(A, B, mode=mode), ozaki.matmul(cupy.asarray(A), cupy.asarray(B), mode=mode)))
    assert len(graphs._graphs) == 1, "the repeated shape was not captured"
    for c, (cpu, gpu) in enumerate(results):
        assert same_bits(cpu, cupy.asnumpy(gpu)), c


def test_a_call_setting_changed_takes_a_graph_of_its_own(rng, graphs, monkeypatch):
    """OZAKI_EPILOGUE_VEC and the others of cupy_backend.CALL_SETTINGS are read at each
    call: a shape replayed under one value is captured anew under another, never replayed
    with the other's kernels (the bits stay the CPU's)."""
    import cupy
    for vec in ("1", "2"):
        monkeypatch.setenv("OZAKI_EPILOGUE_VEC", vec)
        for A, B in draws(rng, (64, 48), (48, 64), False, 3):
            assert same_bits(ozaki.matmul(A, B), cupy.asnumpy(ozaki.matmul(cupy.asarray(A), cupy.asarray(B))))
    assert len(graphs._graphs) == 2
    # a key ends (..., NEW_KERNELS, EPILOGUE_VEC, RESIDUE_GEMM_TILE, device)
    assert sorted(key[-3] for key in graphs._graphs) == ["1", "2"], list(graphs._graphs)


def test_a_key_whose_replays_miss_goes_eager(rng, graphs):
    """Exact mode replays with the IEEE flags its recorded run read (its plan's host read,
    checked on the device): a shape captured on finite operands misses on each call whose A
    holds a NaN.  Every other call with one (at least half the replays missing, past
    MISS_FRACTION), the key is dropped at its MISS_AFTER-th replay and runs eagerly from then
    on, never captured or replayed again; every call gives the CPU's bits."""
    import cupy
    calls = 1 + graphs.MISS_AFTER + 6
    key = None
    for c in range(calls):
        A, B = rng.standard_normal((96, 80)), rng.standard_normal((80, 64))
        if c >= 2 and c % 2 == 0:       # calls 0 and 1 finite: the capture's recorded flags are 0
            A[c % 96, (7 * c) % 80] = np.nan
        cpu = ozaki.matmul(A, B, mode="exact")
        gpu = ozaki.matmul(cupy.asarray(A), cupy.asarray(B), mode="exact")
        assert same_bits(cpu, cupy.asnumpy(gpu)), c
        if c == 0:
            assert not graphs._graphs and not graphs.stats, dict(graphs.stats)
            continue
        if c == 1:
            assert len(graphs._graphs) == 1, ("the shape was not captured", graphs._refused)
            (key,) = graphs._graphs
        # calls 1..c replayed (call 1 the capture's); calls 2, 4, ... missed
        replays = graphs.stats["replayed"] + graphs.stats["missed"]
        assert replays == min(c, graphs.MISS_AFTER), (c, dict(graphs.stats))
        assert graphs.stats["missed"] >= min(c, graphs.MISS_AFTER) // 2, (c, dict(graphs.stats))
        assert (key in graphs._graphs) == (c < graphs.MISS_AFTER), (c, dict(graphs.stats))
    assert graphs.stats["captured"] == 1 and graphs.stats["eager_misses"] == 1, dict(graphs.stats)
    assert "replays missed" in graphs._refused[key] and not graphs._graphs
