#include "transports/shm/peer_watch.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>

namespace hvd::transports::shm {

namespace {

uint64_t own_pid_namespace() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? st.st_ino : 0;
}

// The state letter of /proc/<pid>/stat ("R", "S", "T"...), empty if unreadable.
std::string proc_state(int pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return "";
  auto paren = line.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos || paren + 2 >= line.size()) return "";
  return line.substr(paren + 2, 1);
}

std::string state_words(const std::string& letter) {
  if (letter == "T") return "stopped";
  if (letter == "t") return "stopped by a debugger";
  if (letter == "Z") return "exited";
  if (letter == "D") return "in uninterruptible sleep";
  if (letter == "R") return "running";
  if (letter == "S") return "sleeping";
  return letter.empty() ? "gone" : "state " + letter;
}

}  // namespace

PeerWatch::PeerWatch(const Segment& segment, int rank)
    : segment_(segment),
      rank_(rank),
      pids_(static_cast<size_t>(segment.size()), 0),
      pidfds_(static_cast<size_t>(segment.size()), -1) {
  uint64_t namespace_here = own_pid_namespace();
  int self = getpid();
  for (int peer = 0; peer < segment.size(); ++peer) {
    const RankSlot& slot = segment.slot(peer);
    int pid = std::atomic_ref<const int32_t>(slot.pid).load(std::memory_order_acquire);
    if (peer == rank || pid <= 0 || pid == self || slot.pid_namespace != namespace_here ||
        namespace_here == 0) {
      continue;
    }
    pids_[static_cast<size_t>(peer)] = pid;
    pidfds_[static_cast<size_t>(peer)] = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  }
}

PeerWatch::~PeerWatch() {
  for (int fd : pidfds_) {
    if (fd >= 0) ::close(fd);
  }
}

bool PeerWatch::has_died(int peer) const {
  auto p = static_cast<size_t>(peer);
  if (pids_[p] == 0) return false;
  if (pidfds_[p] < 0) return kill(pids_[p], 0) != 0 && errno == ESRCH;
  pollfd fd{pidfds_[p], POLLIN, 0};
  return poll(&fd, 1, 0) > 0 && (fd.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
}

common::Status PeerWatch::check_one(int peer) const {
  if (peer == rank_) return common::Status::ok();
  // A peer that left saying why (then perhaps exited) is reported by its
  // reason; one that vanished without a word, as dead.
  const RankSlot& slot = segment_.slot(peer);
  if (std::atomic_ref<const uint32_t>(slot.state).load(std::memory_order_acquire) == kSlotLeft) {
    int blamed = std::atomic_ref<const int32_t>(slot.blamed).load(std::memory_order_relaxed) - 1;
    if (blamed >= 0 && blamed != rank_) {
      // Its failure, passed on: every rank reports the same cause.
      auto code = static_cast<common::StatusCode>(
          std::atomic_ref<const int32_t>(slot.left_code).load(std::memory_order_relaxed));
      return common::Status(code, "rank " + std::to_string(peer) + " left: it " +
                                      (code == common::StatusCode::kTimeout ? "timed out waiting for"
                                                                            : "lost") +
                                      " rank " + std::to_string(blamed));
    }
    return common::unavailable("rank " + std::to_string(peer) +
                               " left (its shm transport failed, was aborted or was closed)");
  }
  if (has_died(peer)) {
    return common::unavailable("rank " + std::to_string(peer) + " (pid " +
                               std::to_string(pids_[static_cast<size_t>(peer)]) + ") died");
  }
  return common::Status::ok();
}

common::Status PeerWatch::check(int first) const {
  HVD_RETURN_IF_ERROR(check_one(first));
  for (int peer = 0; peer < segment_.size(); ++peer) HVD_RETURN_IF_ERROR(check_one(peer));
  return common::Status::ok();
}

int PeerWatch::culprit(int first) const {
  int gone = -1;
  for (int k = -1; k < segment_.size() && gone < 0; ++k) {
    int peer = k < 0 ? first : k;
    if (!check_one(peer).is_ok()) gone = peer;
  }
  if (gone < 0 || has_died(gone)) return gone;
  int blamed = std::atomic_ref<const int32_t>(segment_.slot(gone).blamed).load(std::memory_order_relaxed) - 1;
  return blamed >= 0 && blamed != rank_ ? blamed : gone;
}

std::string PeerWatch::describe(int peer) const {
  int pid = pids_[static_cast<size_t>(peer)];
  std::string out = "rank " + std::to_string(peer);
  if (pid == 0) return out;
  return out + " (pid " + std::to_string(pid) + ", " + state_words(proc_state(pid)) + ")";
}

}  // namespace hvd::transports::shm
