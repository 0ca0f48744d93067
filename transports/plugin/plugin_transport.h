// A Transport over a loaded plugin's C functions (transport_plugin.h): the
// shared argument checks first, then the plugin op on its opaque handle,
// its error code and message turned into a Status. The first failure or
// abort stays set and fails every later call, whatever the plugin does
// (TransportBase); a refusal (HVD_ERR_INVALID_ARGUMENT: the op ran nothing,
// as nccl refuses int16) fails that op only, like the shared argument checks.
// Holds the LoadedPlugin, so the library stays loaded while it lives.
// A StreamedTransport: set_stream() gives the CUDA stream (hvd_op.stream)
// that the next ops pass to the plugin (null, the default: the plugin's
// default stream; a CPU plugin ignores it).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "transports/device_work.h"
#include "transports/plugin/plugin_loader.h"
#include "transports/registry.h"
#include "transports/shrinkable_transport.h"
#include "transports/transport_base.h"

namespace hvd::transports::plugin {

class PluginTransport final : public TransportBase,
                              public StreamedTransport,
                              public ShrinkableTransport {
 public:
  // The plugin's create() for this world; its Status when it fails.
  static common::Result<std::unique_ptr<Transport>> connect(std::shared_ptr<LoadedPlugin> plugin,
                                                            const TransportContext& context);
  ~PluginTransport() override;

  std::string_view name() const override { return plugin_->name(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void set_stream(void* stream) override { stream_ = stream; }
  // The plugin's async_error (ABI version 4; OK without one), latched like
  // a failed op: it fails this transport for good, and once latched every
  // later call (this one included) returns the latched failure.
  Status async_error() override;

  // The plugin's in-place shrink (ABI version 4; ShrinkableTransport): a
  // transport that failed asynchronously may shrink (NCCL_SHRINK_ABORT), an
  // aborted one may not (the plugin refuses). kUnimplemented when the
  // plugin has no shrink (older ABI, NULL, or HVD_ERR_UNIMPLEMENTED: the
  // loaded library lacks it); the caller then aborts and connects anew.
  common::Result<std::unique_ptr<Transport>> shrink(const TransportContext& context,
                                                    std::span<const int> excluded) override;
  bool can_shrink() const override { return plugin_->has_shrink(); }

 private:
  PluginTransport(std::shared_ptr<LoadedPlugin> plugin, void* handle, int rank, int size)
      : plugin_(std::move(plugin)), handle_(handle), rank_(rank), size_(size) {}

  Status do_allreduce(Buffer data, DataType type, ReduceOp op) override;
  Status do_allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) override;
  Status do_broadcast(Buffer data, int root) override;
  Status do_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                      std::span<const int64_t> recv_counts) override;
  Status do_reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                          DataType type, ReduceOp op) override;
  Status do_barrier() override;
  // "<name> transport on rank R was aborted: <reason, or 'no reason
  // given'>", then " (after: <earlier>)" after a failure.
  Status aborted_status(const Status& reason, const Status& earlier) const override;
  // The plugin's abort(), with the aborted Status's code and message.
  void on_abort(const Status& reason, const Status& aborted) override;

  // Makes the plugin call `plugin_op` (given the status to fill in): its
  // outcome as a Status naming the transport, `op` and this rank.
  template <typename Call>
  Status invoke(const char* op, Call&& plugin_op);

  std::shared_ptr<LoadedPlugin> plugin_;
  void* handle_;
  int rank_;
  int size_;
  void* stream_ = nullptr;  // engine thread only, like the ops
};

}  // namespace hvd::transports::plugin
