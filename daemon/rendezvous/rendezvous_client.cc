#include "daemon/rendezvous/rendezvous_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <utility>

#include "daemon/rendezvous/join_messages.h"
#include "daemon/rendezvous/round_keys.h"
#include "proto/rpc_auth.h"
#include "proto/rpc_status.h"

namespace hvd::runtime {

namespace {

using Stub = hvd::v1::Rendezvous::Stub;

// Calls that wait on the service side (Join, Get) get this much longer on
// the client, so that the service's own, more precise timeout answers first.
constexpr std::chrono::milliseconds kServerSlack{5000};

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            std::chrono::milliseconds max_reconnect_backoff) {
  if (max_reconnect_backoff.count() <= 0) {
    return grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  }
  grpc::ChannelArguments args;
  const int backoff = static_cast<int>(max_reconnect_backoff.count());
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, backoff);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, std::min(backoff, 100));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, std::min(backoff, 100));
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

RendezvousClient::RendezvousClient(std::string address, std::string token,
                                   std::chrono::milliseconds call_timeout,
                                   std::chrono::milliseconds max_reconnect_backoff)
    : address_(std::move(address)),
      token_(std::move(token)),
      call_timeout_(call_timeout),
      channel_(make_channel(address_, max_reconnect_backoff)),
      stub_(hvd::v1::Rendezvous::NewStub(channel_)) {}

void RendezvousClient::prepare(grpc::ClientContext& context, std::chrono::milliseconds timeout,
                               bool wait_for_ready) const {
  proto::attach_token(context, token_);
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  context.set_wait_for_ready(wait_for_ready);
}

bool RendezvousClient::wait_connected(std::chrono::milliseconds timeout) {
  return channel_->WaitForConnected(std::chrono::system_clock::now() + timeout);
}

Status RendezvousClient::failed(const grpc::Status& status, const char* method) const {
  return proto::from_grpc(status, "rendezvous " + std::string(method) + " at " + address_);
}

Result<JoinResult> RendezvousClient::join(const common::Placement& placement, int64_t pid,
                                          std::chrono::milliseconds timeout, int prev_rank) {
  hvd::v1::JoinRequest request;
  daemon::to_request(placement, &request);
  request.set_pid(pid);
  request.set_timeout_ms(timeout.count());
  request.set_prev_rank(prev_rank);
  hvd::v1::JoinReply reply;
  HVD_RETURN_IF_ERROR(call(&Stub::Join, "Join", request, &reply, timeout + kServerSlack));
  return daemon::from_reply(reply, placement.host);
}

Result<std::optional<int>> RendezvousClient::await_promotion(int spare, const std::string& host,
                                                            int64_t pid,
                                                            std::chrono::milliseconds timeout) {
  hvd::v1::PromotionRequest request;
  request.set_spare(spare);
  request.set_host(host);
  request.set_pid(pid);
  request.set_timeout_ms(timeout.count());
  hvd::v1::PromotionReply reply;
  HVD_RETURN_IF_ERROR(
      call(&Stub::AwaitPromotion, "AwaitPromotion", request, &reply, timeout + kServerSlack));
  if (!reply.promoted()) return std::optional<int>();
  return std::optional<int>(reply.slot());
}

Status RendezvousClient::set(const std::string& key, const std::string& value) {
  hvd::v1::SetRequest request;
  request.set_key(key);
  request.set_value(value);
  hvd::v1::SetReply reply;
  return call(&Stub::Set, "Set", request, &reply, call_timeout_);
}

Result<std::vector<std::string>> RendezvousClient::get(const std::vector<std::string>& keys,
                                                       std::chrono::milliseconds timeout) {
  // Past kMaxKeysPerCall keys, one call per chunk, all within `timeout`.
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (size_t from = 0; from < keys.size() || (keys.empty() && from == 0);) {
    const size_t to = std::min(keys.size(), from + daemon::kMaxKeysPerCall);
    const auto left = std::max(std::chrono::milliseconds(0),
                               std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - Clock::now()));
    hvd::v1::GetRequest request;
    for (size_t i = from; i < to; ++i) request.add_keys(keys[i]);
    request.set_timeout_ms(left.count());
    hvd::v1::GetReply reply;
    HVD_RETURN_IF_ERROR(call(&Stub::Get, "Get", request, &reply, left + kServerSlack));
    if (static_cast<size_t>(reply.values_size()) != to - from) {
      return common::internal_error("rendezvous Get at " + address_ + ": asked for " +
                                    std::to_string(to - from) + " keys, got " +
                                    std::to_string(reply.values_size()) + " values");
    }
    for (auto& v : *reply.mutable_values()) out.push_back(std::move(v));
    if (keys.empty()) break;
    from = to;
  }
  return out;
}

Result<int64_t> RendezvousClient::add(const std::string& key, int64_t delta) {
  hvd::v1::AddRequest request;
  request.set_key(key);
  request.set_delta(delta);
  hvd::v1::AddReply reply;
  HVD_RETURN_IF_ERROR(call(&Stub::Add, "Add", request, &reply, call_timeout_));
  return reply.value();
}

Result<bool> RendezvousClient::check(const std::vector<std::string>& keys) {
  // Past kMaxKeysPerCall keys, one call per chunk.
  for (size_t from = 0; from < keys.size() || (keys.empty() && from == 0);) {
    const size_t to = std::min(keys.size(), from + daemon::kMaxKeysPerCall);
    hvd::v1::CheckRequest request;
    for (size_t i = from; i < to; ++i) request.add_keys(keys[i]);
    hvd::v1::CheckReply reply;
    HVD_RETURN_IF_ERROR(call(&Stub::Check, "Check", request, &reply, call_timeout_));
    if (!reply.ready()) return false;
    if (keys.empty()) break;
    from = to;
  }
  return true;
}

Result<bool> RendezvousClient::check_now(const std::vector<std::string>& keys,
                                         std::chrono::milliseconds timeout) {
  hvd::v1::CheckRequest request;
  for (const auto& key : keys) request.add_keys(key);
  hvd::v1::CheckReply reply;
  HVD_RETURN_IF_ERROR(
      call(&Stub::Check, "Check", request, &reply, timeout, /*wait_for_ready=*/false));
  return reply.ready();
}

Result<std::optional<std::string>> RendezvousClient::get_if_present(
    const std::string& key, std::chrono::milliseconds timeout) {
  auto present = check_now({key}, timeout);
  if (!present.is_ok()) return present.status();
  if (!present.value()) return std::optional<std::string>();
  auto values = get({key}, timeout);
  if (!values.is_ok()) return values.status();
  return std::optional<std::string>(std::move(values.value().front()));
}

Status RendezvousClient::heartbeat(int rank, int64_t round, bool leaving,
                                   std::chrono::milliseconds timeout,
                                   const CommitReport& commits,
                                   const hvd::v1::RankStats* stats,
                                   grpc::ClientContext* context) {
  hvd::v1::HeartbeatRequest request;
  request.set_rank(rank);
  request.set_round(round);
  request.set_leaving(leaving);
  if (commits.held) request.set_commit(*commits.held);
  if (commits.round_start) request.set_round_start(*commits.round_start);
  if (stats != nullptr) *request.mutable_stats() = *stats;
  hvd::v1::HeartbeatReply reply;
  // A beat waits for a reconnect within `timeout` rather than failing at
  // once; the leaving one does not (the service may be gone: hvdrun ended).
  const bool wait_for_ready = !leaving;
  if (context == nullptr) {
    return call(&Stub::Heartbeat, "Heartbeat", request, &reply, timeout, wait_for_ready);
  }
  prepare(*context, timeout, wait_for_ready);
  grpc::Status status = stub_->Heartbeat(context, request, &reply);
  return status.ok() ? Status::ok() : failed(status, "Heartbeat");
}

std::unique_ptr<grpc::ClientReader<hvd::v1::MembershipEvent>> RendezvousClient::watch(
    grpc::ClientContext& context, int slot, int64_t round) {
  proto::attach_token(context, token_);
  context.set_wait_for_ready(true);
  hvd::v1::MembershipWatchRequest request;
  request.set_slot(slot);
  request.set_round(round);
  return stub_->Watch(&context, request);
}

Result<bool> RendezvousClient::remove(const std::string& key) {
  hvd::v1::DeleteRequest request;
  request.set_key(key);
  hvd::v1::DeleteReply reply;
  HVD_RETURN_IF_ERROR(call(&Stub::Delete, "Delete", request, &reply, call_timeout_));
  return reply.deleted();
}

}  // namespace hvd::runtime
