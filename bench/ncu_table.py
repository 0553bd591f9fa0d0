"""Nsight Compute's CSV (``ncu --csv --metrics ...``, one row a kernel and metric) as a
table a kernel: duration, DRAM bytes read and written, warp instructions executed,
registers, and the SM and memory throughput in per cent of peak.

    python -m bench.ncu_table ncu_stack_4096x64.txt [--outputs N]

``--outputs``: the call's outputs (e.g. 4096 * 64 * 64 for the stack), to print each
kernel's bytes and thread instructions an output beside.  Lines before the CSV header
(the program's own output, ``==PROF==`` notes) are skipped.
"""

import argparse
import csv
import io
from collections import defaultdict

COLUMNS = [  # (metric, heading, scale)
    ("gpu__time_duration.sum", "us", 1e-3),
    ("dram__bytes_read.sum", "read MB", 1e-6),
    ("dram__bytes_write.sum", "write MB", 1e-6),
    ("smsp__inst_executed.sum", "warp inst M", 1e-6),
    ("launch__registers_per_thread", "regs", 1),
    ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %", 1),
    ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "mem %", 1),
]
UNIT_SCALE = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9,
              "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}


def parse(text):
    """{kernel name: {metric: summed value}} and the launches of each name."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise ValueError("no Nsight Compute CSV header (a line starting with \"ID\") in the input")
    totals = defaultdict(lambda: defaultdict(float))
    launches = defaultdict(set)
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        name = row.get("Kernel Name", "")[:60]
        metric, value = row.get("Metric Name"), row.get("Metric Value", "").replace(",", "")
        try:
            v = float(value)
        except ValueError:
            continue
        v *= UNIT_SCALE.get(row.get("Metric Unit", ""), 1)
        launches[name].add(row.get("ID"))
        if metric in ("launch__registers_per_thread",) or metric.endswith("pct_of_peak_sustained_elapsed"):
            # per launch, not additive: the largest of the name's launches
            totals[name][metric] = max(totals[name][metric], v)
        else:
            totals[name][metric] += v
    return totals, {k: len(v) for k, v in launches.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--outputs", type=float, default=None)
    a = ap.parse_args(argv)
    with open(a.csv) as f:
        totals, launches = parse(f.read())
    order = sorted(totals, key=lambda k: -totals[k]["gpu__time_duration.sum"])
    head = f"{'kernel':60s} {'n':>3s} " + " ".join(f"{h:>11s}" for _, h, _ in COLUMNS)
    if a.outputs:
        head += f" {'B/out':>7s} {'inst/out':>8s}"
    print(head)
    for name in order + ["total"]:
        t = totals[name] if name != "total" else {
            m: sum(totals[k][m] for k in order) for m, _, _ in COLUMNS[:4]}
        cells = " ".join(f"{t.get(m, 0) * s:11.2f}" for m, _, s in COLUMNS)
        line = f"{name:60s} {launches.get(name, 0):3d} {cells}"
        if a.outputs:
            nbytes = t.get("dram__bytes_read.sum", 0) + t.get("dram__bytes_write.sum", 0)
            line += f" {nbytes / a.outputs:7.1f} {32 * t.get('smsp__inst_executed.sum', 0) / a.outputs:8.0f}"
        print(line)


if __name__ == "__main__":
    main()
