"""numpy's own TestMatmul and TestDot, from the installed numpy, run against ozaki.matmul / ozaki.dot.

The test classes are numpy's, unmodified: numpy/_core/tests/test_multiarray.py is
loaded as a private copy of the module, and in that copy the names the tests call
are rebound to ozaki's: ``np.matmul`` and ``np.dot`` (``np`` becomes a view of
numpy whose ``matmul``/``dot`` are ozaki's), the module-level ``dot``, and each
class's ``matmul`` attribute.  numpy's MatmulCommon loops over the dtypes in its
``types`` attribute inside each test; ours sets it to the dtypes ozaki claims
(TYPES below), and EXCLUDED_TYPES says why the others are not.

What cannot pass is listed in DESELECTED with the reason, and deselected by name
(tests/conformance/conftest.py; the count shows in pytest's summary, the list
with -v).  Nothing is skipped silently.
"""

import importlib.util
import pathlib
import types

import numpy
import pytest

import ozaki


def _numpy_test_file():
    root = pathlib.Path(numpy.__file__).parent
    for sub in ("_core", "core"):          # numpy 2 / numpy 1
        path = root / sub / "tests" / "test_multiarray.py"
        if path.exists():
            return path
    raise ImportError(f"numpy {numpy.__version__} at {root} has no tests/test_multiarray.py: the "
                      "conformance test runs numpy's own tests and needs a numpy that ships them")


def _load():
    spec = importlib.util.spec_from_file_location("ozaki_conformance_numpy_test_multiarray",
                                                  _numpy_test_file())
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    view = types.ModuleType("numpy")
    view.__getattr__ = lambda name: getattr(numpy, name)     # everything else is numpy's
    view.matmul = ozaki.matmul
    view.dot = ozaki.dot
    mod.np = view
    mod.dot = ozaki.dot
    return mod


_np_tests = _load()

# dtypes of MatmulCommon.types ("?bhilqBHILQefdgFDGO") ozaki claims: float64, complex128,
# float32, complex64 (each entry rounded once to float32), and bool and the integer
# types (numpy's bool and integer results, computed exactly).
TYPES = "?bhilqBHILQfdFD"
EXCLUDED_TYPES = {
    "e": "float16: the product comes back as float64 (the exact product rounded once to float64; "
         "no float16 emulation)",
    "g": "longdouble: refused with TypeError (float64 cannot hold it exactly; ozaki emulates FP64)",
    "G": "clongdouble: refused with TypeError (complex128 cannot hold it exactly)",
    "O": "object arrays: refused with TypeError (no exact integer residues of Python objects)",
}

_OBJECT = "object arrays are refused with TypeError (see EXCLUDED_TYPES['O'])"
_METHOD = "calls the ndarray.dot method, not the dot name; it would test numpy itself"
DESELECTED = {
    "TestOzakiDot::test_vecobject": _OBJECT,
    "TestOzakiDot::test_dot_out_result": _METHOD,
    "TestOzakiDot::test_dot_out_aliasing": _METHOD,
    "TestOzakiDot::test_accelerate_framework_sgemv_fix":
        "numpy's sgemv alignment regression test: it passes (float32 results), but its 40 "
        "matrix-vector products take ~11 s on 2 cores",
    "TestOzakiDot::test_huge_vectordot[float64]": "needs 18 GB and 2**30-element vectors (numpy marks it slow)",
    "TestOzakiDot::test_huge_vectordot[complex128]": "needs 18 GB and 2**30-element vectors (numpy marks it slow)",
    "TestOzakiMatmul::test_matmul_object": _OBJECT,
    "TestOzakiMatmul::test_matmul_object_type_scalar": _OBJECT,
    "TestOzakiMatmul::test_matmul_empty": _OBJECT,
    "TestOzakiMatmul::test_matmul_exception_multiply": _OBJECT,
    "TestOzakiMatmul::test_matmul_exception_add": _OBJECT,
}


class TestOzakiMatmul(_np_tests.TestMatmul):
    matmul = staticmethod(ozaki.matmul)
    types = TYPES


class TestOzakiDot(_np_tests.TestDot):
    pass


test_matmul_axes = _np_tests.test_matmul_axes


# --- the harness itself ------------------------------------------------------------------------

def test_rebinding_took_effect():
    assert _np_tests.np.matmul is ozaki.matmul and _np_tests.np.dot is ozaki.dot
    assert _np_tests.dot is ozaki.dot and TestOzakiMatmul().matmul is ozaki.matmul
    assert _np_tests.np.ones is numpy.ones


def test_exclusions_are_current():
    """Every excluded dtype and deselected test exists in the installed numpy (the lists cannot rot)."""
    assert sorted(TYPES + "".join(EXCLUDED_TYPES)) == sorted(_np_tests.MatmulCommon.types)
    for key in DESELECTED:
        cls, name = key.split("::")
        assert hasattr(globals()[cls], name.split("[")[0]), key


@pytest.mark.parametrize("dt", sorted(EXCLUDED_TYPES))
def test_excluded_types_behave_as_stated(dt):
    a = numpy.ones((2, 2), dtype=dt)
    if dt in "gGO":
        with pytest.raises(TypeError):
            ozaki.matmul(a, a)
        with pytest.raises(TypeError):
            ozaki.dot(a, a)
    else:
        assert ozaki.matmul(a, a).dtype == numpy.result_type(a.dtype, numpy.float64)


def test_harness_catches_a_wrong_matmul():
    """The borrowed tests fail a matmul that is off by one ulp (they are not vacuous here)."""
    def off(a, b, out=None, **kw):
        c = ozaki.matmul(a, b, out, **kw)
        if numpy.asarray(c).dtype.kind in "fc":
            c = c + numpy.finfo(numpy.float64).eps * 4
        return c

    class Planted(_np_tests.TestMatmul):
        matmul = staticmethod(off)
        types = "dD"
    with pytest.raises(AssertionError):
        Planted().test_matrix_matrix_values()
    with pytest.raises(AssertionError):
        Planted().test_out_arg()
