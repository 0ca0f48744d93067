#!/usr/bin/env bash
# Installs the Debian 12 packages hvd needs.
#
#   bash deploy/install-deps.sh           build hvd and run its main job (README command 1)
#   bash deploy/install-deps.sh --tests   also everything the tests, fuzzers and benchmarks
#                                         use (README's test command, .ci/run)
#
# Idempotent: packages already present are skipped; apt-get update runs first when
# anything is missing. Needs root (or sudo).
set -euo pipefail

# Building (the libraries, hvdrun, hvd-agent, the Python package) and running the
# main job (hvdrun -np 2 /usr/bin/python3 examples/pytorch_mnist.py).
packages=(
  build-essential cmake pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libgloo-dev libspdlog-dev libfmt-dev libcli11-dev libyaml-cpp-dev libssl-dev
  python3 python3-numpy python3-torch
)
# The tests (Catch2, pytest, namespaces, iptables, a Slurm cluster), the fuzzers
# (clang, libFuzzer), the benchmarks and their plots, the torchvision models of
# examples/pytorch_synthetic_benchmark.py, pip, venv and the wheel; a real
# Prometheus and a headless chromium driven over the DevTools protocol
# (python3-websocket) for the metrics tests (ctest -L metrics).
test_packages=(
  git catch2 openssl util-linux iproute2 procps iptables libnetfilter-queue-dev
  python3-pytest python3-yaml python3-torchvision python3-matplotlib
  python3-pip python3-venv python3-setuptools python3-wheel
  slurm-wlm munge
  clang libclang-rt-14-dev
  prometheus chromium python3-websocket
)

case "${1:-}" in
  "") ;;
  --tests) packages+=("${test_packages[@]}") ;;
  -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "install-deps: unknown option '$1' (use --tests, or no option)" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
