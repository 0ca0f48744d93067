#include "runtime/engine/fusion_buffer.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "runtime/engine/scale.h"

namespace hvd::runtime::engine {

namespace {

template <typename T>
void fill(void* data, size_t count, T value) {
  std::fill_n(static_cast<T*>(data), count, value);
}

template <typename T>
void fill_numeric(void* data, size_t count, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: fill<T>(data, count, T{0}); break;
    case ReduceOp::kProduct: fill<T>(data, count, T{1}); break;
    case ReduceOp::kMin:
      fill<T>(data, count, std::numeric_limits<T>::has_infinity
                               ? std::numeric_limits<T>::infinity()
                               : std::numeric_limits<T>::max());
      break;
    case ReduceOp::kMax:
      fill<T>(data, count, std::numeric_limits<T>::has_infinity
                               ? -std::numeric_limits<T>::infinity()
                               : std::numeric_limits<T>::lowest());
      break;
  }
}

// float16 / bfloat16 bit patterns: 0, 1, +infinity, -infinity.
void fill_16(void* data, size_t count, ReduceOp op, uint16_t one, uint16_t inf) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: fill<uint16_t>(data, count, 0); break;
    case ReduceOp::kProduct: fill<uint16_t>(data, count, one); break;
    case ReduceOp::kMin: fill<uint16_t>(data, count, inf); break;
    case ReduceOp::kMax: fill<uint16_t>(data, count, static_cast<uint16_t>(inf | 0x8000u)); break;
  }
}

}  // namespace

void fill_identity(void* data, size_t count, DataType type, ReduceOp op) {
  if (count == 0) return;
  switch (type) {
    case DataType::kUInt8: fill_numeric<uint8_t>(data, count, op); break;
    case DataType::kInt8: fill_numeric<int8_t>(data, count, op); break;
    case DataType::kInt16: fill_numeric<int16_t>(data, count, op); break;
    case DataType::kInt32: fill_numeric<int32_t>(data, count, op); break;
    case DataType::kInt64: fill_numeric<int64_t>(data, count, op); break;
    case DataType::kFloat32: fill_numeric<float>(data, count, op); break;
    case DataType::kFloat64: fill_numeric<double>(data, count, op); break;
    case DataType::kFloat16: fill_16(data, count, op, 0x3c00u, 0x7c00u); break;
    case DataType::kBFloat16: fill_16(data, count, op, 0x3f80u, 0x7f80u); break;
    case DataType::kBool: {
      bool all = op == ReduceOp::kMin || op == ReduceOp::kProduct;
      fill<uint8_t>(data, count, all ? 1 : 0);
      break;
    }
  }
}

uint8_t* FusionBuffer::reserve(size_t bytes) {
  if (bytes > capacity_ || !data_) {
    size_t grown = std::max(bytes, capacity_ + capacity_ / 2);
    data_.reset(new uint8_t[std::max<size_t>(grown, 1)]);
    capacity_ = std::max<size_t>(grown, 1);
  }
  return data_.get();
}

common::Result<size_t> FusionBuffer::pack(std::span<const FusionPart> parts, DataType type,
                                          ReduceOp op, double prescale) {
  const size_t element = common::data_type_size(type);
  size_t total = 0;
  for (const FusionPart& p : parts) total += p.count * element;
  uint8_t* out = reserve(total);
  for (const FusionPart& p : parts) {
    if (p.input == nullptr) {
      fill_identity(out, p.count, type, op);
    } else {
      HVD_RETURN_IF_ERROR(scale(out, p.input, p.count, type, prescale));
    }
    out += p.count * element;
  }
  return total;
}

common::Status FusionBuffer::unpack(std::span<const FusionPart> parts, DataType type, int divisor,
                                    double postscale) const {
  const size_t element = common::data_type_size(type);
  const uint8_t* in = data_.get();
  for (const FusionPart& p : parts) {
    if (p.output != nullptr) {
      HVD_RETURN_IF_ERROR(finish_reduction(p.output, in, p.count, type, divisor, postscale));
    }
    in += p.count * element;
  }
  return common::Status::ok();
}

}  // namespace hvd::runtime::engine
