#include "runtime/discovery/layout_exchange.h"

#include <algorithm>
#include <vector>

namespace hvd::runtime {

namespace {

// Keys per get call (the rendezvous service takes at most 1024).
constexpr int kKeysPerGet = 512;

}  // namespace

common::Status exchange_cross_ranks(common::Store& store, const std::string& prefix,
                                    WorldInfo* world, std::chrono::milliseconds timeout) {
  HVD_RETURN_IF_ERROR(
      store.set(prefix + std::to_string(world->rank), std::to_string(world->local_rank)));
  int cross_rank = 0, cross_size = 0;
  for (int first = 0; first < world->size; first += kKeysPerGet) {
    std::vector<std::string> keys;
    for (int r = first; r < std::min(world->size, first + kKeysPerGet); ++r) {
      keys.push_back(prefix + std::to_string(r));
    }
    auto values = store.get(keys, timeout);
    if (!values.is_ok()) {
      return values.status().with_context("finding the cross ranks from the local ranks");
    }
    for (size_t i = 0; i < keys.size(); ++i) {
      if (values.value()[i] != std::to_string(world->local_rank)) continue;
      ++cross_size;
      if (first + static_cast<int>(i) < world->rank) ++cross_rank;
    }
  }
  world->cross_rank = cross_rank;
  world->cross_size = cross_size;
  return common::Status::ok();
}

}  // namespace hvd::runtime
