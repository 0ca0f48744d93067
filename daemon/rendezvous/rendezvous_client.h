// The worker's side of the job's Rendezvous service (proto/hvd/v1/
// rendezvous.proto): Join, and the key-value calls through which transports
// find their peers, as a common::Store. Every call carries the job token and
// a deadline; failures name the method and the service's address.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/placement.h"
#include "common/store.h"
#include "daemon/rendezvous/join_result.h"
#include "hvd/v1/rendezvous.grpc.pb.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

using daemon::JoinResult;

// The commit of its elastic state a worker holds: its job-wide number, and
// whether the sync that restarted its round gave it.
struct HeldCommit {
  int64_t commit = 0;
  bool synced = false;
};

// What a heartbeat tells of the elastic state (HeartbeatRequest.commit,
// round_start): the last commit held, the commit the round restarted from.
struct CommitReport {
  std::optional<int64_t> held;
  std::optional<int64_t> round_start;
};

class RendezvousClient final : public common::Store {
 public:
  // `call_timeout` bounds every call that has no timeout of its own.
  // `max_reconnect_backoff` > 0 caps gRPC's wait between two attempts to
  // reach a service that is not up yet (by default it grows to minutes);
  // workers of a foreign launcher use it, since rank 0 starts the service
  // whenever its process gets there.
  RendezvousClient(std::string address, std::string token, std::chrono::milliseconds call_timeout,
                   std::chrono::milliseconds max_reconnect_backoff = std::chrono::milliseconds(0));

  // True once the service is reachable; waits up to `timeout`.
  bool wait_connected(std::chrono::milliseconds timeout);

  // Joins as `placement` (its rank, or slot in an elastic job; the size,
  // host, local rank and size) and waits (up to `timeout`) until every rank
  // of the world has joined; the world of the round (rank, size, layout, on
  // placement.host) comes back.
  Result<JoinResult> join(const common::Placement& placement, int64_t pid,
                          std::chrono::milliseconds timeout, int prev_rank = -1);

  // A hot spare waits (up to `timeout`) to be promoted: the slot it takes,
  // or nullopt when the time passed first.
  Result<std::optional<int>> await_promotion(int spare, const std::string& host, int64_t pid,
                                             std::chrono::milliseconds timeout);

  // get() and check() of more than kMaxKeysPerCall keys (round_keys.h) take
  // one call per chunk of that many, get's within its one `timeout`.
  Status set(const std::string& key, const std::string& value) override;
  Result<std::vector<std::string>> get(const std::vector<std::string>& keys,
                                       std::chrono::milliseconds timeout) override;
  Result<int64_t> add(const std::string& key, int64_t delta) override;
  Result<bool> check(const std::vector<std::string>& keys) override;
  Result<bool> remove(const std::string& key) override;
  // Like check(), but fails at once (kUnavailable) when the service cannot
  // be reached now instead of waiting for it.
  Result<bool> check_now(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);

  // The value of `key` when it is set now (nullopt when not), without
  // waiting for it; fails at once when the service cannot be reached.
  Result<std::optional<std::string>> get_if_present(const std::string& key,
                                                    std::chrono::milliseconds timeout);

  // One heartbeat of a joined rank (`leaving`: its last, at shutdown); does
  // not wait for an unreachable service beyond `timeout`. `commits`: what
  // the worker holds of the elastic state (daemon/rendezvous/commit_ledger.h);
  // `stats` (when not null): its op counters, for hvdrun's /metrics.
  // A beat waits for the connection up to `timeout`; a leaving one fails at
  // once when there is none.
  // With `context` (fresh, not used before), the call runs on it: another
  // thread may end it early with context->TryCancel().
  Status heartbeat(int rank, int64_t round, bool leaving, std::chrono::milliseconds timeout,
                   const CommitReport& commits = {},
                   const hvd::v1::RankStats* stats = nullptr,
                   grpc::ClientContext* context = nullptr);

  // Opens the membership stream (Rendezvous.Watch) of `slot`, a member of
  // `round`, on `context` (daemon/rendezvous/membership_watch.h): no deadline; the
  // caller ends it with context.TryCancel().
  std::unique_ptr<grpc::ClientReader<hvd::v1::MembershipEvent>> watch(grpc::ClientContext& context,
                                                                      int slot, int64_t round);

  // A failed call's status, naming the method and the service's address.
  Status failed(const grpc::Status& status, const char* method) const;

  const std::string& address() const { return address_; }

 private:
  // Token and deadline on a fresh call; calls wait for the channel to come
  // up (the service may start a moment after the worker) until the deadline.
  void prepare(grpc::ClientContext& context, std::chrono::milliseconds timeout,
               bool wait_for_ready = true) const;
  // One unary call of `method` (named `name` in its failure) on a fresh
  // context prepared so.
  template <typename Request, typename Reply>
  Status call(grpc::Status (hvd::v1::Rendezvous::Stub::*method)(grpc::ClientContext*,
                                                                const Request&, Reply*),
              const char* name, const Request& request, Reply* reply,
              std::chrono::milliseconds timeout, bool wait_for_ready = true) const {
    grpc::ClientContext context;
    prepare(context, timeout, wait_for_ready);
    grpc::Status status = (stub_.get()->*method)(&context, request, reply);
    return status.ok() ? Status::ok() : failed(status, name);
  }

  std::string address_;
  std::string token_;
  std::chrono::milliseconds call_timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<hvd::v1::Rendezvous::Stub> stub_;
};

}  // namespace hvd::runtime
