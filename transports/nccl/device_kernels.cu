#include "transports/nccl/device_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "hvd/codes.h"

namespace hvd::transports::nccl {

namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 2048;
// Entries per launch: the kernel's parameters stay well under 4 KiB.
constexpr size_t kBatch = 64;
// Bytes one block copies: every block gets the same work, whatever the
// sizes of the entries (one block per entry row left most blocks idle).
constexpr size_t kChunk = 64 << 10;

struct CopyBatch {
  DeviceCopy copy[kBatch];
  unsigned first_chunk[kBatch + 1];  // entry i: chunks [first_chunk[i], first_chunk[i+1])
};

// Bytes [lo, hi) of one entry, by the block's threads, in words of V where
// dst + lo and src + lo agree on V's alignment (the head and tail bytewise);
// four loads in flight per thread before their stores.
template <typename V>
__device__ void copy_range(unsigned char* dst, const unsigned char* src, size_t lo, size_t hi) {
  constexpr size_t kWord = sizeof(V);
  const size_t misaligned = reinterpret_cast<uintptr_t>(dst + lo) % kWord;
  const size_t head = lo + (misaligned != 0 ? kWord - misaligned : 0);
  const size_t body_lo = head < hi ? head : hi;
  const size_t words = (hi - body_lo) / kWord;
  const size_t body_hi = body_lo + words * kWord;
  const size_t step = blockDim.x;
  for (size_t i = lo + threadIdx.x; i < body_lo; i += step) dst[i] = src[i];
  auto* d = reinterpret_cast<V*>(dst + body_lo);
  const auto* s = reinterpret_cast<const V*>(src + body_lo);
  size_t i = threadIdx.x;
  for (; i + 3 * step < words; i += 4 * step) {
    const V a = s[i], b = s[i + step], c = s[i + 2 * step], e = s[i + 3 * step];
    d[i] = a;
    d[i + step] = b;
    d[i + 2 * step] = c;
    d[i + 3 * step] = e;
  }
  for (; i < words; i += step) d[i] = s[i];
  for (size_t j = body_hi + threadIdx.x; j < hi; j += step) dst[j] = src[j];
}

// Block b copies chunk b of the batch: it finds its entry, then copies its
// kChunk bytes with the widest word both pointers allow.
__global__ void copy_kernel(CopyBatch batch, unsigned entries) {
  const unsigned chunk = blockIdx.x;
  unsigned lo = 0, hi = entries;  // the entry whose chunks hold `chunk`
  while (hi - lo > 1) {
    const unsigned mid = (lo + hi) / 2;
    if (batch.first_chunk[mid] <= chunk) lo = mid; else hi = mid;
  }
  const DeviceCopy c = batch.copy[lo];
  const size_t begin = static_cast<size_t>(chunk - batch.first_chunk[lo]) * kChunk;
  const size_t end = begin + kChunk < c.bytes ? begin + kChunk : c.bytes;
  auto* dst = static_cast<unsigned char*>(c.dst);
  const auto* src = static_cast<const unsigned char*>(c.src);
  const uintptr_t both = reinterpret_cast<uintptr_t>(dst) ^ reinterpret_cast<uintptr_t>(src);
  if (both % 16 == 0) {
    copy_range<uint4>(dst, src, begin, end);
  } else if (both % 8 == 0) {
    copy_range<uint2>(dst, src, begin, end);
  } else if (both % 4 == 0) {
    copy_range<unsigned>(dst, src, begin, end);
  } else if (both % 2 == 0) {
    copy_range<unsigned short>(dst, src, begin, end);
  } else {
    copy_range<unsigned char>(dst, src, begin, end);
  }
}

// As runtime/engine/scale.cc's truncate_to: through int64, NaN and beyond it give
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
// As Horovod's CUDA kernels (ScaleBufferCudaImpl): the factor is converted
// to half first (__float2half((float) factor)) and the product taken in
// half (__hmul: the exact product of two halves, rounded once; computed
// here through float, where that product is exact, for every architecture).
// An Average is Horovod's postscale by 1 / size, in half too.
struct Half {
  __device__ static __half multiply(__half v, double f) {
    const __half h = __float2half_rn(static_cast<float>(f));
    return __float2half_rn(__half2float(v) * __half2float(h));
  }
  __device__ static __half divide(__half v, int d) { return multiply(v, 1.0 / d); }
};
struct BFloat {
  __device__ static __nv_bfloat16 multiply(__nv_bfloat16 v, double f) {
    return __float2bfloat16_rn(__bfloat162float(v) * static_cast<float>(f));
  }
  __device__ static __nv_bfloat16 divide(__nv_bfloat16 v, int d) {
    return __float2bfloat16_rn(__bfloat162float(v) / static_cast<float>(d));
  }
};

// Sixteen bytes of elements per load and store where the buffer is
// aligned (the fusion buffer is), the rest element by element.
template <typename Kind, typename T>
__global__ void scale_kernel(T* data, size_t count, double factor, int divisor, bool multiply) {
  constexpr int kPer = 16 / sizeof(T);
  struct alignas(16) Pack {
    T v[kPer];
  };
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t packs = reinterpret_cast<uintptr_t>(data) % 16 == 0 ? count / kPer : 0;
  auto* p = reinterpret_cast<Pack*>(data);
  for (size_t i = first; i < packs; i += stride) {
    Pack x = p[i];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      x.v[k] = multiply ? Kind::multiply(x.v[k], factor) : Kind::divide(x.v[k], divisor);
    }
    p[i] = x;
  }
  for (size_t i = packs * kPer + first; i < count; i += stride) {
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
  const size_t packs = (count + 16 / sizeof(T) - 1) / (16 / sizeof(T));
  scale_kernel<Kind, T><<<blocks_for(packs), kThreads, 0, stream>>>(static_cast<T*>(data), count,
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
    unsigned entries = 0;
    size_t chunks = 0;
    for (size_t i = first; i < std::min(n, first + kBatch); ++i) {
      if (copies[i].bytes == 0) continue;
      batch.copy[entries] = copies[i];
      batch.first_chunk[entries] = static_cast<unsigned>(chunks);
      chunks += (copies[i].bytes + kChunk - 1) / kChunk;
      ++entries;
    }
    if (entries == 0) continue;
    batch.first_chunk[entries] = static_cast<unsigned>(chunks);
    copy_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(batch, entries);
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
