"""The verification suite finds nothing wrong with ozaki, and does find a planted error."""

import json

import numpy as np

import ozaki
from ozaki import verify


def test_short_profile_passes_and_reports(tmp_path):
    rows = verify.run("short", gpu=False)
    assert [r for r in rows if r.status == "fail"] == []
    assert {r.check for r in rows} >= {"bit-for-bit", "max ulp", "DMMCH", "DMMCH sweep", "DMMCH vs spread",
                                       "L2 error"}
    assert {r.case for r in rows} >= {"complex normal", "complex wide", "fft N=64"}
    verify.write_report(rows, str(tmp_path))
    assert (tmp_path / "verify.json").exists() and (tmp_path / "verify.md").exists()
    assert "| case |" in (tmp_path / "verify.md").read_text()
    # written again later with benchmark results: the same rows, and the TFLOPS plot when matplotlib is there
    bench = tmp_path / "gemm.json"
    bench.write_text(json.dumps({"rows": [
        {"n": n, "family": "normal", "impl": impl, "num_moduli": nm, "tflops": t}
        for n, impl, nm, t in [(1024, "cublas_dgemm", None, 30.0), (2048, "cublas_dgemm", None, 55.0),
                               (1024, "ozaki_accurate", 16, 1.5), (2048, "ozaki_accurate", 16, 11.0)]]}))
    before = json.loads((tmp_path / "verify.json").read_text())["rows"]
    made = verify.rewrite_report(str(tmp_path), str(bench))
    assert json.loads((tmp_path / "verify.json").read_text())["rows"] == before
    try:
        import matplotlib  # noqa: F401
        assert str(tmp_path / "tflops_vs_n.png") in made and (tmp_path / "tflops_vs_n.png").stat().st_size > 0
    except ImportError:
        assert made == []


def test_planted_error_is_caught():
    def off_by_one_ulp(A, B, **kw):
        C = ozaki.matmul(A, B, **kw)
        if np.iscomplexobj(C):
            C.real.flat[0] = np.nextafter(C.real.flat[0], np.inf)
        else:
            C.flat[0] = np.nextafter(C.flat[0], np.inf)
        return C
    rows = verify.run("short", matmul=off_by_one_ulp, gpu=False)
    failed = {(r.case, r.check) for r in rows if r.status == "fail"}
    assert ("normal", "bit-for-bit") in failed
    assert ("complex normal", "bit-for-bit") in failed


def test_cli_exit_status(capsys):
    from ozaki.__main__ import main
    assert main(["verify", "--no-gpu", "--seed", "3"]) == 0
    assert "verify:" in capsys.readouterr().out
    assert main(["bench", "dgemv"]) == 2
