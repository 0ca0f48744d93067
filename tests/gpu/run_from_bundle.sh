#!/usr/bin/env bash
# Every GPU test and benchmark, run from a bundle (deploy/bundle.sh) on a GPU
# machine that has no build tree (ctest's files name this machine's paths):
#
#   . bundle/env.sh && bash tests/gpu/run_from_bundle.sh
#
# Prints each test's output and a summary line per test (passed, FAILED,
# skipped), then the benchmarks' tables; exits 1 if any test failed.
set -u
build=${HVD_BUILD_DIR:?"source the bundle's env.sh first (. bundle/env.sh)"}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
summary=()
failed=0

check() {  # check NAME COMMAND...: runs it, 77 = skipped
  local name=$1
  shift
  echo "=== $name: $*"
  "$@"
  local rc=$?
  case $rc in
    0) summary+=("passed   $name") ;;
    77) summary+=("skipped  $name") ;;
    *) summary+=("FAILED   $name (exit $rc)"); failed=1 ;;
  esac
}

check nccl_ops "$build/bin/nccl_ops_gpu_test" ops
check nccl_device_work "$build/bin/nccl_ops_gpu_test" device
check nccl_timeout env HVD_NCCL_TEST_STALL_MS=4000 "$build/bin/nccl_ops_gpu_test" timeout
check nccl_abort env HVD_NCCL_TEST_STALL_MS=5000 "$build/bin/nccl_ops_gpu_test" abort
for run in "1 nccl" "2 gloo" "4 gloo"; do
  set -- $run
  check "torch_cuda_$2_np$1" "$python" "$here/torch_cuda_gpu_test.py" "$build/bin/hvdrun" "$1" "$2"
done
for run in "1 nccl" "2 gloo"; do
  set -- $run
  check "example_mnist_cuda_$2_np$1" "$python" "$here/torch_cuda_gpu_test.py" \
    "$build/bin/hvdrun" "$1" "$2" mnist
done

echo "=== benchmarks"
"$build/bin/gpu_device_work"
"$build/bin/hvdrun" -np 1 "$python" "$root/bench/gpu_allreduce.py"

echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $failed
