"""The residue pass alone (kernels/residues.cu): one operand's int8 residues under accurate
mode's plan, for several moduli counts and builds of the kernel's loop over the moduli.

    python -m bench.residue_pass --n 16384 --moduli 14 15 16 --unroll -1 0 1 2

``--unroll -1`` is the library's choice (cupy_backend.RESIDUE_UNROLL = None), 0 the loop fully
unrolled, N unrolled N moduli at a time; each row names the build's registers.  Every build must
give the same residues as the first (checked).  CUDA events, median after warm-up; the rate
counts the float64 read and the residues written.
"""

import argparse

import numpy as np

from bench import common


def run(n, moduli, unrolls, repeats):
    import cupy
    from ozaki import scheme
    from ozaki.backends import cupy_backend as be
    rng = np.random.default_rng(3)
    x = cupy.asarray(rng.standard_normal((n, n)))
    rows = []
    previous = be.RESIDUE_UNROLL                # OZAKI_RESIDUE_UNROLL's, put back after the sweep
    try:
        for m in moduli:
            plan = scheme.plan_accurate(cupy, x, x, m, be)
            first = None
            for u in unrolls:
                be.RESIDUE_UNROLL = None if u < 0 else u
                call = lambda: be.residues(x, plan.beta_a, None, m, plan.nearest)       # noqa: E731
                out = call()
                same = True if first is None else bool(cupy.array_equal(out, first))
                first = out if first is None else first
                ms, _ = common.time_gpu(call, warmup=2, repeats=repeats)
                gbs = (x.nbytes + out.nbytes) / ms / 1e6
                kern = be._residues_kernel(m, be._wide_digits(m, None, n), be._device(), be.RESIDUE_UNROLL)
                regs = be._num_regs(kern)
                rows.append({"n": n, "moduli": m, "unroll": u, "registers": regs, "ms": ms, "GB/s": gbs, "same": same})
                print(f"n {n} moduli {m:2d} unroll {('auto' if u < 0 else u or 'full'):>4} ({regs:3d} registers): "
                      f"{ms:7.3f} ms {gbs:6.0f} GB/s{'' if same else '  RESIDUES DIFFER'}", flush=True)
    finally:
        be.RESIDUE_UNROLL = previous
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--moduli", type=int, nargs="+", default=[14, 15, 16])
    ap.add_argument("--unroll", type=int, nargs="+", default=[-1, 0, 1, 2])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default="bench/results/residue_pass.json")
    a = ap.parse_args(argv)
    rows = run(a.n, a.moduli, a.unroll, a.repeats)
    common.write_json(a.out, {"meta": common.meta(), "rows": rows})


if __name__ == "__main__":
    main()
