#include "transports/plugin/plugin_transport.h"

#include <utility>

#include "transports/argument_checks.h"
#include "transports/plugin/plugin_world.h"

namespace hvd::transports::plugin {

common::Result<std::unique_ptr<Transport>> PluginTransport::connect(
    std::shared_ptr<LoadedPlugin> plugin, const TransportContext& context) {
  hvd_plugin_world world = make_world(context);
  hvd_plugin_status status{};
  void* handle = nullptr;
  const int32_t code = plugin->api().create(&world, &handle, &status);
  const std::string what = "transport '" + std::string(plugin->name()) + "' on rank " +
                           std::to_string(context.rank) + " could not connect";
  HVD_RETURN_IF_ERROR(from_plugin_status(code, status, what));
  if (handle == nullptr) return common::internal_error(what + ": the plugin gave no handle");
  return std::unique_ptr<Transport>(
      new PluginTransport(std::move(plugin), handle, context.rank, context.size));
}

PluginTransport::~PluginTransport() { plugin_->api().destroy(handle_); }

Status PluginTransport::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

template <typename Call>
Status PluginTransport::run(const char* op, Call&& call) {
  HVD_RETURN_IF_ERROR(failure());
  hvd_plugin_status status{};
  const int32_t code = call(&status);
  Status done = from_plugin_status(
      code, status, std::string(name()) + " " + op + " on rank " + std::to_string(rank_));
  // A refusal (invalid argument) ran nothing on any rank: that op fails,
  // the transport stays usable. Any other failure stays set.
  if (!done.is_ok() && code != HVD_ERR_INVALID_ARGUMENT) {
    std::lock_guard lock(mutex_);
    if (failure_.is_ok()) failure_ = done;
    return failure_;
  }
  return done;
}

Status PluginTransport::allreduce(Buffer data, DataType type, ReduceOp op) {
  HVD_RETURN_IF_ERROR(check_allreduce(data, type));
  return run("allreduce", [&](hvd_plugin_status* s) {
    return plugin_->api().allreduce(handle_, data.data, data.size, static_cast<int32_t>(type),
                                    static_cast<int32_t>(op), stream_, s);
  });
}

Status PluginTransport::allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) {
  HVD_RETURN_IF_ERROR(check_allgatherv(in, out, counts, rank_, size_));
  return run("allgatherv", [&](hvd_plugin_status* s) {
    return plugin_->api().allgatherv(handle_, in.data, in.size, out.data, out.size, counts.data(),
                                     static_cast<int32_t>(counts.size()), stream_, s);
  });
}

Status PluginTransport::broadcast(Buffer data, int root) {
  HVD_RETURN_IF_ERROR(check_broadcast(data, root, size_));
  return run("broadcast", [&](hvd_plugin_status* s) {
    return plugin_->api().broadcast(handle_, data.data, data.size, root, stream_, s);
  });
}

Status PluginTransport::alltoallv(ConstBuffer in, std::span<const int64_t> send_counts,
                                  Buffer out, std::span<const int64_t> recv_counts) {
  HVD_RETURN_IF_ERROR(check_alltoallv(in, send_counts, out, recv_counts, rank_, size_));
  return run("alltoallv", [&](hvd_plugin_status* s) {
    return plugin_->api().alltoallv(handle_, in.data, in.size, send_counts.data(), out.data,
                                    out.size, recv_counts.data(),
                                    static_cast<int32_t>(recv_counts.size()), stream_, s);
  });
}

Status PluginTransport::reducescatter(ConstBuffer in, Buffer out,
                                      std::span<const int64_t> recv_counts, DataType type,
                                      ReduceOp op) {
  HVD_RETURN_IF_ERROR(check_reducescatter(in, out, recv_counts, type, rank_, size_));
  return run("reducescatter", [&](hvd_plugin_status* s) {
    return plugin_->api().reducescatter(handle_, in.data, in.size, out.data, out.size,
                                        recv_counts.data(),
                                        static_cast<int32_t>(recv_counts.size()),
                                        static_cast<int32_t>(type), static_cast<int32_t>(op),
                                        stream_, s);
  });
}

Status PluginTransport::barrier() {
  return run("barrier", [&](hvd_plugin_status* s) {
    return plugin_->api().barrier(handle_, stream_, s);
  });
}

void PluginTransport::abort(Status reason) {
  const auto code = reason.is_ok() ? common::StatusCode::kAborted : reason.code();
  Status aborted(code, std::string(name()) + " transport on rank " + std::to_string(rank_) +
                           " was aborted: " +
                           (reason.message().empty() ? "no reason given" : reason.message()));
  {
    std::lock_guard lock(mutex_);
    if (aborted_) return;  // the first reason wins
    aborted_ = true;
    if (!failure_.is_ok()) {
      aborted = Status(code, aborted.message() + " (after: " + failure_.message() + ")");
    }
    failure_ = aborted;
  }
  plugin_->api().abort(handle_, static_cast<int32_t>(code), aborted.message().c_str());
}

}  // namespace hvd::transports::plugin
