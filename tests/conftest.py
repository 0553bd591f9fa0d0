import numpy as np
import pytest


def _has_gpu():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


HAS_GPU = _has_gpu()


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs cupy and a CUDA device")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(skip)


@pytest.fixture
def rng(request):
    """A fresh generator per test, seeded from the OS (the seed is printed on failure)."""
    seed = np.random.SeedSequence().entropy
    request.node.user_properties.append(("seed", seed))
    print(f"seed={seed}")
    return np.random.default_rng(seed)
