// A Transport over a loaded plugin's C functions (transport_plugin.h): the
// shared argument checks first, then the plugin op on its opaque handle,
// its error code and message turned into a Status. The first failure or
// abort stays set and fails every later call, whatever the plugin does;
// a refusal (HVD_ERR_INVALID_ARGUMENT: the op ran nothing, as nccl refuses
// int16) fails that op only, like the shared argument checks.
// Holds the LoadedPlugin, so the library stays loaded while it lives.
// A StreamedTransport: set_stream() gives the CUDA stream (hvd_op.stream)
// that the next ops pass to the plugin (null, the default: the plugin's
// default stream; a CPU plugin ignores it).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "transports/device_work.h"
#include "transports/plugin/plugin_loader.h"
#include "transports/registry.h"

namespace hvd::transports::plugin {

class PluginTransport final : public Transport, public StreamedTransport {
 public:
  // The plugin's create() for this world; its Status when it fails.
  static common::Result<std::unique_ptr<Transport>> connect(std::shared_ptr<LoadedPlugin> plugin,
                                                            const TransportContext& context);
  ~PluginTransport() override;

  std::string_view name() const override { return plugin_->name(); }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allreduce(Buffer data, DataType type, ReduceOp op) override;
  Status allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) override;
  Status broadcast(Buffer data, int root) override;
  Status alltoallv(ConstBuffer in, std::span<const int64_t> send_counts, Buffer out,
                   std::span<const int64_t> recv_counts) override;
  Status reducescatter(ConstBuffer in, Buffer out, std::span<const int64_t> recv_counts,
                       DataType type, ReduceOp op) override;
  Status barrier() override;
  void abort(Status reason) override;
  void set_stream(void* stream) override { stream_ = stream; }

 private:
  PluginTransport(std::shared_ptr<LoadedPlugin> plugin, void* handle, int rank, int size)
      : plugin_(std::move(plugin)), handle_(handle), rank_(rank), size_(size) {}

  // The stored failure, if any; else the op's outcome (stored if it failed).
  template <typename Call>
  Status run(const char* op, Call&& call);
  Status failure() const;

  std::shared_ptr<LoadedPlugin> plugin_;
  void* handle_;
  int rank_;
  int size_;
  void* stream_ = nullptr;  // engine thread only, like the ops
  mutable std::mutex mutex_;
  Status failure_;       // guarded by mutex_
  bool aborted_ = false;  // guarded by mutex_
};

}  // namespace hvd::transports::plugin
