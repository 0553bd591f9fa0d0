"""The floors of an exact complex FFT as this design runs it, counted on the CPU (no GPU):
each axis a pass of unfused kernels (the data's residues, the int8 GEMMs of the residues,
the CRT epilogue, the scans and layout copies), each kernel at best at its roof (bytes at
the copy rate, int8 operations at the tensor cores' rate, the epilogue's instructions at
the SMs' issue rate), the kernels one after another.  Set beside cuFFT's time it says
which targets of the FFT issue the design can reach at all, and which bound stops it.

    python -m bench.fft_floors                           # issue 16's cubes and batch, H100 and H200
    python -m bench.fft_floors --card h100 --measured bench/results/2026-12-07-8b1f31d-h100/fft_table.json \\
        bench/results/2026-12-07-8b1f31d-h100/fft_1024.json

Bytes a point a pass (complex, m moduli, counted from what each kernel reads and writes):
the residue pass reads 16 and writes 3 m (Re, Im and Karatsuba's sums); the GEMMs read
those 3 m and write 3 m (int8 residues of the three products); the epilogue reads 3 m and
writes 16; scan_rows, row_specials and the zero signs read 16 each; a block of the result
is copied into place (32); axes other than the last go through tiled transposes (32).
int8 operations a point a pass: 2 K 3 m, K the product's inner length (N, or N / 4 with the
quarter turns).  The epilogue's instructions an output are its SASS (bench.sass: the fully
unrolled kernel, complex, one slice pair of int8 residues, 4 blocks; ptxas 13.0), its
measured rate in run 8b1f31d 31 T thread-instructions a second of the H100's 33.4.  "fused"
is the optimistic floor of a stage kept on chip (fused_floor).
"""

import argparse
import json

# Roofs a second.  H200: the copy rate and the int8 GEMM rate measured on it (DESIGN.md);
# H100: the HBM3 specification (its copy rate not measured here) and the residue GEMM's
# rate in fftn 1024^3 (431 ms for 4.9e14 operations, run 8b1f31d).  Issue: 132 SMs, four
# schedulers of one warp instruction a cycle each, 32 threads, at 1.98 GHz.
CARDS = {"h200": {"copy": 4.17e12, "int8": 1.3e15, "issue": 132 * 4 * 32 * 1.98e9},
         "h100": {"copy": 3.35e12, "int8": 1.15e15, "issue": 132 * 4 * 32 * 1.98e9}}

# SASS instructions an output of the complex epilogue (one slice pair of int8 residues, 4
# blocks, byte conversions by I2F), per moduli count: (one product, interleaved quarter turns).
EPILOGUE_INSTRUCTIONS = {16: (1192, 1400), 25: (1864, 1960)}
# ... and with the CRT sums on the tensor cores (epilogue.cu CRT_MMA, NEW_KERNELS epilogue_mma):
# the loop body an output (both parts), ptxas 13.0, 69c1858, against 1,061 / 1,268 and 1,729 /
# 1,826 for the float64 sums' loop bodies (--epilogue mma).
EPILOGUE_INSTRUCTIONS_MMA = {16: (570, 593), 25: (813, 847)}

# issue 16's shapes and cuFFT's times in run 8b1f31d (H100, ms) and s18a (H200)
CUFFT_MS = {"h100": {"fftn 256^3": 0.608, "fftn 512^3": 4.55, "fftn 1024^3": 36.35, "batch 4096x1024": 0.065},
            "h200": {"fftn 256^3": 0.456, "fftn 512^3": 3.35, "fftn 1024^3": 31.65, "batch 4096x1024": 0.056}}


def pass_bytes(m, transposed):
    """{kernel: bytes a point} of one axis's pass at m moduli (module docstring)."""
    b = {"residues": 16 + 3 * m, "gemm": 6 * m, "epilogue": 3 * m + 16, "scans": 48, "copies": 32}
    if transposed:
        b["transposes"] = 32
    return b


def int8_ops(m, K):
    """int8 operations a point of a complex product of inner length K at m moduli (three
    Karatsuba products)."""
    return 2 * K * 3 * m


def axes(shape):
    """(points, length, transposed) of each pass of a transform of ``shape``: an n-D
    shape's every axis (all but the last transposed); "BxN" a batch of N-point rows."""
    points = 1
    for n in shape:
        points *= n
    return [(points, n, i != len(shape) - 1) for i, n in enumerate(shape)]


def floors(passes, m, card, quarter=False, instructions=None):
    """{kernel: seconds} at the card's roofs for the passes (axes()), each kernel the slower
    of its bytes and its arithmetic; ``quarter``: the products' inner length N / 4."""
    roof = CARDS[card]
    t = {}
    for points, n, transposed in passes:
        k = n // 4 if quarter else n
        per = instructions or EPILOGUE_INSTRUCTIONS[m][1 if quarter else 0]
        for kernel, b in pass_bytes(m, transposed).items():
            s = points * b / roof["copy"]
            if kernel == "gemm":
                s = max(s, points * int8_ops(m, k) / roof["int8"])
            elif kernel == "epilogue":
                s = max(s, points * per / roof["issue"])
            t[kernel] = t.get(kernel, 0.0) + s
    return t


def fused_floor(passes, m, card, quarter=True, instructions=None):
    """Seconds of the same passes as one kernel each that keeps the residues on chip (the data
    read and written once, 32 bytes a point, and the scans' 48), its int8 products and its
    epilogue's instructions overlapping perfectly: the slowest of the three, a pass."""
    roof = CARDS[card]
    total = 0.0
    for points, n, _ in passes:
        per = instructions or EPILOGUE_INSTRUCTIONS[m][1 if quarter else 0]
        total += points * max(80 / roof["copy"], int8_ops(m, n // 4 if quarter else n) / roof["int8"],
                              per / roof["issue"])
    return total


SHAPES = {"fftn 256^3": (256,) * 3, "fftn 512^3": (512,) * 3, "fftn 1024^3": (1024,) * 3,
          "batch 4096x1024": (4096, 1024)}


def _batch_passes(shape):
    rows, n = shape
    return [(rows * n, n, False)]


def table(card, m, measured=None, epilogue="float64"):
    """Rows (shape, floors one product, quarter turns, the fused quarter-turn floor, cuFFT,
    measured) in ms; ``epilogue`` "mma": the CRT sums on the tensor cores' instruction counts."""
    counts = (EPILOGUE_INSTRUCTIONS_MMA if epilogue == "mma" else EPILOGUE_INSTRUCTIONS)[m]
    rows = []
    for name, shape in SHAPES.items():
        passes = _batch_passes(shape) if name.startswith("batch") else axes(shape)
        one, quarter = (floors(passes, m, card, q, counts[q]) for q in (False, True))
        rows.append((name, {k: v * 1e3 for k, v in one.items()}, {k: v * 1e3 for k, v in quarter.items()},
                     fused_floor(passes, m, card, instructions=counts[1]) * 1e3, CUFFT_MS[card][name],
                     (measured or {}).get(name)))
    return rows


def measured_rows(path):
    """(card, {shape name: ozaki ms}) of a bench.fft JSON file (complex cubes and batches); the
    card from its meta's device name (None if neither H100 nor H200)."""
    with open(path) as f:
        data = json.load(f)
    rows, device = data["rows"], data.get("meta", {}).get("device", "")
    card = next((c for c in CARDS if c.upper() in device), None)
    out = {}
    for r in rows:
        shape = r["shape"]
        if r.get("kind") == "batch of fft":
            out[f"batch {shape[0]}x{shape[1]}"] = r["ozaki_ms"]
        elif len(shape) == 3 and "kind" not in r:
            out[f"fftn {shape[0]}^3"] = r["ozaki_ms"]
    return card, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--card", choices=sorted(CARDS), nargs="*", default=sorted(CARDS))
    ap.add_argument("--moduli", type=int, choices=sorted(EPILOGUE_INSTRUCTIONS), default=25,
                    help="exact mode's count for 1024-point products (plans.product_roots): 25")
    ap.add_argument("--epilogue", choices=("float64", "mma"), default="float64",
                    help="the CRT sums' instruction counts: float64 FMAs, or on the tensor cores (epilogue_mma)")
    ap.add_argument("--measured", nargs="*", default=[],
                    help="bench.fft JSON files: their times beside the floors of their card (meta's device)")
    a = ap.parse_args(argv)
    measured = {}
    for path in a.measured:
        card, rows = measured_rows(path)
        measured.setdefault(card, {}).update(rows)
    for card in a.card:
        print(f"{card}: floors (ms) at {CARDS[card]['copy'] / 1e12:.2f} TB/s, {CARDS[card]['int8'] / 1e15:.2f} POPS "
              f"int8, {CARDS[card]['issue'] / 1e12:.1f} T instructions/s; {a.moduli} moduli, {a.epilogue} CRT sums")
        print(f"{'transform':>16} {'cuFFT':>7} {'one product':>12} {'x cuFFT':>8} {'quarter':>9} {'x cuFFT':>8}"
              f" {'fused':>8} {'x cuFFT':>8} {'measured':>9}  the largest parts of one product's floor")
        for name, one, quarter, fused, cufft, got in table(card, a.moduli, measured.get(card), a.epilogue):
            top = ", ".join(f"{k} {v:.1f}" for k, v in sorted(one.items(), key=lambda kv: -kv[1])[:3])
            print(f"{name:>16} {cufft:7.3f} {sum(one.values()):12.2f} {sum(one.values()) / cufft:7.1f}x "
                  f"{sum(quarter.values()):9.2f} {sum(quarter.values()) / cufft:7.1f}x {fused:8.2f} "
                  f"{fused / cufft:7.1f}x {'-' if got is None else f'{got:.2f}':>9}  {top}")


if __name__ == "__main__":
    main()
