"""ozaki.fft on cupy arrays with its blocks replayed as CUDA graphs by speculation
(graphs.speculated; the host reads of host.py recorded, then checked on the device):
fresh data every call gives the CPU's bits, both where the recorded decisions serve the
new data (the replay) and where they do not (rows spanning many more bits, NaN/inf,
zeros, real rows after complex ones: the call runs again eagerly).  Skipped without a
CUDA device (tests/conftest.py)."""

import numpy as np
import pytest

import ozaki.fft as of
from tests import inputs
from tests.fft.test_fft_gpu import _same_bits

pytestmark = pytest.mark.gpu


@pytest.fixture
def graphs():
    from ozaki.backends import graphs
    graphs.clear()
    yield graphs
    graphs.clear()


def draws(rng, shape, complex_, calls=8):
    """Typical data first (the capture and its replays), then wide exponents, specials,
    zeros, real rows, and typical data again."""
    out = []
    for c in range(calls):
        x = inputs.wide(rng, shape, 60) if c == 4 else rng.standard_normal(shape)
        if complex_:
            x = x + 1j * (0 if c == 6 else rng.standard_normal(shape))
        if c == 5:
            x = x.copy()
            x.real = inputs.sprinkle_specials(rng, np.ascontiguousarray(x.real), 0.02)
        if c == 3:
            x = x.copy()
            x[..., ::3] = -0.0
        out.append(x)
    return out


CASES = [("fft", (4, 64), {}), ("fft", (3, 1000), {}), ("ifft", (2, 480), {"norm": "ortho"}),
         ("fft", (1, 4096), {}), ("fft", (1, 331), {}), ("rfft", (6, 200), {}), ("irfft", (5, 101), {"n": 200}),
         ("fftn", (8, 12, 10), {}), ("fft", (1, 1 << 17), {}), ("fft", (8, 256), {"mode": "accurate"})]


@pytest.mark.parametrize("name, shape, kw", CASES)
def test_replays_give_the_cpu_bits(rng, graphs, name, shape, kw):
    cupy = pytest.importorskip("cupy")
    fn = getattr(of, name)
    got = []
    for x in draws(rng, shape, name not in ("rfft",)):
        got.append((fn(cupy.asarray(x), **kw), fn(x, **kw)))
    assert graphs.stats["captured"] >= 1, graphs._refused
    assert graphs.stats["replayed"] >= 1, dict(graphs.stats)
    for c, (gpu, cpu) in enumerate(got):      # earlier results untouched by later replays
        _same_bits(gpu, cpu)


def test_wider_spans_run_again_eagerly(rng, graphs):
    """Rows spanning far more bits than the recorded run's miss its plan: the device check
    fails and the call runs eagerly, with the CPU's bits."""
    cupy = pytest.importorskip("cupy")
    x = rng.standard_normal((4, 128)) + 1j * rng.standard_normal((4, 128))
    for _ in range(3):
        of.fft(cupy.asarray(x))
    assert graphs.stats["replayed"] == 2, (dict(graphs.stats), graphs._refused)   # the capture's call, the third
    y = inputs.wide(rng, (4, 128), 200) + 1j * rng.standard_normal((4, 128))
    _same_bits(of.fft(cupy.asarray(y)), of.fft(y))
    assert graphs.stats["missed"] == 1, dict(graphs.stats)
    _same_bits(of.fft(cupy.asarray(x)), of.fft(x))
    assert graphs.stats["replayed"] == 3


def test_graphs_off_stay_eager(rng, graphs, monkeypatch):
    cupy = pytest.importorskip("cupy")
    monkeypatch.setattr(graphs, "ENABLED", False)
    x = cupy.asarray(rng.standard_normal((4, 64)) + 0j)
    for _ in range(3):
        of.fft(x)
    assert not graphs._graphs and not graphs.stats
