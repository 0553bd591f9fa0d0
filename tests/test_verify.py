"""The verification suite finds nothing wrong with ozaki, does find a planted error, and reports
(strict JSON, seed, plots); the command line (python -m ozaki) and its errors."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import ozaki
from ozaki import verify
from ozaki.__main__ import main


def _strict_json(path):
    def refuse(constant):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(path.read_text(), parse_constant=refuse)


def test_cli_verify_passes_and_reports(tmp_path, capsys):
    seed = int(np.random.SeedSequence().entropy % 2 ** 32)
    report = tmp_path / "report"
    assert main(["verify", "--no-gpu", "--seed", str(seed), "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert f"seed {seed}" in out and "verify: " in out and " 0 failed" in out
    data = _strict_json(report / "verify.json")                    # no bare NaN
    assert data["seed"] == seed and data["profile"] == "short"
    rows = data["rows"]
    assert [r for r in rows if r["status"] == "fail"] == []
    assert {r["check"] for r in rows} >= {"bit-for-bit", "max ulp", "DMMCH", "DMMCH sweep", "DMMCH vs spread",
                                          "L2 error"}
    assert {r["case"] for r in rows} >= {"complex normal", "complex wide", "fft N=64"}
    assert any(r["native"] is None for r in rows)                   # NaN became null
    md = (report / "verify.md").read_text()
    assert "| case |" in md and f"--seed {seed}" in md
    # written again later with benchmark results: the same rows, and the TFLOPS plot when matplotlib is there
    bench = tmp_path / "gemm.json"
    bench.write_text(json.dumps({"rows": [
        {"n": n, "family": "normal", "impl": impl, "num_moduli": nm, "tflops": t}
        for n, impl, nm, t in [(1024, "cublas_dgemm", None, 30.0), (2048, "cublas_dgemm", None, 55.0),
                               (1024, "ozaki_accurate", 16, 1.5), (2048, "ozaki_accurate", 16, 11.0)]]}))
    made = verify.rewrite_report(str(report), str(bench))
    again = _strict_json(report / "verify.json")
    assert again["rows"] == rows and again["seed"] == seed
    try:
        import matplotlib  # noqa: F401
        assert str(report / "tflops_vs_n.png") in made and (report / "tflops_vs_n.png").stat().st_size > 0
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


def _synthetic_rows(rng):
    rows = []
    for case in ("normal", "phi2"):
        native = float(rng.random())
        rows += [verify.Row(case, "accurate", str(m), "DMMCH sweep", float(rng.random()), native, "info")
                 for m in (8, 12, 16)]
    for spread in (0, 60):
        rows += [verify.Row(f"wide{spread}", mode, "auto", "DMMCH vs spread", float(rng.random()),
                            float(rng.random()), "info", spread=spread) for mode in ("accurate", "fast", "exact")]
    rows.append(verify.Row("normal", "exact", "auto", "bit-for-bit", 0, math.nan, "pass"))
    return rows


def test_report_plots_have_titles_and_legends(tmp_path, monkeypatch, rng):
    pytest.importorskip("matplotlib")
    seen = {}
    real_save = verify._save

    def spy(fig, directory, name):
        ax = fig.axes[0]
        seen[name] = (ax.get_title(), ax.get_legend(), ax.get_xlabel(), ax.get_ylabel())
        return real_save(fig, directory, name)
    monkeypatch.setattr(verify, "_save", spy)
    made = verify.write_report(_synthetic_rows(rng), str(tmp_path), seed=1234, profile="short")
    assert sorted(seen) == ["error_vs_moduli.png", "error_vs_spread.png"] and len(made) == 2
    for name, (title, legend, xlabel, ylabel) in seen.items():
        assert "seed 1234" in title and xlabel and ylabel, name
        labels = [t.get_text() for t in legend.get_texts()]
        assert any("native" in label for label in labels), (name, labels)
    assert len(seen["error_vs_moduli.png"][1].get_texts()) == 3        # two cases and the native key


def test_report_says_when_matplotlib_is_missing(tmp_path, monkeypatch, capsys, rng):
    monkeypatch.setitem(sys.modules, "matplotlib", None)             # import matplotlib fails
    assert verify.write_report(_synthetic_rows(rng), str(tmp_path), seed=5, profile="short") == []
    assert "matplotlib is not installed" in capsys.readouterr().err
    assert "matplotlib is not installed" in (tmp_path / "verify.md").read_text()
    assert _strict_json(tmp_path / "verify.json")["rows"][-1]["native"] is None


# --- the command line --------------------------------------------------------------------------

def test_help_lists_the_commands():
    done = subprocess.run([sys.executable, "-m", "ozaki", "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    for command in ("demo", "verify", "bench"):
        assert command in done.stdout
    done = subprocess.run([sys.executable, "-m", "ozaki", "demo", "--n", "-5"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "argument --n: must be a positive integer, got -5" in done.stderr


@pytest.mark.parametrize("argv, message", [
    (["demo", "--n", "-5"], "must be a positive integer, got -5"),
    (["demo", "--n", "0"], "must be a positive integer, got 0"),
    (["--n", "0"], "must be a positive integer, got 0"),                # the default command
    (["demo", "--backend", "tpu"], "invalid choice"),
    (["verify", "--seed", "-1"], "must be a non-negative integer"),
    (["verify", "--profile", "huge"], "invalid choice"),
    (["bench", "dgemv"], "invalid choice"),
    (["frobnicate"], "invalid choice"),
])
def test_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_help_exits_zero(capsys, monkeypatch):
    for argv in (["--help"], ["bench", "--help"], ["verify", "--help"], ["demo", "-h"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0, argv
    assert "gemm" in capsys.readouterr().out
    # the benchmarks' own help, also for bench/fft.py (which imports cupy) on a machine without CuPy
    monkeypatch.setitem(sys.modules, "cupy", None)
    for name in ("fft", "gemm", "zgemm"):
        with pytest.raises(SystemExit) as e:
            main(["bench", name, "--help"])
        assert e.value.code == 0
        out = capsys.readouterr().out
        assert f"python -m ozaki bench {name}" in out and "--sizes" in out
    assert sys.modules["cupy"] is None                                  # the stand-in is gone again


def test_demo_gpu_without_cupy(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert main(["demo", "--backend", "gpu"]) == 2
    err = capsys.readouterr().err
    assert "--backend gpu" in err and "CuPy" in err and "cuda13" in err and "Traceback" not in err


def test_bench_forwarding(monkeypatch, capsys):
    import bench.gemm
    calls = []
    monkeypatch.setattr(bench.gemm, "main", lambda argv: calls.append(list(argv)))
    assert main(["bench", "zgemm", "--sizes", "64"]) == 0
    assert main(["bench", "gemm", "--modes", "exact"]) == 0
    assert calls == [["--families", "complex", "--no-emulated", "--sizes", "64"], ["--modes", "exact"]]


def test_bench_errors(monkeypatch, capsys):
    from ozaki import __main__ as cli
    monkeypatch.setitem(cli.BENCHMARKS, "nothing", ("no_such_benchmark_module", [], "not written"))
    assert main(["bench", "nothing"]) == 2
    assert "bench/no_such_benchmark_module.py is not in the source tree" in capsys.readouterr().err
    assert main(["bench"]) == 2
    assert "needs a benchmark name" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "bench", None)                     # no source tree on the path
    assert main(["bench", "gemm"]) == 2
    assert "run it from a checkout" in capsys.readouterr().err


def test_demo_runs_and_reports_the_suite(monkeypatch, capsys):
    seen = {}

    def fake_run(profile, gpu, seed):
        seen.update(profile=profile, gpu=gpu, seed=seed)
        return [verify.Row("normal", "exact", "auto", "bit-for-bit", float(status == "fail"), math.nan, status)
                for status in rows_status]
    monkeypatch.setattr(verify, "run", fake_run)
    rows_status = ["pass", "pass"]
    assert main(["demo", "--n", "12", "--backend", "cpu", "--seed", "4"]) == 0
    out = capsys.readouterr().out
    assert "seed 4" in out and "ozaki exact" in out and "2 passed, 0 failed" in out
    assert seen == {"profile": "short", "gpu": False, "seed": 4}
    rows_status = ["pass", "fail"]
    assert main(["--n", "8", "--backend", "cpu"]) == 1
    assert "FAILED normal exact bit-for-bit" in capsys.readouterr().out
