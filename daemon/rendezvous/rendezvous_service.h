// gRPC Rendezvous service of one job: its rounds (Join) plus key-value
// store, heartbeats and the membership watch stream. Every call must carry
// the job token or a worker credential derived from it
// (worker_credentials.h; UNAUTHENTICATED otherwise), checked by the
// service's call gate on the call's headers, before its body is read: serve
// it with GrpcServer, which installs the gate (served otherwise, it refuses
// every call). Requests over their method's limit (docs/security.md) get
// RESOURCE_EXHAUSTED. A worker credential allows what WorkerRights says
// (PERMISSION_DENIED otherwise) and its slot's keys within the store's
// quotas (store_quotas(); RESOURCE_EXHAUSTED naming the quota). Handlers
// only translate; the state lives in Rounds (the one round algorithm: a
// static job's rounds are of a fixed size), Liveness, KvStore,
// MembershipEvents, HotSpares, CommitLedger and WorkerRights.
//
// Served with gRPC's callback API (issue 31): a call that waits (a Join for
// its round, a Get for its keys, a spare for its promotion, a Watch stream)
// holds no thread and polls nothing. The state that answers it completes it
// (the round forms, the key arrives, the spare is promoted, an event is
// published, close()); its deadline is one entry of the service's
// WaitTimer (one thread for all); a client that goes away ends its wait.
// The other calls complete on the thread that received them. The handlers
// below (join(), get(), ...) are the calls without gRPC's call objects
// (the fuzz target drives them).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/rendezvous/commit_ledger.h"
#include "daemon/rendezvous/hot_spares.h"
#include "daemon/rendezvous/kv_store.h"
#include "daemon/rendezvous/liveness.h"
#include "daemon/rendezvous/membership_events.h"
#include "daemon/rendezvous/rank_stats.h"
#include "daemon/rendezvous/rounds.h"
#include "daemon/rendezvous/set_lanes.h"
#include "daemon/rendezvous/wait_timer.h"
#include "daemon/rendezvous/worker_credentials.h"
#include "daemon/rendezvous/worker_rights.h"
#include "hvd/v1/rendezvous.grpc.pb.h"
#include "proto/call_gate.h"
#include "proto/grpc_server.h"

namespace hvd::daemon {

// How the Rendezvous service is served (GrpcServer::start): receive windows
// of kRendezvousStreamWindowBytes that are never grown, so that a call
// refused on its headers (no credentials, or a worker whose Set calls are
// barred: WorkerRights::barred) costs the server at most a window of its
// body, not megabytes. Values of a few hundred KiB take a few round trips.
inline constexpr int kRendezvousStreamWindowBytes = 64 * 1024;
// And keepalive pings every 60 s answered within 60 s (10 s and 5 s for the
// other services), so that a client busy with thousands of calls, or a
// worker starved of CPU on a crowded host, keeps its connection (pings
// unanswered for 20 s closed connections of a 1024-rank job on 2 cores:
// their heartbeats then failed for 50 s). A vanished worker is found by its
// agent and its heartbeats, not by pings.
inline constexpr int kRendezvousKeepaliveMs = 60'000;
inline constexpr int kRendezvousKeepaliveTimeoutMs = 60'000;
ServerOptions rendezvous_server_options();

// The store's quotas for a job of `slots` slots (elastic: --max-np): per
// slot 8 MiB + 1 KiB per slot (gloo's full-mesh value of a slot holds 136
// bytes per rank) and 4096 keys; for the whole job, those of every slot
// plus 8 MiB and 4096 keys for the job's own keys.
struct StoreQuotas {
  KvStore::Quota job;
  KvStore::Quota per_slot;
};
StoreQuotas store_quotas(int slots);

class RendezvousService final : public hvd::v1::Rendezvous::CallbackService,
                                public proto::GatedService {
 public:
  RendezvousService(std::string job_token, int world_size);

  proto::CallGate& call_gate() override { return gate_; }

  // The job's rounds: of the world size, fixed, unless enable_elastic().
  const Rounds& rounds() const { return *rounds_; }
  // Elastic jobs: the rounds' size may change, between `min_size` and
  // `slots` (--max-np; at least the world size) workers known by their slot
  // (call before serving). lost(slot): that worker died.
  void enable_elastic(int min_size, int slots = 0);
  bool elastic() const { return !rounds_->rules().fixed; }
  void lost(int slot) { rounds_->lost(slot); }
  // The round being formed, when workers wait to join one that holds the
  // job up (Rounds::forming).
  std::optional<Rounds::Forming> forming() const { return rounds_->forming(); }
  const Liveness& liveness() const { return liveness_; }
  // Stops watching `rank` until it joins again (its worker was replaced).
  void forget(int rank) { liveness_.left(rank); }
  KvStore& store() { return store_; }
  // The commits of the job's elastic state its workers hold, from their
  // heartbeats: hvdrun learns from it that state was lost.
  CommitLedger& commits() { return commits_; }
  // The workers' op counters from their heartbeats (hvdrun --metrics-port).
  const RankStats& rank_stats() const { return rank_stats_; }
  // The current round: the last round formed, -1 before the first.
  int64_t round() const { return rounds_->round(); }

  // For hvdrun's launcher: the job's hosts changed (host discovery found
  // new hosts, or an agent/host was lost). Any thread, any time; returns at
  // once. Every worker watching (Rendezvous.Watch: elastic workers) gets
  //  - an ADDED event naming `added_hosts`, when not empty: the members
  //    reset at their next commit (HostsUpdatedInterrupt) so that workers
  //    started there can join the next round;
  //  - a REMOVED event naming `removed_hosts` and `removed_slots` (the slots,
  //    HVD_RANK, of the workers that ran there), when either is not empty.
  //    The removed slots are lost() at once: the forming round no longer
  //    waits for them, liveness stops watching them (no "stopped
  //    responding" for a host known to be gone), and the workers of the
  //    current round of which some were members fail their pending
  //    collectives at once and rejoin without them.
  // A worker learns that a replacement waits to join without this call
  // (Rounds publishes it). hvdrun also calls it with no hosts and
  // the slot of a worker that died (a REMOVED event of that slot alone), so
  // that its round's survivors stop waiting for it in any transport.
  void hosts_changed(std::vector<std::string> added_hosts, std::vector<std::string> removed_hosts,
                     std::vector<int> removed_slots);
  // Hot spares (hvdrun --spares): promotes `spare` into `slot`. When the
  // spare waits in AwaitPromotion, the round forming waits for it too (up
  // to a grace period): call it before the slot's predecessor is lost().
  // True when the spare waits.
  bool promote_spare(int spare, int slot);
  // Spares promoted so far (promote_spare calls; hvdrun's /metrics).
  int64_t promotions() const { return promotions_.load(std::memory_order_relaxed); }
  // The spares waiting in AwaitPromotion now (they reached hvd.init()).
  std::vector<int> waiting_spares() const { return spares_.waiting(); }
  // Open Watch streams (tests, diagnostics).
  size_t watchers() const { return events_.subscribers(); }

  // Wakes blocked Join and Get calls and ends Watch streams (kCancelled) so
  // the server can stop.
  void close();

  // A call as its handler sees it: the caller's "authorization" header
  // (nullopt: none) and the call's deadline.
  struct Call {
    std::optional<std::string> authorization;
    std::chrono::system_clock::time_point deadline = std::chrono::system_clock::time_point::max();
  };
  // Ends a call with its status: called once, from any thread, after the
  // reply is written.
  using Done = std::function<void(grpc::Status)>;
  // Ends a waiting call's wait (its client went away): it completes with
  // kCancelled, unless it completed already.
  using Cancel = std::function<void()>;
  // The waiting calls: `done` now or later; the Cancel of the wait.
  Cancel join(const Call& call, const hvd::v1::JoinRequest& req, hvd::v1::JoinReply* reply,
              Done done);
  Cancel get(const Call& call, const hvd::v1::GetRequest& req, hvd::v1::GetReply* reply,
             Done done);
  Cancel await_promotion(const Call& call, const hvd::v1::PromotionRequest& req,
                         hvd::v1::PromotionReply* reply, Done done);
  // Set consumes its request's value.
  grpc::Status set(const Call& call, hvd::v1::SetRequest& req);
  grpc::Status add(const Call& call, const hvd::v1::AddRequest& req, hvd::v1::AddReply* reply);
  grpc::Status check(const Call& call, const hvd::v1::CheckRequest& req,
                     hvd::v1::CheckReply* reply);
  grpc::Status remove(const Call& call, const hvd::v1::DeleteRequest& req,
                      hvd::v1::DeleteReply* reply);
  grpc::Status heartbeat(const Call& call, const hvd::v1::HeartbeatRequest& req,
                         hvd::v1::HeartbeatReply* reply);
  // Waiting calls and open Watch streams now (tests).
  size_t waiting_calls() const { return waiting_.load(std::memory_order_relaxed); }

  // gRPC's callback methods.
  grpc::ServerUnaryReactor* Join(grpc::CallbackServerContext* ctx, const hvd::v1::JoinRequest* req,
                                 hvd::v1::JoinReply* reply) override;
  grpc::ServerUnaryReactor* Set(grpc::CallbackServerContext* ctx, const hvd::v1::SetRequest* req,
                                hvd::v1::SetReply* reply) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const hvd::v1::GetRequest* req,
                                hvd::v1::GetReply* reply) override;
  grpc::ServerUnaryReactor* Add(grpc::CallbackServerContext* ctx, const hvd::v1::AddRequest* req,
                                hvd::v1::AddReply* reply) override;
  grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* ctx,
                                  const hvd::v1::CheckRequest* req,
                                  hvd::v1::CheckReply* reply) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx,
                                   const hvd::v1::DeleteRequest* req,
                                   hvd::v1::DeleteReply* reply) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx,
                                      const hvd::v1::HeartbeatRequest* req,
                                      hvd::v1::HeartbeatReply* reply) override;
  grpc::ServerWriteReactor<hvd::v1::MembershipEvent>* Watch(
      grpc::CallbackServerContext* ctx, const hvd::v1::MembershipWatchRequest* req) override;
  grpc::ServerUnaryReactor* AwaitPromotion(grpc::CallbackServerContext* ctx,
                                           const hvd::v1::PromotionRequest* req,
                                           hvd::v1::PromotionReply* reply) override;

 private:
  // The gate's check of a call's headers: a credential of the job, and no
  // Set of a worker whose Set calls are barred.
  grpc::Status admit(const std::string& method, std::optional<std::string_view> authorization,
                     std::string_view peer) const;
  // Who the call comes from (its credential, which the gate admitted).
  std::optional<Caller> caller_of(const Call& call) const;
  void use_quotas(int slots);
  // Runs `give_up` at `deadline` (the wait's budget) unless the wait ended:
  // wraps `done` so that it cancels the timer. The Cancel gives up at once.
  struct Wait;
  std::shared_ptr<Wait> start_wait(Done& done);
  Cancel arm(const std::shared_ptr<Wait>& wait, std::chrono::milliseconds budget,
             std::function<void(bool timed_out)> give_up);

  const JobCredentials credentials_;
  proto::CallGate gate_;  // checks each call's credential once, on its headers
  MembershipEvents events_;         // before rounds_, which publishes to it
  std::unique_ptr<Rounds> rounds_;  // never null; elastic rules after enable_elastic()
  Liveness liveness_;
  KvStore store_;
  HotSpares spares_;
  CommitLedger commits_;
  RankStats rank_stats_;
  std::atomic<int64_t> promotions_{0};
  WorkerRights rights_;  // after spares_, which it reads
  std::atomic<size_t> waiting_{0};
  // One Set in flight per caller, taken by the gate (admit() is const).
  mutable SetLanes set_lanes_;
  // The waiting calls' deadlines. Last: destroyed first, so that no
  // deadline runs once the rest is gone.
  WaitTimer timer_;
};

}  // namespace hvd::daemon
