#include "daemon/rendezvous/membership_watch.h"

#include <pthread.h>

#include <algorithm>
#include <string>

#include "common/logging.h"

namespace hvd::runtime {

namespace {

constexpr std::chrono::milliseconds kFirstPause{100};
constexpr std::chrono::milliseconds kMaxPause{2000};

// Errors that another attempt cannot mend.
bool permanent(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::UNIMPLEMENTED:
      return true;
    default:
      return false;
  }
}

std::string join_list(const google::protobuf::RepeatedField<int32_t>& slots) {
  std::string out;
  for (int s : slots) out += (out.empty() ? "" : ", ") + std::to_string(s);
  return out;
}

std::string join_list(const google::protobuf::RepeatedPtrField<std::string>& hosts) {
  std::string out;
  for (const auto& h : hosts) out += (out.empty() ? "" : ", ") + h;
  return out;
}

}  // namespace

MembershipWatch::MembershipWatch(RendezvousClient& client, int slot, int64_t round,
                                 OnMembersRemoved on_members_removed)
    : client_(client),
      slot_(slot),
      round_(round),
      on_members_removed_(std::move(on_members_removed)) {
  thread_ = std::thread([this] { run(); });
}

MembershipWatch::~MembershipWatch() { stop(); }

void MembershipWatch::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (call_ != nullptr) call_->TryCancel();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MembershipWatch::run() {
  pthread_setname_np(pthread_self(), "hvd-watch");
  auto pause = kFirstPause;
  while (watch_once()) {
    std::unique_lock lock(mu_);
    if (wake_.wait_for(lock, pause, [&] { return stopping_; })) return;
    pause = std::min(pause * 2, kMaxPause);
  }
}

bool MembershipWatch::watch_once() {
  grpc::ClientContext context;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    call_ = &context;
  }
  auto reader = client_.watch(context, slot_, round_);
  hvd::v1::MembershipEvent event;
  while (reader->Read(&event)) handle(event);
  const grpc::Status status = reader->Finish();
  {
    std::lock_guard lock(mu_);
    call_ = nullptr;
    if (stopping_) return false;
  }
  const auto why = client_.failed(status, "Watch");
  if (permanent(status.error_code())) {
    spdlog::warn("membership watch of slot {} ends: {}", slot_, why.message());
    return false;
  }
  spdlog::debug("membership watch of slot {}: {}; watching again", slot_, why.message());
  return true;
}

void MembershipWatch::handle(const hvd::v1::MembershipEvent& event) {
  if (event.round() < round_) return;  // told of a round before ours: ours reflects it
  const bool removed = event.kind() == hvd::v1::MembershipEvent::REMOVED;
  spdlog::debug("membership event {} of round {}: {} hosts [{}] slots [{}]", event.sequence(),
                event.round(), removed ? "removed" : "added", join_list(event.hosts()),
                join_list(event.slots()));
  updates_.fetch_or(removed ? kRemoved : kAdded);
  if (!removed || event.round() != round_ || event.member_slots().empty()) return;
  if (members_removed_) return;
  members_removed_ = true;
  std::string hosts = join_list(event.hosts());
  on_members_removed_(
      common::aborted("slot(s) " + join_list(event.member_slots()) + " of rendezvous round " +
                      std::to_string(round_) + " left the job" +
                      (hosts.empty() ? "" : " (host(s) " + hosts + ")")),
      std::vector<int>(event.member_ranks().begin(), event.member_ranks().end()));
}

}  // namespace hvd::runtime
