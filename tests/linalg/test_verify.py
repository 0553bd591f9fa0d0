"""verify_cases: passes on ozaki.linalg, and fails a planted error."""

import numpy as np

from ozaki.linalg import verify


def test_short_profile_passes():
    rows = verify.verify_cases("short", 20261203, gpu=False)
    assert rows and all(r["status"] == "pass" for r in rows), [r for r in rows if r["status"] != "pass"]
    assert {r["check"] for r in rows} == {"forward error", "bounds hold", "LU backward"}
    assert set(rows[0]) == {"case", "mode", "moduli", "check", "figure", "native", "status", "backend"}
    fe = [r for r in rows if r["check"] == "forward error" and r["case"].startswith("cond 1e+13")][0]
    assert fe["native"] > 1e3 * fe["figure"]


def test_a_planted_error_fails(monkeypatch):
    real = verify.solve

    def off(a, b, **kw):                              # one ulp off in one entry, bounds unchanged
        x, info = real(a, b, **kw)
        x = x.copy()
        x[0, 0] = np.nextafter(x[0, 0], np.inf) * (1 + 64 * np.finfo(float).eps)
        return x, info

    monkeypatch.setattr(verify, "solve", off)
    rows = verify.verify_cases("short", 1, gpu=False)
    assert any(r["status"] == "fail" and r["check"] == "bounds hold" for r in rows)
