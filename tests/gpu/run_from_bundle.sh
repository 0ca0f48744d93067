#!/usr/bin/env bash
# The GPU check: every GPU test and benchmark, run from a bundle
# (deploy/bundle.sh) on a GPU machine that has no build tree (ctest's files
# name the build machine's paths):
#
#   bash deploy/bundle.sh build bundle                     # on the build machine
#   . bundle/env.sh && bash tests/gpu/run_from_bundle.sh   # on the GPU machine
#
# Tests first (nccl_ops_gpu_test; hvd.torch on CUDA tensors over nccl at
# -np 1 and 2 and staged at -np 2; the MNIST example; an elastic job over
# NCCL with a kill -9), then the benchmarks (device work, allreduce at -np 1
# and 2, ResNet-50 training beside DDP over nccl and staged). Several ranks
# share the one GPU over NCCL through tests/gpu/nccl_hostid.sh.
#
# Each step runs under `timeout` with its own cap, and never past the
# check's budget (HVD_GPU_CHECK_BUDGET_S, default 450 s: every step fits,
# and a lent machine's 15 minutes leave room for a rerun); a step the budget
# has no room for is reported "not run".
# Every step's output is printed as it runs; the end is ONE table: a row per
# test (passed, FAILED, skipped) and per benchmark figure (measure, hvd,
# reference, ratio hvd/reference, target, met). Benchmarks print their
# figures as `SUMMARY|measure|hvd|reference|ratio|target` lines.
# Exits 1 if a test or a benchmark failed (or was not run), else 0.
set -u
build=${HVD_BUILD_DIR:?"source the bundle's env.sh first (. bundle/env.sh)"}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
python=${PYTHON:-python3}
hvdrun=$build/bin/hvdrun
wrap=(bash "$here/nccl_hostid.sh")
budget=${HVD_GPU_CHECK_BUDGET_S:-450}
logs=$(mktemp -d "${TMPDIR:-/tmp}/hvd-gpu-check.XXXXXX")
rows=()    # "kind|name|result or hvd|reference|ratio|target|met|seconds"
failed=0

# step CAP LOG COMMAND...: runs COMMAND under timeout (CAP, or what is left of
# the budget), printing and logging its output; sets rc (124: timed out,
# 125: not run) and took.
step() {
  local cap=$1 log=$2
  shift 2
  local left=$((budget - SECONDS))
  took=0
  if ((left < 10)); then
    echo "=== $*: not run: ${left} s left of the ${budget} s budget" | tee "$log"
    rc=125
    return
  fi
  local limit=$((cap < left ? cap : left))
  local t0=$SECONDS
  echo "=== $* (at ${SECONDS} s, limit ${limit} s)"
  timeout -k 5 "$limit" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  took=$((SECONDS - t0))
  if ((rc == 124 || rc == 137)); then
    echo "--- timed out after ${limit} s"
  fi
}

status_of() {  # status_of RC: the result column
  case $1 in
    0) echo passed ;;
    77) echo skipped ;;
    124 | 137) echo "FAILED (timed out)" ;;
    125) echo "FAILED (not run: budget used up)" ;;
    *) echo "FAILED (exit $1)" ;;
  esac
}

check() {  # check NAME CAP COMMAND...: a test
  local name=$1 cap=$2
  shift 2
  step "$cap" "$logs/$name.log" "$@"
  local result
  result=$(status_of "$rc")
  [[ $result == FAILED* ]] && failed=1
  rows+=("test|$name|$result|||||$took")
}

bench() {  # bench NAME CAP COMMAND...: a benchmark; its figures become rows
  local name=$1 cap=$2
  shift 2
  step "$cap" "$logs/$name.log" "$@"
  local result line found=0
  result=$(status_of "$rc")
  while IFS= read -r line; do
    rows+=("bench|${line}|$(met "$line")|")
    found=1
  done < <(figures "$name" "$logs/$name.log")
  if [[ $result == FAILED* ]]; then
    failed=1
    rows+=("bench|$name|$result|||||$took")
  elif ((found == 0)); then
    [[ $result == passed ]] && result="passed (no figures)"
    rows+=("bench|$name|$result|||||$took")
  else
    rows[${#rows[@]} - 1]+=$took
  fi
}

figures() {  # figures NAME LOG: "measure|hvd|reference|ratio|target" lines
  sed -n 's/^.*SUMMARY|//p' "$2"
  [[ $1 == gpu_device_work ]] || return 0
  # gpu_device_work (C++) prints "pack (copy_on_device)  475.9 GB/s  = 0.26x memcpy" lines
  # (the engine's packing; "pack (device_copy)" is the classifying copy, for comparison).
  awk '
    function gbs(   i) { for (i = 1; i < NF; i++) if ($(i + 1) == "GB/s") return $i }
    /memcpy \(reference\)/ { memcpy = gbs() }
    /pack \(copy_on_device\)/ { pack = gbs() }
    /scale \(device_scale\)/ { scale = gbs() }
    END {
      if (memcpy > 0 && pack != "")
        printf "device pack (copy_on_device) GB/s; reference memcpy|%s|%s|%.2f|>= 0.8\n", pack, memcpy, pack / memcpy
      if (memcpy > 0 && scale != "")
        printf "device scale (device_scale) GB/s; reference memcpy|%s|%s|%.2f|>= 0.9\n", scale, memcpy, scale / memcpy
    }' "$2"
}

met() {  # met "measure|hvd|reference|ratio|target": yes, no or nothing
  awk -F'|' '{
    r = $4; t = $5
    if (r !~ /^[0-9.]+$/) exit
    if (t ~ /^<= *[0-9.]+$/) { sub(/^<= */, "", t); print (r + 0 <= t + 0) ? "yes" : "no" }
    else if (t ~ /^>= *[0-9.]+$/) { sub(/^>= */, "", t); print (r + 0 >= t + 0) ? "yes" : "no" }
  }' <<<"$1"
}

echo "=== GPU check: build $build, $("$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)' 2>&1)"
command -v nvidia-smi >/dev/null && nvidia-smi -L
"$hvdrun" --check-build 2>&1 | sed -n '/Available transports/,/^$/p'

# ---- tests
check nccl_ops 40 "$build/bin/nccl_ops_gpu_test" ops
check nccl_device_work 30 "$build/bin/nccl_ops_gpu_test" device
check nccl_timeout 20 env HVD_NCCL_TEST_STALL_MS=4000 "$build/bin/nccl_ops_gpu_test" timeout
check nccl_abort 20 env HVD_NCCL_TEST_STALL_MS=5000 "$build/bin/nccl_ops_gpu_test" abort
check torch_cuda_nccl_np1 60 "$python" "$here/torch_cuda_gpu_test.py" "$hvdrun" 1 nccl
check torch_cuda_nccl_np2 75 "$python" "$here/torch_cuda_gpu_test.py" "$hvdrun" 2 nccl hostid
check torch_cuda_gloo_np2 60 "$python" "$here/torch_cuda_gpu_test.py" "$hvdrun" 2 gloo
check example_mnist_cuda_nccl_np1 45 "$python" "$here/torch_cuda_gpu_test.py" "$hvdrun" 1 nccl mnist
check example_mnist_cuda_gloo_np2 45 "$python" "$here/torch_cuda_gpu_test.py" "$hvdrun" 2 gloo mnist
check elastic_nccl_np3_kill 90 "$python" "$here/elastic_nccl_gpu_test.py" --hvdrun "$hvdrun" \
  --timeout 80

# ---- benchmarks
bench gpu_device_work 30 "$build/bin/gpu_device_work"
bench gpu_allreduce_np1 60 env HVD_GPU_TRANSPORT=nccl "$hvdrun" -np 1 \
  "$python" "$root/bench/gpu_allreduce.py"
bench gpu_allreduce_np2 60 env HVD_GPU_TRANSPORT=nccl "$hvdrun" -np 2 "${wrap[@]}" \
  "$python" "$root/bench/gpu_allreduce.py"
bench gpu_train_nccl 110 "$python" "$root/bench/gpu_train.py" --hvdrun "$hvdrun" --np 2 \
  --mode nccl --steps 30 --warmup 10 --timeout 50
bench gpu_train_staged 110 "$python" "$root/bench/gpu_train.py" --hvdrun "$hvdrun" --np 2 \
  --mode staged --steps 20 --warmup 5 --timeout 50

# ---- the table
echo
echo "=== summary: ${SECONDS} s (budget ${budget} s); logs in $logs"
echo "    ratio = hvd / reference, both measured in this run; target: the goal for that ratio"
printf '%s\n' "${rows[@]}" | awk -F'|' '
  BEGIN { split("kind|check / measure|result / hvd|reference|ratio|target|met|s", head, "|")
          for (c = 1; c <= 8; c++) { cell[0, c] = head[c]; width[c] = length(head[c]) } }
  { n++; for (c = 1; c <= 8; c++) { cell[n, c] = $c; if (length($c) > width[c]) width[c] = length($c) } }
  END {
    for (r = 0; r <= n; r++) {
      line = "|"
      for (c = 1; c <= 8; c++) line = line sprintf(" %-" width[c] "s |", cell[r, c])
      print line
      if (r == 0) {
        line = "|"
        for (c = 1; c <= 8; c++) { dash = ""; for (i = 0; i < width[c] + 2; i++) dash = dash "-"; line = line dash "|" }
        print line
      }
    }
  }'
exit $failed
