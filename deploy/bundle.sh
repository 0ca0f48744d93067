#!/usr/bin/env bash
# Bundles a build for a machine without apt (the GPU machines `device` lends:
# Python 3.12, torch and NCCL from pip, none of Debian's libraries):
#
#   bash deploy/bundle.sh [BUILD_DIR] [BUNDLE_DIR]      (defaults: build bundle)
#
# BUNDLE_DIR gets the layout of a build folder (bin/, lib/, python/hvd/), so the
# tests run from it with HVD_BUILD_DIR=BUNDLE_DIR, plus deps/: every shared
# library `ldd` lists for the programs and libraries that the base system of
# such a machine does not have (gRPC, protobuf, absl, Gloo, spdlog, ...).
# Left out on purpose: the C library and its loader, libstdc++/libgcc_s (the
# machine's are newer and torch needs them), OpenSSL and zlib (always there),
# the CUDA driver, and libnccl (over 200 MB; the machine's pip NCCL is used).
# BUNDLE_DIR/env.sh sets PATH, LD_LIBRARY_PATH (deps/ and pip's NCCL),
# PYTHONPATH and HVD_BUILD_DIR:  . bundle/env.sh && hvdrun --check-build
set -euo pipefail

build=${1:-build}
bundle=${2:-bundle}
if [[ ! -x "$build/bin/hvdrun" || ! -f "$build/lib/libhvd.so" ]]; then
  echo "bundle.sh: $build is not a build folder (no bin/hvdrun or lib/libhvd.so): build first" >&2
  exit 2
fi

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/deps" "$bundle/python"
cp -L "$build/bin/hvdrun" "$build/bin/hvd-agent" "$bundle/bin/"
# Test programs the GPU tests start, when they were built.
for program in ops_check collectives_check hvd_perf hvd_grad_step nccl_ops_gpu_test gpu_device_work; do
  [[ -x "$build/bin/$program" ]] && cp -L "$build/bin/$program" "$bundle/bin/"
done
cp -L "$build"/lib/libhvd*.so* "$bundle/lib/"
cp -rL "$build/python/hvd" "$bundle/python/"
find "$bundle/python" -name __pycache__ -prune -exec rm -rf {} +

# The base system of the target: never bundled.
skip='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s|libssl|libcrypto|libz|libcuda|libnccl)\.'
missing=()
for file in "$bundle"/bin/* "$bundle"/lib/*.so; do
  while read -r name _ path _; do
    [[ "$name" =~ $skip ]] && continue
    [[ "$name" == libhvd* ]] && continue  # bundled above
    if [[ "$path" == "not" ]]; then
      missing+=("$name (needed by $(basename "$file"))")
      continue
    fi
    [[ -f "$bundle/deps/$name" ]] || cp -L "$path" "$bundle/deps/$name"
  done < <(ldd "$file" | awk '/=>/ {print $1, $2, $3, $4}')
done
if ((${#missing[@]})); then
  echo "bundle.sh: ldd cannot find: ${missing[*]}" >&2
  exit 1
fi

cat >"$bundle/env.sh" <<'EOF'
# Source me: . bundle/env.sh
_hvd_bundle=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_hvd_nccl=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null || true)
export PATH="$_hvd_bundle/bin:$PATH"
export LD_LIBRARY_PATH="$_hvd_bundle/lib:$_hvd_bundle/deps${_hvd_nccl:+:$_hvd_nccl}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$_hvd_bundle/python${PYTHONPATH:+:$PYTHONPATH}"
export HVD_BUILD_DIR="$_hvd_bundle"
unset _hvd_bundle _hvd_nccl
EOF
echo "bundle.sh: $bundle: $(ls "$bundle/bin" | wc -l) programs, $(ls "$bundle/lib" | wc -l) hvd libraries, $(ls "$bundle/deps" | wc -l) dependencies, $(du -sh "$bundle" | cut -f1)"
