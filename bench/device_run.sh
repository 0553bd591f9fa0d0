#!/usr/bin/env bash
# One call on the GPU machine: GPU tests, the time split, the GEMM benchmark and the
# verification suite with its report; everything in $OUT/results.tgz, a short table last.
# Usage (device tool): OZAKI_COMMIT=<sha> bash bench/device_run.sh [quick|full]
set -u
OUT=${OUT:-bench/results/out}
W=$(mktemp -d)
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
profile=${1:-full}
sizes="4096 8192"
[ "$profile" = full ] && sizes="1024 2048 4096 8192 16384"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$W/device.txt"
timeout 150 python3 -m pytest -q -m gpu tests -p no:cacheprovider --junitxml="$W/gpu_tests.xml" > "$W/gpu_tests.txt" 2>&1
timeout 40 python3 -m bench.steps --sizes 4096 8192 16384 --out "$W/steps.json" > "$W/steps.txt" 2>&1
timeout 130 python3 -m bench.gemm --sizes $sizes --families normal \
    --modes accurate accurate:16 accurate:15 fast:16 exact --out "$W/gemm.json" > "$W/gemm.txt" 2>&1
timeout 30 python3 -m bench.gemm --sizes 16384 --families phi1 --no-emulated \
    --modes accurate accurate:16 exact --out "$W/gemm_phi1.json" > "$W/gemm_phi1.txt" 2>&1
timeout 40 python3 -m bench.gemm --sizes 4096 8192 --families complex --no-emulated --samples 12 \
    --modes accurate accurate:16 --out "$W/zgemm.json" > "$W/zgemm.txt" 2>&1
timeout 50 python3 -m bench.fft --sizes 65536 1048576 --cubes 128 256 --repeats 2 --out "$W/fft.json" > "$W/fft.txt" 2>&1
timeout 40 python3 -m ozaki verify --profile short --report "$W/report" \
    --bench-results "$W/gemm.json" > "$W/verify.txt" 2>/dev/null
tar czf "$OUT/results.tgz" -C "$W" .
{
echo "== GPU tests =="; tail -3 "$W/gpu_tests.txt"
echo "== time split =="; cat "$W/steps.txt"
echo "== GEMM =="; cat "$W/gemm.txt" "$W/gemm_phi1.txt" "$W/zgemm.txt"
echo "== FFT =="; cat "$W/fft.txt"
echo "== verify =="; grep -E "fail|verify:" "$W/verify.txt" | tail -8
} | tee "$OUT/summary.txt"
