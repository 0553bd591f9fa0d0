import numpy as np
from hypothesis import given, settings, strategies as st

from ozaki import crt
from ozaki.crt import kulisch


@st.composite
def values_in_range(draw):
    m = draw(st.integers(1, crt.max_num_moduli()))
    bound = crt.crt_bound(m)          # the edge of what the lift must get right
    xs = draw(st.lists(st.integers(-bound, bound) | st.sampled_from([0, 1, -1, bound, -bound, bound - 1]),
                       min_size=1, max_size=20))
    return m, xs


@given(values_in_range(), st.booleans())
@settings(max_examples=150, deadline=None)
def test_reconstruct_is_exact(case, symmetric_input):
    m, xs = case
    ps = crt.moduli(m)
    if symmetric_input:
        res = np.array([[crt.symmetric(x % p, p) for x in xs] for p in ps], dtype=np.int64)
    else:   # unreduced representatives, as the GEMMs deliver them
        res = np.array([[x % p + p * 1000 for x in xs] for p in ps], dtype=np.int64)
    limbs = crt.reconstruct(res, m)
    assert [kulisch.to_int(limbs[:, i]) for i in range(len(xs))] == xs
    # normalized: all limbs but the top in [0, 2**32)
    assert (limbs[:-1] >= 0).all() and (limbs[:-1] < 2 ** 32).all()


def test_constants():
    for m in (1, 5, 20, 49):
        k = crt.crt_constants(m)
        for i, p in enumerate(k.moduli):
            c = kulisch.to_int(k.c_limbs[i])
            assert c % p == 1
            assert all(c % q == 0 for j, q in enumerate(k.moduli) if j != i)
        assert kulisch.to_int(k.P_limbs) == k.P


@given(st.integers(2, 256), st.integers(-10 ** 6, 10 ** 6))
def test_symmetric(p, v):
    r = int(crt.symmetric(np.int64(v), p))
    assert (r - v) % p == 0
    assert -(p // 2) <= r <= p - 1 - p // 2
    assert -128 <= r <= 127
