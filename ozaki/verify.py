"""The accuracy verification suite: ``python -m ozaki verify`` (or ``ozaki.verify.run``).

Runs every GEMM mode on generated input families against the exact-rational
references of ozaki.reference, on the backends present, and checks each
promise:

    bit-for-bit   every mode equals RN(A'B' 2**(beta_i + beta_j)) for its own
                  scaled integers (``exact``: the correctly rounded exact product)
    accuracy      the default ``accurate``/``fast`` counts are no worse than
                  native float64 matmul in the DMMCH ratio on the families the
                  defaults are promised for (N(0,1), uniform, phi <= 2)
    backends      the GPU returns the CPU's bits (when a CUDA device is present)

Cases outside a promise (wider spreads in the truncating modes, moduli sweeps)
are reported with status ``info``.  Complex GEMM (exact bits per part, the
default's DMMCH) and the FFT (L2 error against an mpmath DFT, vs numpy.fft)
are checked too.  The exit status is non-zero when any check fails.
"""

import dataclasses
import json
import math
import os
import sys
import time

import numpy as np

from . import reference, scheme
from .gemm import SUBSTRATES
from .backends import numpy_backend

PROFILES = {
    # size of the matrices checked bit for bit, size for accuracy, spreads, moduli sweep
    "short": dict(exact_size=12, acc_m=24, acc_k=256, spreads=(0, 8, 60, 400), sweep=(8, 12, 14, 16, 17, 20),
                  samples=24, gpu_size=256, fft_sizes=(64, 360)),
    "full": dict(exact_size=32, acc_m=64, acc_k=2048, spreads=(0, 4, 8, 16, 30, 60, 120, 400, 1000),
                 sweep=tuple(range(8, 23)), samples=40, gpu_size=1024, fft_sizes=(64, 360, 1024, 4096)),
}


@dataclasses.dataclass
class Row:
    case: str
    mode: str
    moduli: str
    check: str
    figure: float          # worst ulp error, DMMCH ratio, or count of differing bits
    native: float          # native float64's figure on the same inputs (nan if none)
    status: str            # pass / fail / info / n/a
    backend: str = "cpu"
    spread: float = math.nan


def families(rng, m, k, n, spread):
    """Named input families; ``spread``: the exponent range of the wide family."""
    def pair(gen):
        return gen((m, k)), gen((k, n))
    out = {
        "normal": pair(rng.standard_normal),
        "uniform": pair(lambda s: rng.random(s) - 0.5),
        "phi1": pair(lambda s: (rng.random(s) - 0.5) * np.exp(rng.standard_normal(s))),
        "phi2": pair(lambda s: (rng.random(s) - 0.5) * np.exp(2 * rng.standard_normal(s))),
    }
    out[f"wide{spread}"] = pair(lambda s: _wide(rng, s, spread))
    A = rng.standard_normal((m, k)) * np.exp2(rng.integers(-30, 30, (m, k)).astype(float))
    B = rng.standard_normal((k, n))
    h = k // 2
    A[:, h:2 * h] = A[:, :h]
    B[h:2 * h] = -B[:h]
    out["cancellation"] = (A, B)
    out["subnormal"] = pair(lambda s: rng.standard_normal(s) * 2.0 ** -1050)
    A, B = pair(rng.standard_normal)
    for X in (A, B):
        mask = rng.random(X.shape) < 0.1
        X[mask] = rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0], mask.sum())
    out["specials"] = (A, B)
    return out


PROMISED = ("normal", "uniform", "phi1", "phi2")


def _same_bits(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    return int(np.sum(x.view(np.int64) != y.view(np.int64)))


def _plan(A, B, mode, nm):
    return scheme.make_plan(np, np.ascontiguousarray(A), np.ascontiguousarray(B.T), mode, nm, numpy_backend)


def _progress(items, desc):
    try:
        from tqdm import tqdm
        return tqdm(items, desc=desc, leave=False, file=sys.stderr)
    except ImportError:
        return items


def check_bits(rng, p, matmul):
    """Bit-for-bit rows: every family and mode against the exact-rational reference."""
    rows = []
    s = p["exact_size"]
    fams = families(rng, s, s + 3, s - 2, 300)
    for name, (A, B) in _progress(list(fams.items()), "bit-for-bit"):
        ref_exact = reference.exact_matmul(A, B)
        finite = np.isfinite(A).all() and np.isfinite(B).all()
        results = {}
        for mode in ("fast", "accurate", "exact"):
            C = results[mode] = matmul(A, B, mode=mode)
            plan = _plan(A, B, mode, None) if finite else None
            if mode == "exact":
                ref = ref_exact
            elif finite:
                ref = reference.scaled_matmul(A, B, plan.beta_a, plan.beta_b, nearest=plan.nearest)
            else:        # the special entries are IEEE's whatever the scaling
                special = ~np.isfinite(ref_exact)
                ref = np.where(special, ref_exact, C)
            m = str(plan.num_moduli if finite else "-")
            for substrate in SUBSTRATES:      # numpy arrays here: the CPU backend runs every substrate
                Cs = C if substrate == "int8" else matmul(A, B, mode=mode, substrate=substrate)
                diff = _same_bits(Cs, ref)
                check = "bit-for-bit" + ("" if substrate == "int8" else f" ({substrate})")
                rows.append(Row(name, mode, m, check, diff, math.nan, "pass" if diff == 0 else "fail"))
        # ulp errors where the exact value is finite (its terms then hold no NaN/inf)
        A0, B0 = np.where(np.isfinite(A), A, 0), np.where(np.isfinite(B), B, 0)
        fin = np.isfinite(ref_exact)
        worst = float(np.max(reference.ulp_error(np.where(fin, results["exact"], 0), A0, B0)[fin.ravel()],
                             initial=0.0))
        with np.errstate(all="ignore"):
            native = A @ B
        fin &= np.isfinite(native)
        nat = float(np.max(reference.ulp_error(np.where(fin, native, 0), A0, B0)[fin.ravel()], initial=0.0))
        rows.append(Row(name, "exact", "auto", "max ulp", worst, nat, "pass" if worst <= 0.5 else "fail"))
    return rows


def _sampled(rng, m, n, count):
    return [(int(i), int(j)) for i, j in zip(rng.integers(0, m, count), rng.integers(0, n, count))]


def check_accuracy(rng, p, matmul):
    """DMMCH rows: defaults vs native on the promised families; spreads and sweeps as info."""
    rows = []
    m, k = p["acc_m"], p["acc_k"]
    entries = _sampled(rng, m, m, p["samples"])
    fams = families(rng, m, k, m, 8)
    for name in _progress(PROMISED, "accuracy"):
        A, B = fams[name]
        native = reference.dmmch_ratio(A @ B, A, B, entries)
        for mode in ("accurate", "fast"):
            ours = reference.dmmch_ratio(matmul(A, B, mode=mode), A, B, entries)
            rows.append(Row(name, mode, str(scheme.default_num_moduli(mode, k)), "DMMCH", ours, native,
                            "pass" if ours <= max(native, 0.5) else "fail"))
        for nm in p["sweep"]:
            ours = reference.dmmch_ratio(matmul(A, B, mode="accurate", num_moduli=nm), A, B, entries)
            rows.append(Row(name, "accurate", str(nm), "DMMCH sweep", ours, native, "info"))
    for spread in _progress(p["spreads"], "spreads"):
        A, B = families(rng, m, k, m, spread)[f"wide{spread}"]
        native = reference.dmmch_ratio(A @ B, A, B, entries)
        for mode in ("accurate", "fast", "exact"):
            ours = reference.dmmch_ratio(matmul(A, B, mode=mode), A, B, entries)
            # exact: its promise is the bits (checked on the sampled entries); the rest is information
            status = ("pass" if _exact_ok(matmul, A, B, entries) else "fail") if mode == "exact" else "info"
            rows.append(Row(f"wide{spread}", mode, "auto" if mode == "exact" else
                            str(scheme.default_num_moduli(mode, k)), "DMMCH vs spread", ours, native, status,
                            spread=spread))
        # certified: its promise is per entry, faithful; the figure is the sampled entries that are not
        C = matmul(A, B, mode="certified")
        unfaithful = sum(not reference.is_faithful(C[i, j], A[i], B[:, j]) for i, j in entries)
        rows.append(Row(f"wide{spread}", "certified", str(scheme.default_num_moduli("certified", k)),
                        "unfaithful entries", unfaithful, math.nan, "pass" if unfaithful == 0 else "fail",
                        spread=spread))
    return rows



def _exact_ok(matmul, A, B, entries):
    C = matmul(A, B, mode="exact")
    return _same_bits(C[tuple(np.array(entries).T)], reference.exact_matmul(A, B, entries)) == 0


def check_complex(rng, p, matmul):
    """Complex GEMM: exact mode bit for bit per part; the default accurate mode's DMMCH vs native."""
    rows = []
    s = p["exact_size"]
    for name, spread in (("complex normal", 0), ("complex wide", 60)):
        A = _wide(rng, (s, s + 3), spread) + 1j * _wide(rng, (s, s + 3), spread)
        B = _wide(rng, (s + 3, s - 2), spread) + 1j * _wide(rng, (s + 3, s - 2), spread)
        C = matmul(A, B, mode="exact")
        diff = sum(_same_bits(getattr(C, part), reference.exact_matmul(X, Y))
                   for part, (X, Y) in zip(("real", "imag"), reference.complex_as_real(A, B)))
        rows.append(Row(name, "exact", "auto", "bit-for-bit", diff, math.nan, "pass" if diff == 0 else "fail"))
    m, k = p["acc_m"], p["acc_k"]
    entries = _sampled(rng, m, m, p["samples"])
    A = rng.standard_normal((m, k)) + 1j * rng.standard_normal((m, k))
    B = rng.standard_normal((k, m)) + 1j * rng.standard_normal((k, m))
    C, N = matmul(A, B), A @ B
    ours = max(reference.dmmch_ratio(getattr(C, part), X, Y, entries)
               for part, (X, Y) in zip(("real", "imag"), reference.complex_as_real(A, B)))
    native = max(reference.dmmch_ratio(getattr(N, part), X, Y, entries)
                 for part, (X, Y) in zip(("real", "imag"), reference.complex_as_real(A, B)))
    rows.append(Row("complex normal", "accurate", str(scheme.default_num_moduli("accurate", 2 * k)), "DMMCH",
                    ours, native, "pass" if ours <= max(native, 0.5) else "fail"))
    return rows


def _wide(rng, shape, spread):
    return rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape).astype(float))


def check_fft(rng, p):
    """FFT: benchFFT L2 error of sampled bins against a 40-digit mpmath DFT, vs numpy.fft's."""
    from . import fft
    rows = []
    for N in p["fft_sizes"]:
        x = rng.random(N) - 0.5 + 1j * (rng.random(N) - 0.5)
        ks = sorted({0, 1, N // 2} | {int(v) for v in rng.integers(0, N, 8)})
        ref = reference.dft_bins(x, ks)
        ours = reference.l2_error(fft.fft(x), ref, ks)
        native = reference.l2_error(np.fft.fft(x), ref, ks)
        ok = ours <= max(native, 1e-17) and ours <= 1e-16
        rows.append(Row(f"fft N={N}", "exact", "auto", "L2 error", ours, native, "pass" if ok else "fail"))
    return rows


def check_backends(rng, p):
    """GPU vs CPU bits on the same inputs, every mode (only with a CUDA device)."""
    from .backends import gpu_available
    if not gpu_available():
        return []
    import cupy
    from . import matmul
    rows = []
    n = p["gpu_size"]
    for name, (A, B) in _progress(list(families(rng, n, n, n, 60).items()), "gpu vs cpu"):
        for mode in ("fast", "accurate", "exact"):
            cpu = matmul(A, B, mode=mode)
            gpu = cupy.asnumpy(matmul(cupy.asarray(A), cupy.asarray(B), mode=mode))
            diff = _same_bits(cpu, gpu)
            rows.append(Row(name, mode, "default", "gpu == cpu bits", diff, math.nan,
                            "pass" if diff == 0 else "fail", backend="cupy"))
    return rows


def fresh_seed():
    """A fresh random seed (an int, printed so that a run can be repeated with ``--seed``)."""
    return int(np.random.SeedSequence().entropy)


def run(profile="short", matmul=None, seed=None, gpu=True):
    """Run the suite; returns the rows.  ``matmul`` defaults to ozaki.matmul (tests pass others).
    ``seed``: the inputs' random seed (None: fresh and unrecorded; ``main`` draws and prints one)."""
    from . import matmul as ozaki_matmul
    matmul = matmul or ozaki_matmul
    p = PROFILES[profile]
    rng = np.random.default_rng(seed)
    rows = check_bits(rng, p, matmul) + check_accuracy(rng, p, matmul)
    if gpu:
        rows += check_backends(rng, p)
    rows += check_complex(rng, p, matmul) + check_fft(rng, p)
    from .linalg import verify_cases                 # the dense linear-algebra dwarf
    rows += [Row(**r) for r in verify_cases(profile, rng, gpu=gpu)]
    return rows


def format_table(rows, markdown=False):
    head = ["case", "mode", "moduli", "check", "ours", "native", "status", "backend"]
    body = [[r.case, r.mode, r.moduli, r.check, _fmt(r.figure), _fmt(r.native), r.status, r.backend]
            for r in rows]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(b) + " |" for b in body]
        return "\n".join(lines)
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:{w}s}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*b) for b in body])


def _fmt(x):
    if isinstance(x, float) and math.isnan(x):
        return "-"
    return f"{x:.3g}"


def _json_value(x):
    """JSON has no NaN or infinity: those become null (None), everything else stays."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _row_from_json(r):
    return Row(**{k: (math.nan if v is None and k in ("figure", "native", "spread") else v) for k, v in r.items()})


def write_report(rows, directory, bench_results=None, seed=None, profile=None):
    """verify.json (valid JSON: NaN as null), verify.md and plots (error vs moduli, error vs
    spread, TFLOPS vs n from a bench JSON); returns the plots written.  Without matplotlib
    the plots are skipped, and the message says so (stderr and verify.md)."""
    from . import __version__
    os.makedirs(directory, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "ozaki": __version__, "numpy": np.__version__,
            "profile": profile, "seed": seed}
    with open(os.path.join(directory, "verify.json"), "w") as f:
        json.dump({**meta, "rows": [{k: _json_value(v) for k, v in dataclasses.asdict(r).items()} for r in rows]},
                  f, indent=1, allow_nan=False, default=lambda o: _json_value(o.item()) if hasattr(o, "item") else str(o))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    failed = sum(r.status == "fail" for r in rows)
    counted = sum(r.status in ("pass", "fail") for r in rows)
    with open(os.path.join(directory, "verify.md"), "w") as f:
        f.write(f"# ozaki verify\n\nozaki {__version__}, numpy {np.__version__}, profile {profile}, "
                f"seed {seed} (repeat: `python -m ozaki verify --profile {profile} --seed {seed}`), "
                f"{meta['date']}: {counted - failed} passed, {failed} failed.\n\n")
        if plt is None:
            f.write("Plots skipped: matplotlib is not installed (pip install matplotlib).\n\n")
        f.write(format_table(rows, markdown=True) + "\n")
    if plt is None:
        print("verify: matplotlib is not installed: the report has no plots (pip install matplotlib)",
              file=sys.stderr)
        return []
    about = f"profile {profile}, seed {seed}" if seed is not None else f"profile {profile}"
    made = []
    sweep = [r for r in rows if r.check == "DMMCH sweep"]
    if sweep:
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for case in sorted({r.case for r in sweep}):
            rs = [r for r in sweep if r.case == case]
            line, = ax.semilogy([int(r.moduli) for r in rs], [max(r.figure, 1e-3) for r in rs], "o-", label=case)
            ax.axhline(rs[0].native, color=line.get_color(), ls="--", lw=0.8)
        ax.plot([], [], "k--", lw=0.8, label="native float64 (dashed, same colour)")
        ax.set_title(f"Accuracy vs moduli count, accurate mode\n({about})", fontsize=10)
        ax.set_xlabel("moduli (accurate mode)")
        ax.set_ylabel("DMMCH ratio (floored at 1e-3)")
        ax.legend(fontsize=8)
        made.append(_save(fig, directory, "error_vs_moduli.png"))
    spread = [r for r in rows if r.check == "DMMCH vs spread"]
    if spread:
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for mode in ("accurate", "fast", "exact"):
            rs = [r for r in spread if r.mode == mode]
            ax.semilogy([r.spread for r in rs], [max(r.figure, 1e-3) for r in rs], "o-", label=f"ozaki {mode}")
        rs = [r for r in spread if r.mode == "exact"]
        ax.semilogy([r.spread for r in rs], [max(r.native, 1e-3) for r in rs], "k--", label="native float64")
        ax.set_title(f"Accuracy vs exponent spread of the inputs\n({about})", fontsize=10)
        ax.set_xlabel("exponent spread s (entries N(0,1) times 2**U{-s..s})")
        ax.set_ylabel("DMMCH ratio (floored at 1e-3)")
        ax.legend(fontsize=8)
        made.append(_save(fig, directory, "error_vs_spread.png"))
    if bench_results and os.path.exists(bench_results):
        with open(bench_results) as f:
            bench = json.load(f)["rows"]
        fig, ax = plt.subplots(figsize=(6.4, 4.4))
        for impl in sorted({(r["impl"], r.get("num_moduli")) for r in bench if r["family"] == "normal"},
                           key=str):
            rs = sorted((r for r in bench if r["family"] == "normal" and (r["impl"], r.get("num_moduli")) == impl),
                        key=lambda r: r["n"])
            label = impl[0] + (f" m={impl[1]}" if impl[1] else "")
            ax.plot([r["n"] for r in rs], [r["tflops"] for r in rs], "o-", label=label)
        ax.set_xscale("log", base=2)
        ax.set_title(f"GEMM throughput, N(0,1) inputs\n({os.path.basename(bench_results)})", fontsize=10)
        ax.set_xlabel("n (square GEMM, N(0,1) inputs)")
        ax.set_ylabel("effective FP64 TFLOPS (2n^3/t)")
        ax.legend(fontsize=7)
        made.append(_save(fig, directory, "tflops_vs_n.png"))
    elif bench_results:
        print(f"verify: no benchmark results at {bench_results}: the report has no TFLOPS plot", file=sys.stderr)
    return made


def rewrite_report(directory, bench_results):
    """Write the report in ``directory`` again from its verify.json, now with bench results
    (the suite can run before the benchmarks whose TFLOPS it plots)."""
    with open(os.path.join(directory, "verify.json")) as f:
        report = json.load(f)
    rows = [_row_from_json(r) for r in report["rows"]]
    return write_report(rows, directory, bench_results, seed=report.get("seed"), profile=report.get("profile"))


def _save(fig, directory, name):
    path = os.path.join(directory, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def main(profile="short", report=None, bench_results=None, seed=None, gpu=True):
    seed = fresh_seed() if seed is None else seed
    print(f"verify: profile {profile}, seed {seed} (repeat with --seed {seed})", flush=True)
    rows = run(profile, seed=seed, gpu=gpu)
    print(format_table(rows))
    failed = [r for r in rows if r.status == "fail"]
    counted = [r for r in rows if r.status in ("pass", "fail")]
    print(f"verify: {len(counted) - len(failed)} passed, {len(failed)} failed (profile {profile}, seed {seed})")
    if report:
        made = write_report(rows, report, bench_results, seed=seed, profile=profile)
        print(f"verify: report in {report} (verify.json, verify.md" + "".join(", " + os.path.basename(p) for p in made)
              + ")")
    return 1 if failed else 0
