#include "daemon/rendezvous_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "common/round_keys.h"
#include "proto/rpc_auth.h"
#include "proto/rpc_status.h"

namespace hvd::daemon {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds kDefaultWait{30'000};
constexpr milliseconds kMaxWait{3'600'000};
constexpr size_t kMaxKeys = 1024;
constexpr size_t kMaxKeyBytes = 4096;

// min(requested, the call's deadline), 30 s when not positive, at most 1 h.
milliseconds wait_budget(const grpc::ServerContext& ctx, int64_t timeout_ms) {
  milliseconds wait = timeout_ms > 0 ? milliseconds(std::min<int64_t>(timeout_ms, kMaxWait.count()))
                                     : kDefaultWait;
  const auto deadline = ctx.deadline();
  const auto now = std::chrono::system_clock::now();
  if (deadline <= now) return milliseconds(0);
  if (deadline - now < wait) {
    wait = std::chrono::duration_cast<milliseconds>(deadline - now);
  }
  return wait;
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

}  // namespace

RendezvousService::RendezvousService(std::string job_token, int world_size)
    : token_(std::move(job_token)), membership_(world_size), liveness_(world_size) {}

void RendezvousService::enable_elastic(int min_size) {
  rounds_ = std::make_unique<ElasticRounds>(membership_.size(), min_size);
}

void RendezvousService::close() {
  membership_.close();
  if (rounds_) rounds_->close();
  store_.close();
}

grpc::Status RendezvousService::Join(grpc::ServerContext* ctx, const hvd::v1::JoinRequest* req,
                                     hvd::v1::JoinReply* reply) {
  auto auth = proto::check_token(*ctx, token_, "Rendezvous.Join");
  if (!auth.ok()) return auth;
  common::Placement placement;
  if (req->local_size() > 0) placement = {req->local_rank(), req->local_size()};
  auto cancelled = [ctx] { return ctx->IsCancelled(); };
  const auto budget = wait_budget(*ctx, req->timeout_ms());
  auto result = rounds_ ? rounds_->join(req->rank(), req->prev_rank(), req->host(), budget,
                                        cancelled)
                        : membership_.join(req->rank(), req->size(), req->host(), req->pid(),
                                           budget, cancelled, placement);
  if (!result.is_ok()) {
    spdlog::debug("rendezvous: Join of rank {} from {} failed: {}", req->rank(), req->host(),
                  result.status().to_string());
    return proto::to_grpc(result.status());
  }
  reply->set_rank(result->rank);
  reply->set_size(result->size);
  reply->set_epoch(result->epoch);
  reply->set_local_rank(result->local_rank);
  reply->set_local_size(result->local_size);
  reply->set_cross_rank(result->cross_rank);
  reply->set_cross_size(result->cross_size);
  // Liveness by slot: the rank a worker was launched as (the same as its
  // rank outside elastic jobs).
  liveness_.joined(rounds_ ? req->rank() : result->rank, std::chrono::steady_clock::now());
  if (result->epoch > 0) {
    // Every rank has left the round before this one: its keys go.
    size_t removed = store_.remove_prefix(common::round_key_prefix(result->epoch - 1));
    if (removed > 0) {
      spdlog::debug("rendezvous: deleted {} key(s) of round {}", removed, result->epoch - 1);
    }
  }
  return grpc::Status::OK;
}

grpc::Status RendezvousService::Set(grpc::ServerContext* ctx, const hvd::v1::SetRequest* req,
                                    hvd::v1::SetReply* /*reply*/) {
  auto auth = proto::check_token(*ctx, token_, "Rendezvous.Set");
  if (!auth.ok()) return auth;
  auto s = check_key(req->key());
  if (!s.ok()) return s;
  return proto::to_grpc(store_.set(req->key(), req->value()));
}

grpc::Status RendezvousService::Get(grpc::ServerContext* ctx, const hvd::v1::GetRequest* req,
                                    hvd::v1::GetReply* reply) {
  auto auth = proto::check_token(*ctx, token_, "Rendezvous.Get");
  if (!auth.ok()) return auth;
  auto s = check_keys(req->keys());
  if (!s.ok()) return s;
  std::vector<std::string> keys(req->keys().begin(), req->keys().end());
  auto result = store_.get(keys, wait_budget(*ctx, req->timeout_ms()),
                           [ctx] { return ctx->IsCancelled(); });
  if (!result.is_ok()) return proto::to_grpc(result.status());
  for (auto& value : result.value()) reply->add_values(std::move(value));
  return grpc::Status::OK;
}

grpc::Status RendezvousService::Add(grpc::ServerContext* ctx, const hvd::v1::AddRequest* req,
                                    hvd::v1::AddReply* reply) {
  auto auth = proto::check_token(*ctx, token_, "Rendezvous.Add");
  if (!auth.ok()) return auth;
  auto s = check_key(req->key());
  if (!s.ok()) return s;
  auto result = store_.add(req->key(), req->delta());
  if (!result.is_ok()) return proto::to_grpc(result.status());
  reply->set_value(result.value());
  return grpc::Status::OK;
}

grpc::Status RendezvousService::Check(grpc::ServerContext* ctx, const hvd::v1::CheckRequest* req,
                                      hvd::v1::CheckReply* reply) {
  auto auth = proto::check_token(*ctx, token_, "Rendezvous.Check");
  if (!auth.ok()) return auth;
  auto s = check_keys(req->keys());
  if (!s.ok()) return s;
  std::vector<std::string> keys(req->keys().begin(), req->keys().end());
  auto result = store_.check(keys);
  if (!result.is_ok()) return proto::to_grpc(result.status());
  reply->set_ready(result.value());
  return grpc::Status::OK;
}

grpc::Status RendezvousService::Delete(grpc::ServerContext* ctx,
                                       const hvd::v1::DeleteRequest* req,
                                       hvd::v1::DeleteReply* reply) {
  auto auth = proto::check_token(*ctx, token_, "Rendezvous.Delete");
  if (!auth.ok()) return auth;
  auto s = check_key(req->key());
  if (!s.ok()) return s;
  auto result = store_.remove(req->key());
  if (!result.is_ok()) return proto::to_grpc(result.status());
  reply->set_deleted(result.value());
  return grpc::Status::OK;
}

grpc::Status RendezvousService::Heartbeat(grpc::ServerContext* ctx,
                                          const hvd::v1::HeartbeatRequest* req,
                                          hvd::v1::HeartbeatReply* reply) {
  auto auth = proto::check_token(*ctx, token_, "Rendezvous.Heartbeat");
  if (!auth.ok()) return auth;
  if (req->rank() < 0 || req->rank() >= membership_.size()) {
    return invalid("rank " + std::to_string(req->rank()) + " is out of range for size " +
                   std::to_string(membership_.size()));
  }
  if (req->leaving()) {
    liveness_.left(req->rank());
  } else {
    liveness_.beat(req->rank(), std::chrono::steady_clock::now());
  }
  reply->set_epoch(rounds_ ? rounds_->round() : membership_.epoch());
  reply->set_round_pending(rounds_ != nullptr && rounds_->pending(req->rank()));
  return grpc::Status::OK;
}

}  // namespace hvd::daemon
