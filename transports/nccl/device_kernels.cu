#include "transports/nccl/device_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "hvd/c_api.h"

namespace hvd::transports::nccl {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;
// Entries per launch: the kernel's parameters stay well under 4 KiB.
constexpr size_t kBatch = 64;

struct CopyBatch {
  DeviceCopy copy[kBatch];
};

// Block row y copies entry y; the blocks of a row stride over its bytes,
// 16 at a time when the entry allows it.
__global__ void copy_kernel(CopyBatch batch) {
  const DeviceCopy c = batch.copy[blockIdx.y];
  const size_t start = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const auto aligned = (reinterpret_cast<uintptr_t>(c.dst) | reinterpret_cast<uintptr_t>(c.src) |
                        c.bytes) % sizeof(uint4) == 0;
  if (aligned) {
    auto* dst = static_cast<uint4*>(c.dst);
    const auto* src = static_cast<const uint4*>(c.src);
    for (size_t i = start; i < c.bytes / sizeof(uint4); i += stride) dst[i] = src[i];
  } else {
    auto* dst = static_cast<unsigned char*>(c.dst);
    const auto* src = static_cast<const unsigned char*>(c.src);
    for (size_t i = start; i < c.bytes; i += stride) dst[i] = src[i];
  }
}

// As runtime/scale.cc's truncate_to: through int64, NaN and beyond it give
// int64's minimum, then modulo 2^bits.
template <typename T>
__device__ T truncate_to(double x) {
  constexpr double kTwo63 = 9223372036854775808.0;
  const long long wide = x >= -kTwo63 && x < kTwo63 ? static_cast<long long>(x)
                                                    : static_cast<long long>(1ULL << 63);
  return static_cast<T>(wide);
}

template <typename T>
struct Integer {
  __device__ static T multiply(T v, double f) { return truncate_to<T>(static_cast<double>(v) * f); }
  __device__ static T divide(T v, int d) { return static_cast<T>(v / d); }
};
template <typename T>
struct Floating {
  __device__ static T multiply(T v, double f) { return v * static_cast<T>(f); }
  __device__ static T divide(T v, int d) { return static_cast<T>(v / d); }
};
struct Half {
  __device__ static __half multiply(__half v, double f) {
    return __float2half_rn(__half2float(v) * static_cast<float>(f));
  }
  __device__ static __half divide(__half v, int d) {
    return __float2half_rn(__half2float(v) / static_cast<float>(d));
  }
};
struct BFloat {
  __device__ static __nv_bfloat16 multiply(__nv_bfloat16 v, double f) {
    return __float2bfloat16_rn(__bfloat162float(v) * static_cast<float>(f));
  }
  __device__ static __nv_bfloat16 divide(__nv_bfloat16 v, int d) {
    return __float2bfloat16_rn(__bfloat162float(v) / static_cast<float>(d));
  }
};

template <typename Kind, typename T>
__global__ void scale_kernel(T* data, size_t count, double factor, int divisor, bool multiply) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    data[i] = multiply ? Kind::multiply(data[i], factor) : Kind::divide(data[i], divisor);
  }
}

unsigned blocks_for(size_t count) {
  return static_cast<unsigned>(std::max<size_t>(
      1, std::min<size_t>(kMaxBlocks, (count + kThreads - 1) / kThreads)));
}

template <typename Kind, typename T>
cudaError_t launch(void* data, size_t count, double factor, int divisor, bool multiply,
                   cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  scale_kernel<Kind, T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(data), count,
                                                                    factor, divisor, multiply);
  return cudaGetLastError();
}

cudaError_t arithmetic(void* data, size_t count, int32_t dtype, double factor, int divisor,
                       bool multiply, cudaStream_t stream) {
  switch (dtype) {
    case HVD_UINT8: return launch<Integer<uint8_t>, uint8_t>(data, count, factor, divisor, multiply, stream);
    case HVD_INT8: return launch<Integer<int8_t>, int8_t>(data, count, factor, divisor, multiply, stream);
    case HVD_INT16: return launch<Integer<int16_t>, int16_t>(data, count, factor, divisor, multiply, stream);
    case HVD_INT32: return launch<Integer<int32_t>, int32_t>(data, count, factor, divisor, multiply, stream);
    case HVD_INT64: return launch<Integer<int64_t>, int64_t>(data, count, factor, divisor, multiply, stream);
    case HVD_FLOAT16: return launch<Half, __half>(data, count, factor, divisor, multiply, stream);
    case HVD_BFLOAT16: return launch<BFloat, __nv_bfloat16>(data, count, factor, divisor, multiply, stream);
    case HVD_FLOAT32: return launch<Floating<float>, float>(data, count, factor, divisor, multiply, stream);
    case HVD_FLOAT64: return launch<Floating<double>, double>(data, count, factor, divisor, multiply, stream);
    default: return cudaErrorInvalidValue;  // bool and unknown types
  }
}

}  // namespace

cudaError_t batched_copy(const DeviceCopy* copies, size_t n, cudaStream_t stream) {
  for (size_t first = 0; first < n; first += kBatch) {
    CopyBatch batch{};
    const size_t rows = std::min(kBatch, n - first);
    size_t largest = 0;
    for (size_t i = 0; i < rows; ++i) {
      batch.copy[i] = copies[first + i];
      largest = std::max(largest, copies[first + i].bytes);
    }
    if (largest == 0) continue;
    const dim3 grid(blocks_for(largest / sizeof(uint4) + 1) , static_cast<unsigned>(rows));
    copy_kernel<<<grid, kThreads, 0, stream>>>(batch);
    const cudaError_t error = cudaGetLastError();
    if (error != cudaSuccess) return error;
  }
  return cudaSuccess;
}

cudaError_t scale_on_device(void* data, size_t count, int32_t dtype, double factor,
                            cudaStream_t stream) {
  return arithmetic(data, count, dtype, factor, 1, true, stream);
}

cudaError_t divide_on_device(void* data, size_t count, int32_t dtype, int divisor,
                             cudaStream_t stream) {
  if (divisor <= 0) return cudaErrorInvalidValue;
  return arithmetic(data, count, dtype, 1.0, divisor, false, stream);
}

}  // namespace hvd::transports::nccl
