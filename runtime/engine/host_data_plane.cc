#include "runtime/engine/host_data_plane.h"

#include <cstring>
#include <utility>

#include "runtime/engine/scale.h"

namespace hvd::runtime::engine {

common::Result<OpOutput> HostDataPlane::allocate(size_t bytes, std::vector<int64_t> shape) {
  OpOutput out;
  out.data = take_host_buffer(bytes);
  out.bytes = bytes;
  out.shape = std::move(shape);
  return out;
}

common::Status HostDataPlane::scale(void* dst, const void* src, size_t count, DataType type,
                                    double factor) {
  return runtime::scale(dst, src, count, type, factor);
}

common::Status HostDataPlane::finish(void* data, size_t count, DataType type, int divisor,
                                     double factor) {
  return finish_reduction(data, data, count, type, divisor, factor);
}

common::Status HostDataPlane::copy(void* dst, const void* src, size_t bytes) {
  if (bytes > 0 && dst != src) std::memmove(dst, src, bytes);
  return common::Status::ok();
}

}  // namespace hvd::runtime::engine
