"""numpy.matmul conventions: shapes, batching, dtypes, errors, options."""

import numpy as np
import pytest

import ozaki
from ozaki import reference


def same_bits(x, y):
    return x.shape == y.shape and np.array_equal(np.asarray(x).view(np.int64), np.asarray(y).view(np.int64))


def exact_np(a, b):
    """Reference with numpy.matmul's shape rules, entries exact-then-rounded."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    a2 = a[None] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    out = np.empty(batch + (a2.shape[-2], b2.shape[-1]))
    for idx in np.ndindex(*batch):
        x = np.broadcast_to(a2, batch + a2.shape[-2:])[idx]
        y = np.broadcast_to(b2, batch + b2.shape[-2:])[idx]
        out[idx] = reference.exact_matmul(x, y)
    if a.ndim == 1:
        out = out[..., 0, :]
    if b.ndim == 1:
        out = out[..., 0]
    return out


@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((2, 4, 5), (5, 3)),
                                   ((4, 5), (3, 5, 2)), ((2, 1, 4, 5), (3, 5, 2)), ((1, 3), (3, 1)),
                                   ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((3, 4, 0), (0, 2))])
def test_shapes_like_numpy(rng, sa, sb):
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    got = ozaki.matmul(a, b, mode="exact")
    assert got.shape == np.matmul(a, b).shape
    assert got.dtype == np.float64
    assert same_bits(got, exact_np(a, b))


def test_result_type_and_lists():
    got = ozaki.matmul([[1, 2], [3, 4]], [[5], [6]])
    assert isinstance(got, np.ndarray) and got.tolist() == [[17.0], [39.0]]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.int32, np.uint16, np.bool_, np.int64])
def test_exactly_convertible_dtypes(rng, dtype):
    a = (rng.standard_normal((4, 6)) * 10).astype(dtype)
    b = (rng.standard_normal((6, 3)) * 10).astype(dtype)
    got = ozaki.matmul(a, b, mode="exact")
    assert got.dtype == np.float64
    assert same_bits(got, reference.exact_matmul(a.astype(float), b.astype(float)))


def test_refused_dtypes():
    with pytest.raises(TypeError, match="cannot hold exactly"):
        ozaki.matmul(np.ones((2, 2), np.clongdouble), np.ones((2, 2)))
    with pytest.raises(TypeError, match="2\\*\\*53"):
        ozaki.matmul(np.array([[2 ** 60]], dtype=np.int64), np.ones((1, 1)))
    with pytest.raises(TypeError, match="cannot hold exactly"):
        ozaki.matmul(np.ones((2, 2), np.longdouble), np.ones((2, 2)))
    with pytest.raises(TypeError, match="unsupported dtype"):
        ozaki.matmul(np.array([["a"]]), np.ones((1, 1)))


def test_shape_errors():
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        ozaki.matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="not have enough dimensions"):
        ozaki.matmul(np.float64(2.0), np.ones((1, 1)))
    with pytest.raises(ValueError):
        ozaki.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 2)))


def test_option_errors():
    a = np.ones((2, 2))
    with pytest.raises(ValueError, match="mode"):
        ozaki.matmul(a, a, mode="precise")
    with pytest.raises(ValueError, match="num_moduli"):
        ozaki.matmul(a, a, num_moduli=0)
    with pytest.raises(ValueError, match="num_moduli"):
        ozaki.matmul(a, a, num_moduli=50)
    with pytest.raises(TypeError, match="num_moduli"):
        ozaki.matmul(a, a, num_moduli=2.5)
    with pytest.raises(ValueError, match="substrate"):
        ozaki.matmul(a, a, substrate="int4")
    with pytest.raises(TypeError):
        with ozaki.config(precision=3):
            pass


def test_config_context(rng):
    a, b = rng.standard_normal((5, 7)) * 1e-8, rng.standard_normal((7, 3))
    a[0, 0] = 1e8
    with ozaki.config(mode="exact"):
        inside = ozaki.matmul(a, b)
        assert ozaki.get_config()["mode"] == "exact"
    assert ozaki.get_config()["mode"] == "accurate"
    assert same_bits(inside, reference.exact_matmul(a, b))
    with ozaki.config(mode="fast", num_moduli=2):
        coarse = ozaki.matmul(a, b)
    assert not same_bits(coarse, inside)


def test_dot_like_numpy(rng):
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4, 2))
    got = ozaki.dot(a, b, mode="exact")
    assert got.shape == np.dot(a, b).shape
    ref = np.array([[[[reference.exact_dot(a[i, j], b[k, :, l]) for l in range(2)] for k in range(5)]
                     for j in range(3)] for i in range(2)])
    assert same_bits(got, ref)
    v = rng.standard_normal(4)
    assert same_bits(ozaki.dot(v, v, mode="exact"), np.array(reference.exact_dot(v, v)))
    assert ozaki.dot(3.0, np.array([1.0, 2.0])).tolist() == [3.0, 6.0]
    with pytest.raises(ValueError, match="not aligned"):
        ozaki.dot(a, rng.standard_normal((5, 3, 2)))
