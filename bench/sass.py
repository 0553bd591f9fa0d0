"""One kernel build's SASS, counted on the CPU (no GPU): registers, spills, instructions by
opcode, and how far ahead of their first use its global loads are issued.

    python -m bench.sass epilogue.cu --moduli 25 --crt -D PROD_T="signed char" SINGLE_PAIR COMPLEX \\
        STACKED INTERLEAVED=4
    python -m bench.sass epilogue.cu --moduli 25 --crt -D PROD_T="signed char" SINGLE_PAIR COMPLEX \\
        EPILOGUE_BLOCKS=4

The source is the kernel file of ozaki/backends/kernels after the defines and the moduli's
constant tables (kernel_tables.constant_tables, as cupy_backend._kernel builds it); with
--crt, LP and LACC default to the CRT's limbs (one slice pair).  Needs nvcc (CUDA 13, the GPU
machine's), cuobjdump and nvdisasm: on PATH, or from pip's nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm (nvidia/cu13/bin; `pip download` them and add that folder to PATH).
The counts are static (every instruction of the kernel once, loops and tails included): for
a fully unrolled loop over the moduli they are per output; the lead is what ran the
epilogue 19-24% slower in run 98cb4f1 with 16% fewer instructions (bench/RESULTS.md).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import Counter

KERNELS = os.path.join(os.path.dirname(__file__), "..", "ozaki", "backends", "kernels")
INSTRUCTION = re.compile(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;")


def instructions(sass):
    """The instructions of cuobjdump -sass text, predicates dropped, in order."""
    out = []
    for line in sass.splitlines():
        m = INSTRUCTION.match(line)
        if m:
            ins = m.group(1)
            out.append(ins.split(None, 1)[1] if ins.startswith("@") else ins)
    return out


def opcode(ins):
    """The opcode's base name (IMAD.WIDE kept apart: an address's 64-bit multiply)."""
    op = ins.split()[0]
    return op.split(".")[0] + (".WIDE" if ".WIDE" in op else "")


def load_leads(ins):
    """For each global load of at most 32 bits, the instructions from it to the first that
    reads its destination register (a load never read is left out)."""
    leads = []
    for i, s in enumerate(ins):
        op = s.split()[0]
        if not op.startswith("LDG") or ".64" in op or ".128" in op:
            continue
        dst = re.match(r"\S+\s+(R\d+),", s)
        if not dst:
            continue
        reg = re.compile(r"\b" + dst.group(1) + r"\b")
        for j in range(i + 1, len(ins)):
            operands = ins[j].split(None, 1)[1] if " " in ins[j] else ""
            # a later load's destination is written, not read: look past it
            reads = operands.split(",", 1)[1] if ins[j].startswith(("LDG", "LDS", "LDC")) else operands
            if reg.search(reads):
                leads.append(j - i)
                break
    return leads


def summary(sass):
    """{instructions, opcodes (Counter), loads, lead_mean, lead_median} of SASS text."""
    ins = instructions(sass)
    leads = load_leads(ins)
    return {"instructions": len(ins), "opcodes": Counter(opcode(s) for s in ins), "loads": len(leads),
            "lead_mean": statistics.mean(leads) if leads else None,
            "lead_median": statistics.median(leads) if leads else None}


def resources(report):
    """(registers, (spill store bytes, spill load bytes)) of ptxas's -v report of one kernel."""
    regs = re.findall(r"Used (\d+) registers", report)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
    return int(regs[-1]), tuple(int(v) for v in spills[-1]) if spills else (0, 0)


def tool(name):
    """A CUDA tool's path: on PATH, else under pip's nvidia-cuda-<name> (nvidia/cu13/bin);
    None if neither."""
    found = shutil.which(name)
    if found:
        return found
    for root in sys.path:
        path = os.path.join(root, "nvidia", "cu13", "bin", name)
        if os.path.isfile(path):
            return path
    return None


def source(kernel, moduli, crt, defines):
    """The kernel's source as cupy_backend._kernel compiles it (defines, tables, file; with
    CRT_MMA among the defines, the CRT digits' tables too)."""
    from ozaki.backends.kernel_tables import constant_tables
    from ozaki.crt import crt_constants
    d = dict(defines)
    if moduli:
        d.setdefault("NMOD", str(moduli))
        if crt:
            L = crt_constants(moduli).L
            d.setdefault("LP", str(L))
            d.setdefault("LACC", str(L))
    header = "".join(f"#define {k} {v}\n" for k, v in d.items())
    with open(os.path.join(KERNELS, kernel)) as f:
        return header + (constant_tables(moduli, crt, crt and "CRT_MMA" in d) if moduli else "") + f.read()


def compile_cubin(text, arch="sm_90a"):
    """(ptxas's -v report, the cubin's bytes) of the source ``text`` (source()'s, defines and
    tables in it), built by nvcc for ``arch`` as bench.sass counts it; needs nvcc only."""
    nvcc = tool("nvcc")
    if nvcc is None:
        raise RuntimeError("bench.sass needs nvcc (CUDA 13)")
    with tempfile.TemporaryDirectory() as tmp:
        cu, cubin = os.path.join(tmp, "k.cu"), os.path.join(tmp, "k.cubin")
        with open(cu, "w") as f:
            f.write(text)
        report = subprocess.run([nvcc, f"-arch={arch}", "-std=c++17", f"-I{os.path.abspath(KERNELS)}", "-cubin",
                                 "-Xptxas", "-v", "-o", cubin, cu], capture_output=True, text=True, check=True).stderr
        with open(cubin, "rb") as f:
            return report, f.read()


def build(text, arch="sm_90a"):
    """(ptxas's report, cuobjdump -sass text) of the source ``text``."""
    nvcc, dump, disasm = tool("nvcc"), tool("cuobjdump"), tool("nvdisasm")
    if None in (nvcc, dump, disasm):
        raise RuntimeError("bench.sass needs nvcc, cuobjdump and nvdisasm "
                           "(pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    env = dict(os.environ, PATH=os.path.dirname(disasm) + os.pathsep + os.environ.get("PATH", ""))
    report, binary = compile_cubin(text, arch)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        with open(cubin, "wb") as f:
            f.write(binary)
        sass = subprocess.run([dump, "-sass", cubin], capture_output=True, text=True, check=True, env=env).stdout
    return report, sass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernel", help="a file of ozaki/backends/kernels, e.g. epilogue.cu")
    ap.add_argument("--moduli", type=int, default=0, help="NMOD and its constant tables (0: none)")
    ap.add_argument("--crt", action="store_true", help="the CRT tables too (and LP, LACC by default)")
    ap.add_argument("-D", "--define", nargs="*", default=[], metavar="NAME[=VALUE]")
    ap.add_argument("--top", type=int, default=12, help="opcodes listed")
    a = ap.parse_args(argv)
    defines = [(d.split("=", 1)[0], d.split("=", 1)[1] if "=" in d else "1") for d in a.define]
    report, sass = build(source(a.kernel, a.moduli, a.crt, defines))
    regs, spills = resources(report)
    s = summary(sass)
    print(f"registers {regs}; spill stores/loads {spills[0]}/{spills[1]} bytes")
    print(f"{s['instructions']} instructions: "
          + ", ".join(f"{op} {n}" for op, n in s["opcodes"].most_common(a.top)))
    if s["loads"]:
        print(f"{s['loads']} loads of <= 32 bits: lead to first use mean {s['lead_mean']:.1f}, "
              f"median {s['lead_median']}")


if __name__ == "__main__":
    main()
