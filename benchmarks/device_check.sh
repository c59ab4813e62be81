#!/usr/bin/env bash
# One run on a GPU machine (no network): the CUDA target's tests on the real device and CuPy,
# then the GPU benchmark. Logs go to $OUT (default /tmp/pypto_device); a table prints last.
#
#   bash benchmarks/device_check.sh [TEST_SECONDS] [BENCH_SECONDS]
#
# Wheels the machine lacks (libcst) travel in .whl/ (see docs/cuda.md, "On a real GPU").
set -u
OUT=${OUT:-/tmp/pypto_device}
mkdir -p "$OUT"
TEST_SECONDS=${1:-300}
BENCH_SECONDS=${2:-150}
export PYTHONUNBUFFERED=1
SITE=/tmp/pypto_site
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" .whl/*.whl || exit 1
fi
# the project itself, for the installed `pypto` command the transpile tests run
python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile \
    --target "$SITE" . >"$OUT/install.log" 2>&1 || echo "note: installing the project failed"
export PYTHONPATH="$SITE:$PWD" PATH="$SITE/bin:$PATH"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import sys, cupy, numpy; print(sys.version.split()[0], 'cupy', cupy.__version__,
'numpy', numpy.__version__, 'CUDA runtime', cupy.cuda.runtime.runtimeGetVersion())"

echo "== tests on the device (PYPTO_CUDA_TESTS=device)"
PYPTO_CUDA_TESTS=device timeout "$TEST_SECONDS" python3 -m pytest -p no:cacheprovider \
    -o filterwarnings=default -n 8 --timeout 120 -v --tb=short \
    tests/test_gpu.py tests/cuda_emu/test_cuda_target.py tests/cuda_emu/test_cuda_random.py \
    tests/cuda_emu/test_transpiled_cuda.py >"$OUT/tests.log" 2>&1
echo "pytest exit: $?"
grep -cE " PASSED " "$OUT/tests.log" | sed "s/^/passed: /"
grep -E "^(FAILED|ERROR) |[0-9]+ (passed|failed)" "$OUT/tests.log" | tail -60

echo "== benchmark"
timeout "$BENCH_SECONDS" python3 benchmarks/gpu_bench.py --repeat 10 >"$OUT/bench.log" 2>&1
echo "gpu_bench exit: $?"
cat "$OUT/bench.log"
