// Everything one initialized world owns: who we are (WorldInfo), the
// resolved settings, the rendezvous client and the CPU transport. Created by
// init() (joins the job, connects the transport); destroying it is shutdown.
// A later init() joins again and gets the next epoch, hence fresh keys.
//
// Collectives are serialised by a mutex and run on the calling thread, so
// programs that call them from several threads must issue them in the same
// order on every rank. The async engine (queue, negotiation, fusion) will
// take the transport over and lift that restriction.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "common/status.h"
#include "config/settings.h"
#include "runtime/rendezvous_client.h"
#include "runtime/world.h"
#include "transports/transport.h"

namespace hvd::runtime {

class Runtime {
 public:
  static Result<std::unique_ptr<Runtime>> init(const EnvLookup& lookup);
  ~Runtime();

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const WorldInfo& world() const { return world_; }
  int64_t epoch() const { return epoch_; }

  // The C ABI's collectives, with its raw codes and element counts.
  Status allreduce(void* data, int64_t count, int32_t dtype, int32_t op);
  Status broadcast(void* data, int64_t count, int32_t dtype, int root);
  // counts: one element count per rank, or null when every rank gives `count`.
  Status allgather(const void* in, int64_t count, int32_t dtype, void* out,
                   const int64_t* counts);
  Status barrier();

 private:
  Runtime(WorldInfo world, config::Settings settings);
  Status start();  // join, then connect the CPU transport

  WorldInfo world_;
  config::Settings settings_;
  int64_t epoch_ = 0;
  std::unique_ptr<RendezvousClient> rendezvous_;  // null in a world of one without a launcher
  std::unique_ptr<transports::Transport> cpu_;    // declared last: destroyed first
  std::mutex mu_;                                 // one collective at a time
};

}  // namespace hvd::runtime
