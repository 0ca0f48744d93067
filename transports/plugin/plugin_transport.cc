#include "transports/plugin/plugin_transport.h"

#include <utility>
#include <vector>

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

Status PluginTransport::async_error() {
  if (Status latched = failure(); !latched.is_ok()) return latched;
  if (!plugin_->has_async_error()) return Status::ok();
  hvd_plugin_status status{};
  const int32_t code = plugin_->api().async_error(handle_, &status);
  if (code == HVD_OK) return Status::ok();
  return fail(from_plugin_status(code, status,
                                 std::string(name()) + " asynchronous error on rank " +
                                     std::to_string(rank_)));
}

common::Result<std::unique_ptr<Transport>> PluginTransport::shrink(
    const TransportContext& context, std::span<const int> excluded) {
  const std::string what = "transport '" + std::string(name()) + "' on rank " +
                           std::to_string(rank_) + " could not shrink";
  if (!plugin_->has_shrink()) {
    return common::unimplemented(what + ": the plugin (ABI version " +
                                 std::to_string(plugin_->abi_version()) + ") has no shrink");
  }
  // A latched failure (an asynchronous error, a failed op) does not stop
  // the shrink: the plugin ends the collectives still running first.
  if (context.size != size_ - static_cast<int>(excluded.size())) {
    return common::invalid_argument(what + ": the new world has " + std::to_string(context.size) +
                                    " ranks, not " + std::to_string(size_) + " less " +
                                    std::to_string(excluded.size()) + " excluded");
  }
  std::vector<int32_t> ranks(excluded.begin(), excluded.end());
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size_ || (i > 0 && ranks[i] <= ranks[i - 1]) ||
        ranks[i] == rank_) {
      return common::invalid_argument(what + ": excluded rank " + std::to_string(ranks[i]) +
                                      " is not a peer of this world in ascending order");
    }
  }
  hvd_plugin_world world = make_world(context);
  hvd_plugin_status status{};
  void* handle = nullptr;
  const int32_t code = plugin_->api().shrink(handle_, &world, ranks.data(),
                                             static_cast<int32_t>(ranks.size()), &handle, &status);
  HVD_RETURN_IF_ERROR(from_plugin_status(code, status, what));
  if (handle == nullptr) return common::internal_error(what + ": the plugin gave no handle");
  return std::unique_ptr<Transport>(
      new PluginTransport(plugin_, handle, context.rank, context.size));
}

PluginTransport::~PluginTransport() { plugin_->api().destroy(handle_); }

template <typename Call>
Status PluginTransport::invoke(const char* op, Call&& plugin_op) {
  hvd_plugin_status status{};
  const int32_t code = plugin_op(&status);
  // HVD_ERR_INVALID_ARGUMENT becomes kInvalidArgument: a refusal that ran
  // nothing on any rank (TransportBase fails that op only). Any other
  // failure stays set.
  return from_plugin_status(code, status,
                            std::string(name()) + " " + op + " on rank " + std::to_string(rank_));
}

Status PluginTransport::do_allreduce(Buffer data, DataType type, ReduceOp op) {
  return invoke("allreduce", [&](hvd_plugin_status* s) {
    return plugin_->api().allreduce(handle_, data.data, data.size, static_cast<int32_t>(type),
                                    static_cast<int32_t>(op), stream_, s);
  });
}

Status PluginTransport::do_allgatherv(ConstBuffer in, Buffer out,
                                     std::span<const int64_t> counts) {
  return invoke("allgatherv", [&](hvd_plugin_status* s) {
    return plugin_->api().allgatherv(handle_, in.data, in.size, out.data, out.size, counts.data(),
                                     static_cast<int32_t>(counts.size()), stream_, s);
  });
}

Status PluginTransport::do_broadcast(Buffer data, int root) {
  return invoke("broadcast", [&](hvd_plugin_status* s) {
    return plugin_->api().broadcast(handle_, data.data, data.size, root, stream_, s);
  });
}

Status PluginTransport::do_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts,
                                     Buffer out, std::span<const int64_t> recv_counts) {
  return invoke("alltoallv", [&](hvd_plugin_status* s) {
    return plugin_->api().alltoallv(handle_, in.data, in.size, send_counts.data(), out.data,
                                    out.size, recv_counts.data(),
                                    static_cast<int32_t>(recv_counts.size()), stream_, s);
  });
}

Status PluginTransport::do_reducescatter(ConstBuffer in, Buffer out,
                                         std::span<const int64_t> recv_counts, DataType type,
                                         ReduceOp op) {
  return invoke("reducescatter", [&](hvd_plugin_status* s) {
    return plugin_->api().reducescatter(handle_, in.data, in.size, out.data, out.size,
                                        recv_counts.data(),
                                        static_cast<int32_t>(recv_counts.size()),
                                        static_cast<int32_t>(type), static_cast<int32_t>(op),
                                        stream_, s);
  });
}

Status PluginTransport::do_barrier() {
  return invoke("barrier", [&](hvd_plugin_status* s) {
    return plugin_->api().barrier(handle_, stream_, s);
  });
}

Status PluginTransport::aborted_status(const Status& reason, const Status& earlier) const {
  std::string message = std::string(name()) + " transport on rank " + std::to_string(rank_) +
                        " was aborted: " +
                        (reason.message().empty() ? "no reason given" : reason.message());
  if (!earlier.is_ok()) message += " (after: " + earlier.message() + ")";
  return Status(reason.is_ok() ? common::StatusCode::kAborted : reason.code(), message);
}

void PluginTransport::on_abort(const Status& /*reason*/, const Status& aborted) {
  plugin_->api().abort(handle_, static_cast<int32_t>(aborted.code()), aborted.message().c_str());
}

}  // namespace hvd::transports::plugin
