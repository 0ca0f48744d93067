// The DataPlane of CPU ops (data_plane.h): host memory, the FusionBuffer and
// runtime/engine/scale.h, exactly what the executor did before there were device
// ops (no extra copy, nothing to wait for).
#pragma once

#include "runtime/engine/data_plane.h"

namespace hvd::runtime::engine {

class HostDataPlane final : public DataPlane {
 public:
  bool on_device() const override { return false; }
  common::Status begin(std::span<const OpStream>) override { return common::Status::ok(); }
  common::Result<std::shared_ptr<DeviceEvent>> end() override {
    return std::shared_ptr<DeviceEvent>();
  }
  common::Result<OpOutput> allocate(size_t bytes, std::vector<int64_t> shape) override;
  common::Result<uint8_t*> reserve(size_t bytes) override { return fusion_.reserve(bytes); }
  uint8_t* fusion() override { return fusion_.data(); }
  common::Result<size_t> pack(std::span<const FusionPart> parts, DataType type, ReduceOp op,
                              double prescale) override {
    return fusion_.pack(parts, type, op, prescale);
  }
  common::Status unpack(std::span<const FusionPart> parts, DataType type, int divisor,
                        double postscale) override {
    return fusion_.unpack(parts, type, divisor, postscale);
  }
  common::Status scale(void* dst, const void* src, size_t count, DataType type,
                       double factor) override;
  common::Status finish(void* data, size_t count, DataType type, int divisor,
                        double factor) override;
  common::Status copy(void* dst, const void* src, size_t bytes) override;

 private:
  FusionBuffer fusion_;
};

}  // namespace hvd::runtime::engine
