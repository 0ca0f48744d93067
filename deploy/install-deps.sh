#!/usr/bin/env bash
# Installs every Debian 12 package hvd needs to build, test and run its main job.
# Idempotent: packages already present are skipped; apt-get update runs first when
# anything is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libgloo-dev libspdlog-dev libfmt-dev libcli11-dev catch2 libyaml-cpp-dev
  libssl-dev openssl util-linux iproute2 procps iptables
  python3 python3-numpy python3-pytest python3-torch python3-torchvision python3-yaml
  python3-pip python3-venv python3-setuptools python3-wheel
  python3-matplotlib
  slurm-wlm munge
  clang libclang-rt-14-dev libnetfilter-queue-dev
)

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
