#include "runtime/device_shrink.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "daemon/rendezvous/round_keys.h"

namespace hvd::runtime {

namespace {

constexpr const char* kNone = "-";
constexpr const char* kReuse = "reuse";
constexpr const char* kAnew = "anew";

std::string join(const std::vector<int>& ranks) { return fmt::format("{}", fmt::join(ranks, ",")); }

}  // namespace

DeviceShrink& DeviceShrink::process() {
  static DeviceShrink* shrink = new DeviceShrink();  // never destroyed: kept past exit handlers
  return *shrink;
}

void DeviceShrink::bind(common::Store* store, int64_t round) {
  store_.bind(store, daemon::round_key_prefix(round) + "gpu/shrunk/");
}

void DeviceShrink::unbind() { store_.unbind(); }

bool DeviceShrink::holds() const {
  std::lock_guard lock(mu_);
  return kept_.has_value();
}

engine::ShrinkRequest DeviceShrink::request(const transports::TransportContext& set_context,
                                            std::vector<int> excluded, int64_t round) {
  engine::ShrinkRequest request;
  transports::TransportContext& survivors = request.context;
  survivors.rank = set_context.rank -
                   static_cast<int>(std::count_if(excluded.begin(), excluded.end(),
                                                  [&](int r) { return r < set_context.rank; }));
  survivors.size = set_context.size - static_cast<int>(excluded.size());
  survivors.store = &store_;  // outlives this round's Runtime
  survivors.key_prefix = "";  // store_ puts the round's prefix before every key
  survivors.bind_address = set_context.bind_address;
  survivors.host = set_context.host;
  survivors.timeout = set_context.timeout;
  survivors.device = set_context.device;
  const std::string shrink = std::to_string(round) + ":" + join(excluded);
  const std::string said = "in round " + std::to_string(round) + " without rank(s) " +
                           join(excluded);
  request.excluded = std::move(excluded);
  request.keep = [this, shrink, said, rank = survivors.rank, size = survivors.size](
                     std::unique_ptr<transports::Transport> transport, int device) {
    std::lock_guard lock(mu_);
    kept_ = Kept{std::move(transport), device, rank, size, shrink, said};
  };
  return request;
}

std::string DeviceShrink::word(const std::optional<Kept>& kept,
                               const transports::TransportContext& context) {
  if (!kept || kept->rank != context.rank || kept->size != context.size ||
      kept->device != context.device) {
    return kNone;
  }
  return kept->shrink;
}

common::Result<std::optional<transports::DeviceLink>> DeviceShrink::reuse(
    const transports::TransportRegistry& registry, const transports::TransportContext& context) {
  std::optional<Kept> kept;
  {
    std::lock_guard lock(mu_);
    kept = std::move(kept_);
    kept_.reset();
  }
  const std::string mine = word(kept, context);
  const std::string prefix = context.key_prefix + "shrunk/";
  common::Store& store = *context.store;
  HVD_RETURN_IF_ERROR(store.set(prefix + std::to_string(context.rank), mine));
  std::string decision;
  if (context.rank == 0) {
    std::vector<std::string> keys;
    for (int r = 0; r < context.size; ++r) keys.push_back(prefix + std::to_string(r));
    auto words = store.get(keys, context.timeout);
    if (!words.is_ok()) return words.status();
    const bool same = std::all_of(words->begin(), words->end(),
                                  [&](const std::string& w) { return w == words->front(); });
    decision = same && words->front() != kNone ? kReuse : kAnew;
    HVD_RETURN_IF_ERROR(store.set(prefix + "decision", decision));
  } else {
    auto got = store.get({prefix + "decision"}, context.timeout);
    if (!got.is_ok()) return got.status();
    decision = got->front();
  }
  if (decision != kReuse) {
    if (kept && context.rank == 0) {
      spdlog::info("GPU transport: the one shrunk {} is not used (not every rank of this world "
                   "keeps it at its place); connecting anew", kept->said);
    }
    return std::optional<transports::DeviceLink>();  // `kept` is destroyed here
  }
  auto work = registry.open_device(std::string(kept->transport->name()), kept->device,
                                   context.timeout);
  if (!work.is_ok()) return work.status();
  if (context.rank == 0) {
    spdlog::info("GPU transport {}: using the one shrunk in place {} ({} ranks), not "
                 "connecting anew", std::string(kept->transport->name()), kept->said,
                 context.size);
  }
  transports::DeviceLink link;
  link.transport = std::move(kept->transport);
  link.work = std::shared_ptr<transports::DeviceWork>(std::move(work).value());
  return std::optional<transports::DeviceLink>(std::move(link));
}

}  // namespace hvd::runtime
