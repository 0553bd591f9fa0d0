"""Render bench/RESULTS.md tables from a results folder (gemm*.json, steps.json, verify report).

    python -m bench.report bench/results/<run>   # prints Markdown
"""

import glob
import json
import os
import sys


def gemm_table(rows):
    out = ["| n | inputs | implementation | moduli | ms | TFLOPS | vs native | DMMCH ratio |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['n']} | {r['family']} | {r['impl']} | {r.get('num_moduli') or '-'} | {r['ms']:.2f} | "
                   f"{r['tflops']:.1f} | {r['ratio']:.2f}x | {r['dmmch']:.3g} |")
    return "\n".join(out)


def steps_table(rows):
    names = list(rows[0]["ms"])
    out = ["| step | " + " | ".join(f"n={r['n']} (ms)" for r in rows) + " |",
           "|---|" + "---|" * len(rows)]
    for k in names:
        out.append(f"| {k} | " + " | ".join(f"{r['ms'][k]:.2f}" for r in rows) + " |")
    out.append("| int8 GEMM rate (TOPS) | " + " | ".join(f"{r['int8_tops']:.0f}" for r in rows) + " |")
    out.append("| residues, bytes/time (GB/s) | " + " | ".join(f"{r['residues_GBps']:.0f}" for r in rows) + " |")
    out.append("| epilogue, bytes/time (GB/s) | " + " | ".join(f"{r['epilogue_GBps']:.0f}" for r in rows) + " |")
    return "\n".join(out)


def main(folder):
    parts = []
    for path in sorted(glob.glob(os.path.join(folder, "*gemm*.json"))):
        with open(path) as f:
            d = json.load(f)
        m = d["meta"]
        parts.append(f"### {os.path.basename(path)} ({m['date']}, {m['device']}, commit {m['commit']})\n\n"
                     + gemm_table(d["rows"]))
    path = os.path.join(folder, "steps.json")
    if os.path.exists(path):
        with open(path) as f:
            d = json.load(f)
        parts.append(f"### time split, mode {d['rows'][0]['mode']}, {d['rows'][0]['num_moduli']} moduli\n\n"
                     + steps_table(d["rows"]))
    print("\n\n".join(parts))


if __name__ == "__main__":
    main(sys.argv[1])
