#!/usr/bin/env bash
# One call on the GPU machine: GPU tests, then the benchmarks; JSON under $OUT; a short table last.
# Usage (device tool): OZAKI_COMMIT=<sha> bash bench/device_run.sh [quick|full]
set -u
OUT=${OUT:-bench/results/out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
profile=${1:-full}
sizes="4096 8192"
[ "$profile" = full ] && sizes="1024 2048 4096 8192 16384"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/device.txt"
python3 -m pytest -q -m gpu tests -p no:cacheprovider --junitxml="$OUT/gpu_tests.xml" 2>&1 | tail -15 > "$OUT/gpu_tests.txt"
python3 -m bench.steps --sizes $sizes --out "$OUT/steps.json" > "$OUT/steps.txt" 2>&1
python3 -m bench.gemm --sizes $sizes --families normal phi1 --modes accurate accurate:16 accurate:15 fast:16 fast:15 exact \
    --out "$OUT/gemm.json" > "$OUT/gemm.txt" 2>&1
echo "== GPU tests =="; tail -4 "$OUT/gpu_tests.txt"
echo "== time split =="; cat "$OUT/steps.txt"
echo "== GEMM =="; cat "$OUT/gemm.txt"
