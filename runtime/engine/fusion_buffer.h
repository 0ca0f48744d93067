// The fusion buffer: one reusable byte buffer per process set into which the
// tensors of a fused batch are packed back to back (times the prescale
// factor), reduced with one transport call and unpacked (divided for an
// Average, times the postscale factor). It grows to the largest batch seen
// and is never shrunk, so steady-state cycles allocate nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "common/data_type.h"
#include "common/status.h"

namespace hvd::runtime::engine {

using common::DataType;
using common::ReduceOp;

// One tensor of a batch.
struct FusionPart {
  const void* input = nullptr;  // null: contribute the identity of the op (a rank that joined)
  void* output = nullptr;       // null: the result is not wanted on this rank
  size_t count = 0;             // elements
};

// Fills `count` elements with the identity of `op`: 0 for sum and average,
// 1 for product, the largest value for min, the lowest for max (bool: min and
// product are AND, so true; max and sum are OR, so false).
void fill_identity(void* data, size_t count, DataType type, ReduceOp op);

class FusionBuffer {
 public:
  // At least `bytes` of storage (contents not kept when it grows).
  uint8_t* reserve(size_t bytes);
  uint8_t* data() { return data_.get(); }
  size_t capacity() const { return capacity_; }

  // Packs the parts' inputs back to back from the start, times `prescale`
  // (null inputs get the identity of `op`, unscaled); returns the bytes used.
  common::Result<size_t> pack(std::span<const FusionPart> parts, DataType type, ReduceOp op,
                              double prescale);
  // Copies each part of the reduced buffer to its output (when it has one):
  // divided by `divisor`, times `postscale`.
  common::Status unpack(std::span<const FusionPart> parts, DataType type, int divisor,
                        double postscale) const;

 private:
  std::unique_ptr<uint8_t[]> data_;
  size_t capacity_ = 0;
};

}  // namespace hvd::runtime::engine
