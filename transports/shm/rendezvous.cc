#include "transports/shm/rendezvous.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "transports/shm/futex.h"

namespace hvd::transports::shm {

namespace {

using Clock = std::chrono::steady_clock;

std::string where(const TransportContext& c) {
  return "rank " + std::to_string(c.rank) + " of " + std::to_string(c.size);
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("?");
}

// What ranks able to share a segment have in common: the same kernel boot
// and the same /dev/shm.
std::string host_identity() {
  std::string boot_id;
  std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot_id);
  struct stat st {};
  std::string shm = stat("/dev/shm", &st) == 0
                        ? std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)
                        : "no /dev/shm";
  return boot_id + "/" + shm;
}

uint64_t pid_namespace() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? st.st_ino : 0;
}

std::string segment_name(const std::string& key_prefix) {
  std::string safe;
  for (char c : key_prefix.substr(0, 64)) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    safe += ok ? c : '_';
  }
  std::random_device random;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string suffix;
  for (int i = 0; i < 4; ++i) {
    uint32_t bits = random();
    for (int k = 0; k < 4; ++k, bits >>= 4) suffix += kHex[bits & 15];
  }
  return "/hvd-" + safe + "-" + suffix;
}

common::Status check_one_host(const TransportContext& c) {
  if (c.size == 1) return common::Status::ok();
  if (c.local_size > 0 && c.local_size < c.size) {
    return common::failed_precondition(
        "shm transport: only " + std::to_string(c.local_size) + " of the " + std::to_string(c.size) +
        " ranks are on this host; it needs every rank of the world on one host");
  }
  std::string prefix = c.key_prefix + "shm/host/";
  HVD_RETURN_IF_ERROR(c.store->set(prefix + std::to_string(c.rank), host_identity() + "\n" + host_name()));
  std::vector<std::string> keys;
  for (int r = 0; r < c.size; ++r) keys.push_back(prefix + std::to_string(r));
  auto hosts = c.store->get(keys, c.timeout);
  if (!hosts.is_ok()) {
    return hosts.status().with_context("shm transport: " + where(c) + " waiting for its peers' hosts");
  }
  auto split = [](const std::string& value) {
    auto newline = value.find('\n');
    return std::pair{value.substr(0, newline), newline == std::string::npos ? "" : value.substr(newline + 1)};
  };
  auto [first_id, first_host] = split(hosts.value()[0]);
  for (int r = 1; r < c.size; ++r) {
    auto [id, host] = split(hosts.value()[static_cast<size_t>(r)]);
    if (id == first_id) continue;
    std::string why = host == first_host ? "rank " + std::to_string(r) + " (also on " + host +
                                               ") does not share rank 0's /dev/shm or kernel"
                                         : "rank 0 is on " + first_host + " but rank " +
                                               std::to_string(r) + " is on " + host;
    return common::failed_precondition("shm transport: " + why +
                                       "; it needs every rank of the world on one host");
  }
  return common::Status::ok();
}

// Rank 0 makes the segment and says where it is (or why there is none);
// the others wait for that and attach.
common::Result<Segment> create_or_attach(const TransportContext& c, size_t staging_bytes,
                                         std::string& name) {
  std::string key = c.key_prefix + "shm/segment";
  if (c.rank == 0) {
    name = segment_name(c.key_prefix);
    auto segment = Segment::create(name, c.size, staging_bytes);
    if (c.size > 1) {
      std::string value = segment.is_ok() ? "name:" + name : "error:" + segment.status().message();
      common::Status published = c.store->set(key, value);
      if (!published.is_ok() && segment.is_ok()) {
        Segment::unlink(name);
        return published.with_context("shm transport: rank 0 publishing its segment");
      }
    }
    return segment;
  }
  auto value = c.store->get({key}, c.timeout);
  if (!value.is_ok()) {
    return value.status().with_context("shm transport: " + where(c) + " waiting for rank 0's segment");
  }
  const std::string& text = value.value()[0];
  if (text.rfind("error:", 0) == 0) {
    return common::unavailable("shm transport: rank 0 could not create the segment: " + text.substr(6));
  }
  name = text.substr(5);
  return Segment::attach(name, c.size);
}

}  // namespace

common::Result<Segment> join_segment(const TransportContext& c, size_t staging_bytes) {
  HVD_RETURN_IF_ERROR(check_one_host(c));
  std::string name;
  auto segment = create_or_attach(c, staging_bytes, name);
  if (!segment.is_ok()) return segment.status();
  SegmentHeader& header = segment.value().header();
  RankSlot& slot = segment.value().slot(c.rank);
  std::atomic_ref<int32_t>(slot.pid).store(getpid(), std::memory_order_relaxed);
  slot.pid_namespace = pid_namespace();
  std::atomic_ref<uint32_t>(slot.state).store(kSlotAttached, std::memory_order_seq_cst);
  std::atomic_ref<uint32_t> attached(header.attached);
  std::atomic_ref<uint32_t> bell(header.bell);
  auto everyone = static_cast<uint32_t>(c.size);
  if (attached.fetch_add(1, std::memory_order_seq_cst) + 1 == everyone) {
    Segment::unlink(name);  // everyone has it mapped
    attached.fetch_add(1, std::memory_order_seq_cst);  // size + 1: "and the name is gone"
  }
  bell.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&header.bell);

  auto deadline = Clock::now() + c.timeout;
  while (true) {
    uint32_t seen = bell.load(std::memory_order_seq_cst);
    if (attached.load(std::memory_order_seq_cst) > everyone) break;
    auto now = Clock::now();
    if (now >= deadline) {
      Segment::unlink(name);
      std::string missing;
      for (int r = 0; r < c.size; ++r) {
        if (std::atomic_ref<uint32_t>(segment.value().slot(r).state).load() == kSlotEmpty) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      return common::timeout_error("shm transport: " + where(c) + " timed out after " +
                                   std::to_string(c.timeout.count()) +
                                   " ms waiting for ranks " + missing + " to attach to " + name);
    }
    futex_wait(&header.bell, seen, std::min<Clock::duration>(std::chrono::milliseconds(10), deadline - now));
  }
  return segment;
}

}  // namespace hvd::transports::shm
