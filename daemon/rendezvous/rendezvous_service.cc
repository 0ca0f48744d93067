#include "daemon/rendezvous/rendezvous_service.h"

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include "daemon/rendezvous/join_messages.h"
#include "daemon/rendezvous/round_keys.h"
#include "daemon/rendezvous/waiting_call.h"
#include "daemon/rendezvous/watch_stream.h"
#include "proto/refusal_log.h"
#include "proto/rpc_auth.h"
#include "proto/rpc_status.h"

namespace hvd::daemon {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds kDefaultWait{30'000};
constexpr milliseconds kMaxWait{3'600'000};
constexpr size_t kMaxKeys = kMaxKeysPerCall;  // round_keys.h
constexpr size_t kMaxKeyBytes = 4096;
// The largest request of each method (docs/security.md). Set: a value of
// gloo's full-mesh rendezvous holds one address (136 bytes) per rank, 8.5
// MiB for the largest world (65536). Get and Check: kMaxKeys keys of
// kMaxKeyBytes. The others carry a key, a host name and numbers.
constexpr int kKeysRequestBytes = static_cast<int>(kMaxKeys * (kMaxKeyBytes + 8) + 64);
const std::map<std::string, int> kRendezvousLimits = {
    {"Join", 8 << 10},     {"Set", 16 << 20},    {"Get", kKeysRequestBytes},
    {"Add", 8 << 10},      {"Check", kKeysRequestBytes}, {"Delete", 8 << 10},
    {"Heartbeat", 4 << 10}, {"Watch", 1 << 10},  {"AwaitPromotion", 8 << 10}};
// How long a forming round waits for a promoted spare that was waiting (it
// joins within milliseconds; on a loaded host it may take longer, and then
// joins the round after).
constexpr milliseconds kSpareJoinGrace{3'000};

// min(requested, the call's deadline), 30 s when not positive, at most 1 h.
milliseconds wait_budget(std::chrono::system_clock::time_point deadline, int64_t timeout_ms) {
  milliseconds wait = timeout_ms > 0 ? milliseconds(std::min<int64_t>(timeout_ms, kMaxWait.count()))
                                     : kDefaultWait;
  const auto now = std::chrono::system_clock::now();
  if (deadline <= now) return milliseconds(0);
  if (deadline - now < wait) {
    wait = std::chrono::duration_cast<milliseconds>(deadline - now);
  }
  return wait;
}

// The call as the handlers see it.
RendezvousService::Call call_of(const grpc::CallbackServerContext& ctx) {
  RendezvousService::Call call;
  const auto& metadata = ctx.client_metadata();
  auto it = metadata.find(proto::kAuthMetadataKey);
  if (it != metadata.end()) call.authorization = std::string(it->second.data(), it->second.size());
  call.deadline = ctx.deadline();
  return call;
}

grpc::ServerUnaryReactor* finished(grpc::CallbackServerContext* ctx, grpc::Status status) {
  auto* reactor = ctx->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

// A waiting call: the handler `start` gets what finishes it and gives back
// what cancels its wait.
template <typename Start>
grpc::ServerUnaryReactor* waiting(Start start) {
  auto* call = new WaitingCall();
  call->set_cancel(start(call->finisher()));
  call->release();
  return call;
}

grpc::Status invalid(std::string message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, std::move(message)};
}

grpc::Status check_key(const std::string& key) {
  if (key.empty()) return invalid("empty key");
  if (key.size() > kMaxKeyBytes) {
    return invalid("key of " + std::to_string(key.size()) + " bytes is longer than the limit of " +
                   std::to_string(kMaxKeyBytes));
  }
  return grpc::Status::OK;
}

grpc::Status check_keys(const google::protobuf::RepeatedPtrField<std::string>& keys) {
  if (keys.empty()) return invalid("no keys given");
  if (static_cast<size_t>(keys.size()) > kMaxKeys) {
    return invalid(std::to_string(keys.size()) + " keys in one call; the limit is " +
                   std::to_string(kMaxKeys));
  }
  for (const auto& key : keys) {
    auto s = check_key(key);
    if (!s.ok()) return s;
  }
  return grpc::Status::OK;
}

// A call a worker's credential does not allow (WorkerRights).
grpc::Status denied(const char* method, const std::string& why) {
  std::string text = std::string("Rendezvous.") + method + " refused: " + why;
  proto::log_refusal(text);
  return {grpc::StatusCode::PERMISSION_DENIED, std::move(text)};
}

grpc::Status unknown_caller(const char* method) {
  return {grpc::StatusCode::UNAUTHENTICATED,
          std::string("Rendezvous.") + method + " refused: wrong credentials"};
}

// A write the store refused: another slot's key (PERMISSION_DENIED), over a
// quota (RESOURCE_EXHAUSTED); others as they are.
grpc::Status store_refusal(const char* method, const common::Status& status) {
  const std::string text = std::string("Rendezvous.") + method + " refused: " + status.message();
  switch (status.code()) {
    case common::StatusCode::kUnauthenticated:
      proto::log_refusal(text);
      return {grpc::StatusCode::PERMISSION_DENIED, text};
    case common::StatusCode::kFailedPrecondition:
      proto::log_refusal(text);
      return {grpc::StatusCode::RESOURCE_EXHAUSTED, text};
    default: return proto::to_grpc(status);
  }
}

}  // namespace

ServerOptions rendezvous_server_options() {
  ServerOptions options;
  options.stream_window_bytes = kRendezvousStreamWindowBytes;
  // A ping unanswered for 5 s closed the connections of a 64k-rank job's
  // busy clients in the middle of its key exchange (issue 31); a vanished
  // worker is found by its agent and its heartbeats anyway.
  options.keepalive_ms = kRendezvousKeepaliveMs;
  options.keepalive_timeout_ms = kRendezvousKeepaliveTimeoutMs;
  return options;
}

StoreQuotas store_quotas(int slots) {
  const size_t n = static_cast<size_t>(std::max(slots, 1));
  constexpr size_t kMiB = size_t{1} << 20;
  constexpr size_t kKeysPerSlot = 4096;
  StoreQuotas q;
  q.per_slot = {8 * kMiB + n * 1024, kKeysPerSlot};
  q.job = {n * q.per_slot.bytes + 8 * kMiB, n * kKeysPerSlot + 4096};
  return q;
}

RendezvousService::RendezvousService(std::string job_token, int world_size)
    : credentials_(std::move(job_token)),
      gate_(hvd::v1::Rendezvous::service_full_name(), kRendezvousLimits,
            [this](const std::string& method, std::optional<std::string_view> authorization,
                   std::string_view peer) { return admit(method, authorization, peer); },
            {"Set"}),
      rounds_(std::make_unique<Rounds>(Rounds::Rules::fixed_size(world_size), &events_)),
      liveness_(world_size),
      rights_(world_size, spares_) {
  use_quotas(world_size);
}

void RendezvousService::use_quotas(int slots) {
  const StoreQuotas quotas = store_quotas(slots);
  store_.set_quotas(quotas.job, quotas.per_slot);
}

grpc::Status RendezvousService::admit(const std::string& method,
                                      std::optional<std::string_view> authorization,
                                      std::string_view peer) const {
  std::optional<Caller> caller;
  grpc::Status status = proto::check_bearer(
      authorization,
      [&](std::string_view credential) {
        caller = credentials_.caller(credential);
        return caller.has_value();
      },
      method, peer);
  if (!status.ok() || method != "Rendezvous.Set") return status;
  const auto refuse = [&](grpc::StatusCode code, const std::string& why) {
    std::string text = method + " refused: " + why;
    proto::log_refusal(text);
    return grpc::Status(code, std::move(text));
  };
  if (auto why = rights_.barred(*caller)) return refuse(grpc::StatusCode::RESOURCE_EXHAUSTED, *why);
  // One Set in flight per caller (set_lanes.h): this may wait for the one
  // before, on a thread of the gate's own. The Set handler gives it back.
  const int lane = rights_.slot_of(*caller).value_or(KvStore::kJob);
  const common::Status entered = set_lanes_.enter(lane);
  if (!entered.is_ok()) {
    return refuse(entered.code() == common::StatusCode::kUnavailable
                      ? grpc::StatusCode::UNAVAILABLE
                      : grpc::StatusCode::RESOURCE_EXHAUSTED,
                  entered.message());
  }
  // The Set before it may have got the caller barred while this one waited.
  if (auto why = rights_.barred(*caller)) {
    set_lanes_.leave(lane);
    return refuse(grpc::StatusCode::RESOURCE_EXHAUSTED, *why);
  }
  return grpc::Status::OK;
}

std::optional<Caller> RendezvousService::caller_of(const Call& call) const {
  if (!call.authorization) return std::nullopt;
  auto credential = proto::bearer_credential(*call.authorization);
  if (!credential) return std::nullopt;
  return credentials_.caller(*credential);
}

struct RendezvousService::Wait {
  std::mutex mu;
  uint64_t timer = 0;
  bool done = false;
};

std::shared_ptr<RendezvousService::Wait> RendezvousService::start_wait(Done& done) {
  auto wait = std::make_shared<Wait>();
  waiting_.fetch_add(1, std::memory_order_relaxed);
  done = [this, wait, finish = std::move(done)](grpc::Status status) {
    uint64_t timer = 0;
    {
      std::lock_guard lock(wait->mu);
      wait->done = true;
      std::swap(timer, wait->timer);
    }
    if (timer != 0) timer_.cancel(timer);
    waiting_.fetch_sub(1, std::memory_order_relaxed);
    finish(std::move(status));
  };
  return wait;
}

RendezvousService::Cancel RendezvousService::arm(const std::shared_ptr<Wait>& wait,
                                                 milliseconds budget,
                                                 std::function<void(bool)> give_up) {
  {
    std::lock_guard lock(wait->mu);
    if (wait->done) return {};
  }
  const uint64_t timer =
      timer_.at(WaitTimer::Clock::now() + budget, [give_up] { give_up(/*timed_out=*/true); });
  bool done = false;
  {
    std::lock_guard lock(wait->mu);
    done = wait->done;
    if (!done) wait->timer = timer;
  }
  if (done) timer_.cancel(timer);
  return [give_up] { give_up(/*timed_out=*/false); };
}

void RendezvousService::enable_elastic(int min_size, int slots) {
  rounds_ = std::make_unique<Rounds>(
      Rounds::Rules::elastic(rounds_->rules().initial_size, min_size, slots), &events_);
  rights_.set_slots(rounds_->rules().slots);
  use_quotas(rounds_->rules().slots);
}

void RendezvousService::close() {
  set_lanes_.close();
  spares_.close();
  rounds_->close();
  store_.close();
  events_.close();
}

void RendezvousService::hosts_changed(std::vector<std::string> added_hosts,
                                      std::vector<std::string> removed_hosts,
                                      std::vector<int> removed_slots) {
  if (!added_hosts.empty()) {
    MembershipChange added;
    added.round = rounds_->round();
    added.hosts = std::move(added_hosts);
    const int64_t seq = events_.publish(added);
    spdlog::info("rendezvous: host(s) added: {} (event {})", fmt::join(added.hosts, ", "), seq);
  }
  if (removed_hosts.empty() && removed_slots.empty()) return;
  MembershipChange removed;
  removed.kind = MembershipChange::Kind::kRemoved;
  auto removal = rounds_->lost(removed_slots);
  removed.round = removal.round;
  removed.member_slots = std::move(removal.members);
  removed.member_ranks = std::move(removal.ranks);
  if (removal.round >= 0 && !removed.member_slots.empty()) {
    // Keys its lost members did not write will never come: whoever waits
    // for them (a transport of that round still connecting) stops now and
    // rejoins (runtime.cc), rather than waiting for its deadline.
    const std::string prefix = round_key_prefix(removal.round);
    const std::string reason = "round " + std::to_string(removal.round) + " lost slot(s) " +
                               fmt::format("{}", fmt::join(removed.member_slots, ", "));
    store_.abort_prefix(prefix, reason);
    (void)store_.set(round_lost_key(removal.round), reason);
  }
  for (int slot : removed_slots) liveness_.left(slot);
  removed.hosts = std::move(removed_hosts);
  removed.slots = std::move(removed_slots);
  const int64_t seq = events_.publish(removed);
  if (removed.hosts.empty()) {
    spdlog::info("rendezvous: worker(s) lost: slot(s) {} (event {})",
                 fmt::join(removed.slots, ", "), seq);
  } else {
    spdlog::info("rendezvous: host(s) removed: {} with slot(s) {} (event {})",
                 fmt::join(removed.hosts, ", "), fmt::join(removed.slots, ", "), seq);
  }
}

bool RendezvousService::promote_spare(int spare, int slot) {
  const bool waits = spares_.promote(spare, slot);
  promotions_.fetch_add(1, std::memory_order_relaxed);
  if (waits) {
    rounds_->expect(slot, kSpareJoinGrace);
    // When its grace ends, the round forms without it (if it waits only
    // for it): no waiting join wakes up to look.
    timer_.at(WaitTimer::Clock::now() + kSpareJoinGrace + milliseconds(1),
              [this] { rounds_->recheck(); });
  }
  spdlog::info("rendezvous: spare {} promoted into slot {}{}", spare, slot,
               waits ? "" : " (it has not reached hvd.init() yet)");
  return waits;
}

RendezvousService::Cancel RendezvousService::join(const Call& call,
                                                  const hvd::v1::JoinRequest& req,
                                                  hvd::v1::JoinReply* reply, Done done) {
  auto refuse = [&](grpc::Status status) {
    done(std::move(status));
    return Cancel();
  };
  auto auth = gate_.admitted("Join", req);
  if (!auth.ok()) return refuse(auth);
  const auto caller = caller_of(call);
  if (!caller) return refuse(unknown_caller("Join"));
  if (auto why = rights_.may_join(*caller, req.rank())) return refuse(denied("Join", *why));
  const Rounds::Request request{from_request(req), req.prev_rank(), req.pid()};
  // hvdrun tells a starting worker that waits for its round from one that
  // has not reached hvd.init() (docs/elastic.md, "Liveness before the round").
  if (req.rank() >= 0 && req.rank() < rounds_->rules().slots) liveness_.arrived(req.rank());
  const auto budget = wait_budget(call.deadline, req.timeout_ms());
  auto wait = start_wait(done);
  auto joined = [this, reply, done, requested = req.rank(),
                 host = req.host()](common::Result<JoinResult> result) {
    if (!result.is_ok()) {
      spdlog::debug("rendezvous: Join of rank {} from {} failed: {}", requested, host,
                    result.status().to_string());
      done(proto::to_grpc(result.status()));
      return;
    }
    to_reply(*result, reply);
    // Liveness by slot: the rank a worker was launched as (its rank in a
    // fixed-size job, where slot -1 asked for the lowest one free).
    const int slot = requested >= 0 ? requested : result->rank;
    liveness_.joined(slot, std::chrono::steady_clock::now());
    rights_.joined(slot, result->round);
    if (result->round > 0) {
      // Every rank has left the round before this one: its keys go.
      size_t removed = store_.remove_prefix(round_key_prefix(result->round - 1));
      if (removed > 0) {
        spdlog::debug("rendezvous: deleted {} key(s) of round {}", removed, result->round - 1);
      }
    }
    done(grpc::Status::OK);
  };
  const uint64_t ticket = rounds_->join_async(request, std::move(joined));
  if (ticket == 0) return {};
  return arm(wait, budget, [this, ticket, budget](bool timed_out) {
    rounds_->give_up(ticket, timed_out ? Rounds::GiveUp::kTimeout : Rounds::GiveUp::kCancelled,
                     budget);
  });
}

grpc::Status RendezvousService::set(const Call& call, hvd::v1::SetRequest& req) {
  const auto caller = caller_of(call);
  if (!caller) return unknown_caller("Set");
  // The caller's lane, taken on the call's headers (admit()), is given back
  // when this returns, whatever it answers.
  struct LeaveLane {
    SetLanes& lanes;
    int lane;
    ~LeaveLane() { lanes.leave(lane); }
  } leave{set_lanes_, rights_.slot_of(*caller).value_or(KvStore::kJob)};
  auto auth = gate_.admitted("Set", req);
  if (!auth.ok()) return auth;
  auto s = check_key(req.key());
  if (!s.ok()) return s;
  // The value is the handler's to consume: it moves into the store, or,
  // refused, is freed now rather than when gRPC destroys the request (after
  // the reply: a flood's next request may have arrived by then).
  std::string value = std::move(*req.mutable_value());
  const size_t bytes = value.size();
  grpc::Status done;
  if (auto why = rights_.may_write(*caller, req.key())) {
    done = denied("Set", *why);
  } else {
    const int writer = rights_.slot_of(*caller).value_or(KvStore::kJob);
    done = store_refusal("Set", store_.set_by(writer, req.key(), std::move(value)));
  }
  if (!done.ok()) rights_.refused(*caller, bytes, done.error_message());
  return done;
}

RendezvousService::Cancel RendezvousService::get(const Call& call, const hvd::v1::GetRequest& req,
                                                 hvd::v1::GetReply* reply, Done done) {
  auto auth = gate_.admitted("Get", req);
  if (auth.ok()) auth = check_keys(req.keys());
  if (!auth.ok()) {
    done(auth);
    return {};
  }
  std::vector<std::string> keys(req.keys().begin(), req.keys().end());
  const auto budget = wait_budget(call.deadline, req.timeout_ms());
  auto wait = start_wait(done);
  const uint64_t ticket =
      store_.get_async(keys, [reply, done](common::Result<std::vector<std::string>> result) {
        if (!result.is_ok()) {
          done(proto::to_grpc(result.status()));
          return;
        }
        for (auto& value : result.value()) reply->add_values(std::move(value));
        done(grpc::Status::OK);
      });
  if (ticket == 0) return {};
  return arm(wait, budget, [this, ticket, budget](bool timed_out) {
    store_.give_up(ticket, timed_out ? KvStore::GiveUp::kTimeout : KvStore::GiveUp::kCancelled,
                   budget);
  });
}

grpc::Status RendezvousService::add(const Call& call, const hvd::v1::AddRequest& req,
                                    hvd::v1::AddReply* reply) {
  auto auth = gate_.admitted("Add", req);
  if (!auth.ok()) return auth;
  auto s = check_key(req.key());
  if (!s.ok()) return s;
  const auto caller = caller_of(call);
  if (!caller) return unknown_caller("Add");
  if (auto why = rights_.may_write(*caller, req.key())) return denied("Add", *why);
  const int writer = rights_.slot_of(*caller).value_or(KvStore::kJob);
  auto result = store_.add_by(writer, req.key(), req.delta());
  if (!result.is_ok()) return store_refusal("Add", result.status());
  reply->set_value(result.value());
  return grpc::Status::OK;
}

grpc::Status RendezvousService::check(const Call& /*call*/, const hvd::v1::CheckRequest& req,
                                      hvd::v1::CheckReply* reply) {
  auto auth = gate_.admitted("Check", req);
  if (!auth.ok()) return auth;
  auto s = check_keys(req.keys());
  if (!s.ok()) return s;
  std::vector<std::string> keys(req.keys().begin(), req.keys().end());
  auto result = store_.check(keys);
  if (!result.is_ok()) return proto::to_grpc(result.status());
  reply->set_ready(result.value());
  return grpc::Status::OK;
}

grpc::Status RendezvousService::remove(const Call& call, const hvd::v1::DeleteRequest& req,
                                       hvd::v1::DeleteReply* reply) {
  auto auth = gate_.admitted("Delete", req);
  if (!auth.ok()) return auth;
  auto s = check_key(req.key());
  if (!s.ok()) return s;
  const auto caller = caller_of(call);
  if (!caller) return unknown_caller("Delete");
  if (auto why = rights_.may_write(*caller, req.key())) return denied("Delete", *why);
  const int writer = rights_.slot_of(*caller).value_or(KvStore::kJob);
  auto result = store_.remove_by(writer, req.key());
  if (!result.is_ok()) return store_refusal("Delete", result.status());
  reply->set_deleted(result.value());
  return grpc::Status::OK;
}

grpc::Status RendezvousService::heartbeat(const Call& call, const hvd::v1::HeartbeatRequest& req,
                                          hvd::v1::HeartbeatReply* reply) {
  auto auth = gate_.admitted("Heartbeat", req);
  if (!auth.ok()) return auth;
  const int bound = rounds_->rules().slots;
  if (req.rank() < 0 || req.rank() >= bound) {
    return invalid("rank " + std::to_string(req.rank()) + " is out of range for size " +
                   std::to_string(bound));
  }
  const auto caller = caller_of(call);
  if (!caller) return unknown_caller("Heartbeat");
  if (auto why = rights_.may_heartbeat(*caller, req.rank())) {
    return denied("Heartbeat", *why);
  }
  if (req.leaving()) {
    liveness_.left(req.rank());
  } else {
    liveness_.beat(req.rank(), std::chrono::steady_clock::now());
    if (req.has_round_start() && req.round_start() >= 0) {
      commits_.restarted(req.rank(), req.round(), req.round_start());
    }
    if (req.has_commit() && req.commit() >= 0) {
      commits_.held(req.rank(), req.round(), req.commit());
      rank_stats_.committed(req.rank(), req.commit());
    }
    if (req.has_stats()) {
      rank_stats_.reported(req.rank(), req.round(), req.stats(),
                           std::chrono::steady_clock::now());
    }
  }
  reply->set_round(rounds_->round());
  return grpc::Status::OK;
}

RendezvousService::Cancel RendezvousService::await_promotion(const Call& call,
                                                             const hvd::v1::PromotionRequest& req,
                                                             hvd::v1::PromotionReply* reply,
                                                             Done done) {
  auto refuse = [&](grpc::Status status) {
    done(std::move(status));
    return Cancel();
  };
  auto auth = gate_.admitted("AwaitPromotion", req);
  if (!auth.ok()) return refuse(auth);
  // Spares are an elastic job's (hvdrun --spares), numbered after its slots.
  const int slots = rounds_->rules().slots;
  if (!elastic() || req.spare() < slots) {
    return refuse(invalid("spare " + std::to_string(req.spare()) +
                          (elastic() ? " is below the job's " + std::to_string(slots) + " slots"
                                     : " in a job that is not elastic")));
  }
  const auto caller = caller_of(call);
  if (!caller) return refuse(unknown_caller("AwaitPromotion"));
  if (auto why = rights_.may_await_promotion(*caller, req.spare())) {
    return refuse(denied("AwaitPromotion", *why));
  }
  const auto budget = wait_budget(call.deadline, req.timeout_ms());
  auto wait = start_wait(done);
  const uint64_t ticket =
      spares_.await_async(req.spare(), [reply, done](common::Result<std::optional<int>> slot) {
        if (!slot.is_ok()) {
          done(proto::to_grpc(slot.status()));
          return;
        }
        reply->set_promoted(slot->has_value());
        if (slot->has_value()) reply->set_slot(**slot);
        done(grpc::Status::OK);
      });
  if (ticket == 0) return {};
  return arm(wait, budget, [this, ticket](bool) { spares_.give_up(ticket); });
}

grpc::ServerUnaryReactor* RendezvousService::Join(grpc::CallbackServerContext* ctx,
                                                  const hvd::v1::JoinRequest* req,
                                                  hvd::v1::JoinReply* reply) {
  return waiting([&](Done done) { return join(call_of(*ctx), *req, reply, std::move(done)); });
}

grpc::ServerUnaryReactor* RendezvousService::Set(grpc::CallbackServerContext* ctx,
                                                 const hvd::v1::SetRequest* req,
                                                 hvd::v1::SetReply* /*reply*/) {
  return finished(ctx, set(call_of(*ctx), const_cast<hvd::v1::SetRequest&>(*req)));
}

grpc::ServerUnaryReactor* RendezvousService::Get(grpc::CallbackServerContext* ctx,
                                                 const hvd::v1::GetRequest* req,
                                                 hvd::v1::GetReply* reply) {
  return waiting([&](Done done) { return get(call_of(*ctx), *req, reply, std::move(done)); });
}

grpc::ServerUnaryReactor* RendezvousService::Add(grpc::CallbackServerContext* ctx,
                                                 const hvd::v1::AddRequest* req,
                                                 hvd::v1::AddReply* reply) {
  return finished(ctx, add(call_of(*ctx), *req, reply));
}

grpc::ServerUnaryReactor* RendezvousService::Check(grpc::CallbackServerContext* ctx,
                                                   const hvd::v1::CheckRequest* req,
                                                   hvd::v1::CheckReply* reply) {
  return finished(ctx, check(call_of(*ctx), *req, reply));
}

grpc::ServerUnaryReactor* RendezvousService::Delete(grpc::CallbackServerContext* ctx,
                                                    const hvd::v1::DeleteRequest* req,
                                                    hvd::v1::DeleteReply* reply) {
  return finished(ctx, remove(call_of(*ctx), *req, reply));
}

grpc::ServerUnaryReactor* RendezvousService::Heartbeat(grpc::CallbackServerContext* ctx,
                                                       const hvd::v1::HeartbeatRequest* req,
                                                       hvd::v1::HeartbeatReply* reply) {
  return finished(ctx, heartbeat(call_of(*ctx), *req, reply));
}

grpc::ServerUnaryReactor* RendezvousService::AwaitPromotion(grpc::CallbackServerContext* ctx,
                                                            const hvd::v1::PromotionRequest* req,
                                                            hvd::v1::PromotionReply* reply) {
  return waiting(
      [&](Done done) { return await_promotion(call_of(*ctx), *req, reply, std::move(done)); });
}

grpc::ServerWriteReactor<hvd::v1::MembershipEvent>* RendezvousService::Watch(
    grpc::CallbackServerContext* ctx, const hvd::v1::MembershipWatchRequest* req) {
  auto auth = gate_.admitted("Watch", *req);
  if (!auth.ok()) return new WatchStream(std::move(auth));
  auto subscription = events_.subscribe();
  // What it must know already: a worker that waits to join its round.
  if (auto waiting = rounds_->waiting(req->slot())) subscription->deliver(std::move(*waiting));
  // And members of its round lost before it watched (between its
  // transports' connect and this call): its collectives cannot complete.
  if (auto lost = rounds_->lost_members(req->round()); !lost.empty()) {
    MembershipChange removed;
    removed.kind = MembershipChange::Kind::kRemoved;
    removed.round = req->round();
    removed.slots = lost;
    removed.member_ranks = rounds_->ranks_in_round(lost, req->round());
    removed.member_slots = std::move(lost);
    subscription->deliver(std::move(removed));
  }
  spdlog::debug("rendezvous: slot {} of round {} watches membership from {}", req->slot(),
                req->round(), ctx->peer());
  return new WatchStream(std::move(subscription), req->round());
}

}  // namespace hvd::daemon
