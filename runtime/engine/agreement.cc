#include "runtime/engine/agreement.h"

#include <cstdio>
#include <string>
#include <utility>

namespace hvd::runtime::engine {

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

std::string device_string(int32_t device) {
  return device < 0 ? "cpu" : "cuda:" + std::to_string(device);
}

std::string group_string(const Request& r) {
  if (r.group_id < 0) return "not grouped";
  return "group " + std::to_string(r.group_id) + " of " + std::to_string(r.group_size);
}

bool allgather_like(OpType t) { return t == OpType::kAllgather || t == OpType::kAlltoall; }

bool same_shape(const Request& a, const Request& b) {
  if (!allgather_like(a.op_type)) return a.shape == b.shape;
  if (a.shape.size() != b.shape.size()) return false;
  for (size_t i = 1; i < a.shape.size(); ++i) {
    if (a.shape[i] != b.shape[i]) return false;
  }
  return true;
}

// "mismatched <field> for tensor '<name>': rank 0 X, ranks 1, 2 Y"
template <typename Show>
common::Status mismatch(const char* field, std::span<const Request* const> requests,
                        std::span<const int> global_ranks, Show show) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;  // value -> ranks, first seen first
  for (const Request* r : requests) {
    std::string value = show(*r);
    int rank = r->rank >= 0 && static_cast<size_t>(r->rank) < global_ranks.size()
                   ? global_ranks[static_cast<size_t>(r->rank)]
                   : r->rank;
    auto it = groups.begin();
    while (it != groups.end() && it->first != value) ++it;
    if (it == groups.end()) {
      groups.push_back({std::move(value), {rank}});
    } else {
      it->second.push_back(rank);
    }
  }
  std::string message = std::string("mismatched ") + field + " for tensor '" +
                        requests.front()->name + "': ";
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g > 0) message += ", ";
    const auto& ranks = groups[g].second;
    message += ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (i > 0) message += ", ";
      message += std::to_string(ranks[i]);
    }
    message += " " + groups[g].first;
  }
  return common::invalid_argument(std::move(message));
}

}  // namespace

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

common::Status check_agreement(std::span<const Request* const> requests,
                               std::span<const int> global_ranks) {
  if (requests.size() < 2) return common::Status::ok();
  const Request& first = *requests.front();
  auto differs = [&](auto field) {
    for (const Request* r : requests) {
      if (!field(first, *r)) return true;
    }
    return false;
  };
  if (differs([](const Request& a, const Request& b) { return a.op_type == b.op_type; })) {
    return mismatch("op type", requests, global_ranks,
                    [](const Request& r) { return std::string(op_type_name(r.op_type)); });
  }
  if (differs([](const Request& a, const Request& b) { return a.dtype == b.dtype; })) {
    return mismatch("dtype", requests, global_ranks, [](const Request& r) {
      return std::string(common::data_type_name(r.dtype));
    });
  }
  if (differs([](const Request& a, const Request& b) { return a.reduce_op == b.reduce_op; })) {
    return mismatch("reduce op", requests, global_ranks, [](const Request& r) {
      return std::string(common::reduce_op_name(r.reduce_op));
    });
  }
  if (differs([](const Request& a, const Request& b) { return a.root_rank == b.root_rank; })) {
    return mismatch("root rank", requests, global_ranks,
                    [](const Request& r) { return std::to_string(r.root_rank); });
  }
  // CPU or CUDA must agree; the CUDA ordinal may differ (each rank has its GPU).
  if (differs([](const Request& a, const Request& b) {
        return (a.device >= 0) == (b.device >= 0);
      })) {
    return mismatch("device", requests, global_ranks,
                    [](const Request& r) { return device_string(r.device); });
  }
  if (differs([](const Request& a, const Request& b) {
        return a.prescale_factor == b.prescale_factor;
      })) {
    return mismatch("prescale factor", requests, global_ranks,
                    [](const Request& r) { return number(r.prescale_factor); });
  }
  if (differs([](const Request& a, const Request& b) {
        return a.postscale_factor == b.postscale_factor;
      })) {
    return mismatch("postscale factor", requests, global_ranks,
                    [](const Request& r) { return number(r.postscale_factor); });
  }
  if (differs([](const Request& a, const Request& b) {
        return a.group_id == b.group_id && a.group_size == b.group_size;
      })) {
    return mismatch("group", requests, global_ranks, group_string);
  }
  if (differs(same_shape)) {
    return mismatch("shape", requests, global_ranks,
                    [](const Request& r) { return shape_string(r.shape); });
  }
  return common::Status::ok();
}

}  // namespace hvd::runtime::engine
