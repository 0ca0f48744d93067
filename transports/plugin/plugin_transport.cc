#include "transports/plugin/plugin_transport.h"

#include <utility>

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
