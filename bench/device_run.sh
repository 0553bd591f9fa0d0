#!/usr/bin/env bash
# One call on the GPU machine: GPU tests, then the benchmarks; JSON under $OUT; a short table last.
# Usage (device tool): bash bench/device_run.sh [quick|full]
set -u
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
profile=${1:-full}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
python3 -m pytest -q -m gpu tests -x --junitxml="$OUT/gpu_tests.xml" 2>&1 | tail -25 | tee "$OUT/gpu_tests.txt"
if [ "$profile" = quick ]; then
  python3 -m bench.gemm --sizes 4096 8192 --modes accurate fast exact --out "$OUT/gemm.json" | tee "$OUT/gemm.txt"
else
  python3 -m bench.gemm --sizes 1024 2048 4096 8192 16384 --modes accurate fast exact \
      --out "$OUT/gemm.json" | tee "$OUT/gemm.txt"
fi
echo "== summary =="
tail -3 "$OUT/gpu_tests.txt"
cat "$OUT/gemm.txt"
