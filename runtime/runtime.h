// Everything one initialized world owns: who we are (WorldInfo), the
// resolved settings, the rendezvous client, the handle table, the timeline
// and the process sets with their engines (id 0: the global set, over the
// CPU transport). Created by init() (joins the job, connects the transport,
// starts the global set's engine thread); shutdown() (or destruction) stops
// the engines, failing pending ops with "hvd is shutting down". A later
// init() joins again and gets the next round, hence fresh keys and engines.
//
// User threads only enqueue (docs/threading.md); the blocking collectives
// are enqueue + wait, so any thread may call anything in any order, and
// ranks may submit named ops in different orders.
//
// runtime.cc holds, in this order, the lifecycle (init, join, connect,
// shutdown), the timeline, the op entry points (enqueue and the blocking
// calls) and the process-set calls.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "common/status.h"
#include "config/settings.h"
#include "hvd/c_api.h"
#include "runtime/discovery/foreign_job.h"
#include "runtime/discovery/world.h"
#include "runtime/engine/handle_table.h"
#include "runtime/engine/process_sets.h"
#include "runtime/engine/active_timeline.h"
#include "runtime/engine/world_abort.h"
#include "runtime/fault_point.h"
#include "runtime/fault_store.h"
#include "runtime/gpu_transport.h"
#include "daemon/rendezvous/heartbeat.h"
#include "daemon/rendezvous/membership_watch.h"
#include "daemon/rendezvous/rendezvous_client.h"
#include "transports/registry.h"
#include "transports/transport.h"

namespace hvd::runtime {

class Runtime {
 public:
  // Handle ids start at `first_handle` (see HandleTable). `generation`
  // counts the runtimes this process had before: the timeline_filename
  // setting's file gets the suffix ".<generation>" after the first, so that
  // a re-init does not overwrite the timeline of the runtime before it.
  static Result<std::unique_ptr<Runtime>> init(const EnvLookup& lookup, int64_t first_handle = 1,
                                               int64_t generation = 0);
  ~Runtime();

  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const WorldInfo& world() const { return world_; }
  int64_t round() const { return round_; }
  engine::HandleTable& handles() { return handles_; }

  // ---- The engine (docs/engine.md) ----
  // A handle for the op; argument errors, a set this rank is not a member
  // of, a name already in flight or a stopped engine are returned at once.
  Result<int64_t> enqueue(const hvd_op& op);
  // The ops negotiated and completed together; handles[0..n) on success.
  // (The C ABI reads a caller's structs with runtime/op_abi.h first.)
  Status enqueue_group(std::span<const hvd_op> ops, int64_t* handles);

  // ---- The blocking collectives of the C ABI (enqueue + wait) ----
  Status allreduce(void* data, int64_t count, int32_t dtype, int32_t op);
  Status broadcast(void* data, int64_t count, int32_t dtype, int root);
  // counts: one element count per rank, or null when every rank gives `count`.
  Status allgather(const void* in, int64_t count, int32_t dtype, void* out,
                   const int64_t* counts);
  Status barrier();

  // ---- Process sets: add and remove are collective over every rank ----
  Result<int32_t> add_process_set(std::span<const int32_t> ranks);
  Status remove_process_set(int32_t id);
  // kNotFound for an unknown id.
  Result<std::shared_ptr<const engine::ProcessSet>> process_set(int32_t id) const;

  // ---- Timeline: written by rank 0 only (a no-op elsewhere) ----
  Status start_timeline(const std::string& path);
  Status stop_timeline();

  // Stops every engine (process sets first, the global set last) and closes
  // the transports. Idempotent; later enqueues fail. After abort() it takes
  // no collective step: the engines have ended, or end at once.
  void shutdown();

  // Fails the world now (docs/engine.md, "Abort"), from any thread, without
  // waiting for peers: the transport of every process set (the global set's
  // carries the negotiation of process-set calls too) is aborted, so every
  // pending op and every later one fails promptly with
  // "hvd was aborted on rank R: <reason>" (the reason's code; kAborted when
  // it is OK). Idempotent: the first reason wins. Elastic recovery calls it
  // when the world changed, and an engine whose transport fails calls it so
  // that the other sets' calls end too. shutdown() then init() (a new
  // Runtime) builds the next world.
  void abort(common::Status reason);
  bool aborted() const { return abort_.aborted(); }

  // Elastic jobs: the membership changes (MembershipWatch::kAdded: a worker
  // waits to join; kRemoved: hosts left) told since the last call; 0 in
  // other jobs.
  int host_updates() { return membership_watch_ ? membership_watch_->take_updates() : 0; }
  // This worker holds `commit` of its elastic state (hvd_elastic_committed):
  // told to the job's rendezvous on the heartbeats (at once without them).
  // Nothing without a rendezvous or after shutdown().
  void commit_held(HeldCommit commit);

  // The counters of a set's engine on this rank (tests, diagnostics).
  Result<engine::EngineStats> stats(int32_t set_id) const;

 private:
  Runtime(WorldInfo world, config::Settings settings, int64_t first_handle,
          transports::TransportRegistry registry, GpuTransportChoice gpu);
  Status start(int64_t generation);  // join, connect, start the global engine
  Status join();                     // the rendezvous (hosted by rank 0 under a foreign launcher)
  // Joins the next round as launched_ (its slot), waiting up to `timeout`.
  Status join_round(std::chrono::milliseconds timeout);
  // join() and the CPU transport of the round; in an elastic job, a round
  // that lost a member before its transports were up is left for the next.
  Result<std::unique_ptr<transports::Transport>> join_and_connect();
  // Elastic jobs: why the rendezvous marked this worker's round lost (a
  // member died), waiting for the mark up to the heartbeat timeout + 2 s;
  // nullopt when it is not (or the rendezvous cannot be reached).
  std::optional<std::string> round_lost() const;
  transports::TransportContext context_for(const std::string& key_prefix, int rank,
                                           int size) const;
  // The CPU transport of a world (the set of `key_prefix`); `abort`, when
  // given, ends the connect early.
  Result<std::unique_ptr<transports::Transport>> connect(
      const std::string& key_prefix, int rank, int size,
      std::shared_ptr<transports::ConnectAbort> abort = nullptr) const;
  // Elastic jobs, from the membership watch: members of this worker's round
  // were removed (`ranks`: theirs in the round, ascending; empty when the
  // service did not say). Ends the round's connect when one is in progress,
  // else abort()s the world, the global set's GPU transport shrinking to the
  // survivors first where it can (runtime/device_shrink.h).
  void members_removed(const common::Status& why, const std::vector<int>& ranks);
  // `key_prefix` is the set's, as given to connect(): its GPU transport, if
  // it has device ops, connects under key_prefix + "gpu/".
  std::shared_ptr<engine::SetEngine> make_engine(int32_t id, const std::vector<int>& ranks,
                                                 int rank, const std::string& key_prefix,
                                                 std::unique_ptr<transports::Transport> transport);
  Result<std::shared_ptr<const engine::ProcessSet>> member_set(int32_t id) const;
  // A hot spare (HVD_SPARE) waits for hvdrun to promote it, then is the
  // worker of the slot it got (new to the job's rounds).
  Status await_promotion();
  // enqueue + wait + release; `read`, when given, sees the finished op's
  // output first (when it succeeded) and its Status is the call's.
  Status run(const hvd_op& op,
             const std::function<Status(const engine::FinishedOp&)>& read = nullptr);
  // Checks that every rank makes the same process-set call (an allgather
  // over the global set); the error names the ranks that differ.
  Status agree(const char* call, std::vector<int64_t> description);

  WorldInfo world_;
  config::Settings settings_;
  // Built once (the built-in transports and the transport_plugins setting's):
  // a plugin's library, once loaded, stays known to it.
  const transports::TransportRegistry registry_;
  const GpuTransportChoice gpu_;  // the gpu_transport setting, checked against registry_
  int64_t round_ = 0;
  int slot_ = -1;  // with a rendezvous: HVD_RANK (elastic jobs: the slot, not the round's rank)
  common::Placement launched_;  // where the launcher's variables placed this worker (its slot)
  FaultPoints faults_;          // HVD_TEST_FAULT (tests only; inert when unset)
  std::unique_ptr<ForeignJob> foreign_;           // set when a foreign launcher started us
  bool joined_ = false;                           // start() got through the join
  bool started_ = false;                          // start() completed
  std::unique_ptr<RendezvousClient> rendezvous_;  // null in a world of one without a launcher
  std::unique_ptr<FaultStore> fault_store_;       // over rendezvous_ when HVD_TEST_FAULT is set
  std::unique_ptr<Heartbeat> heartbeat_;          // from the join to shutdown (with a rendezvous)
  // Elastic jobs: watching this worker's round from its join to shutdown
  // (stopped there; destroyed with the Runtime; replaced when the worker
  // joins another round in start()).
  std::unique_ptr<MembershipWatch> membership_watch_;
  std::mutex connecting_mu_;
  std::shared_ptr<transports::ConnectAbort> connecting_;  // while the round's transports connect
  // Elastic jobs: this process's rank in the last round it joined, across
  // shutdown/init (-1: none yet).
  static inline std::atomic<int> last_elastic_rank_{-1};
  // A hot spare's slot once hvdrun promoted it (-1: not promoted), across
  // shutdown/init like the rank above.
  static inline std::atomic<int> promoted_slot_{-1};
  engine::HandleTable handles_;
  engine::ActiveTimeline timeline_;
  engine::WorldAbort abort_;      // before sets_: engines call abort() until they stop
  engine::ProcessSetTable sets_;  // declared after what the engines use: stopped first

  std::mutex process_set_mu_;     // one add/remove at a time (ids follow call order)
  int32_t next_set_id_ = 1;
  int64_t process_set_calls_ = 0;
  std::mutex shutdown_mu_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace hvd::runtime
