#include "transports/nccl/cuda_probe.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

namespace hvd::transports::nccl {

namespace {

std::string nccl_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "unknown";
  // NCCL >= 2.9: major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

// The CUDA runtime calls a missing driver "insufficient": say what it is.
bool driver_installed() {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (driver == nullptr) driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return false;
  dlclose(driver);
  return true;
}

}  // namespace

CudaProbe probe_cuda() {
  CudaProbe probe;
  probe.nccl_version = nccl_version();
  const cudaError_t error = cudaGetDeviceCount(&probe.devices);
  if (error != cudaSuccess) {
    probe.devices = 0;
    probe.reason = std::string("no usable CUDA device: cudaGetDeviceCount failed: ") +
                   cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")";
    if (!driver_installed()) probe.reason += "; the NVIDIA driver (libcuda.so.1) is not installed";
    return probe;
  }
  if (probe.devices == 0) {
    probe.reason = "no CUDA device: cudaGetDeviceCount found 0";
    return probe;
  }
  probe.usable = true;
  return probe;
}

}  // namespace hvd::transports::nccl
