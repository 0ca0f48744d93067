// CUDA kernels of the nccl plugin, for the engine's work on device memory
// around a collective: packing tensors into the fusion buffer and back
// (batched copies: one launch per 64 tensors, every block copying 64 KiB
// in the widest words the pointers allow) and the arithmetic of
// runtime/engine/scale.h on the device (an Average's division, pre/postscale
// factors, 16 bytes per load), with the same semantics element for
// element: integers are multiplied in float64 and truncated through int64,
// divided exactly; float32 is multiplied as float, float64 as double;
// bfloat16 is computed in float and rounded to nearest even. float16
// follows Horovod's CUDA kernels instead: the factor (an Average's
// 1 / size included) is rounded to half first and the product taken in
// half. All are enqueued on `stream` and return at once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace hvd::transports::nccl {

struct DeviceCopy {
  void* dst;
  const void* src;
  size_t bytes;
};

// Copies every entry; entries must not overlap one another.
cudaError_t batched_copy(const DeviceCopy* copies, size_t n, cudaStream_t stream);

// data[i] = data[i] * factor for `count` elements of the HVD_* type `dtype`
// (not bool: cudaErrorInvalidValue).
cudaError_t scale_on_device(void* data, size_t count, int32_t dtype, double factor,
                            cudaStream_t stream);

// data[i] = data[i] / divisor (> 0) for `count` elements (not bool).
cudaError_t divide_on_device(void* data, size_t count, int32_t dtype, int divisor,
                             cudaStream_t stream);

}  // namespace hvd::transports::nccl
