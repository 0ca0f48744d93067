#include "transports/shm/segment_rendezvous.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/scaled_timeout.h"
#include "transports/shm/futex.h"
#include "transports/shm/usable_cpus.h"
#include "transports/transport_base.h"

namespace hvd::transports::shm {

namespace {

using Clock = std::chrono::steady_clock;

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof(name) - 1) == 0 ? std::string(name) : std::string("?");
}

std::string boot_id() {
  std::string id;
  std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), id);
  return id;
}

std::string shm_identity() {
  struct stat st {};
  return stat("/dev/shm", &st) == 0 ? std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)
                                    : "no /dev/shm";
}

uint64_t pid_namespace() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? st.st_ino : 0;
}

// How the ranks of a world share the segment.
enum class Sharing {
  kAnonymous,  // one pid namespace: rank 0's memfd, opened through /proc (nothing to leak)
  kNamed,      // one /dev/shm but not one pid namespace: a POSIX name, unlinked once all attached
};

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

// What each rank publishes: the kernel's boot id (one host), its pid
// namespace and /dev/shm (how it can share a segment), its host name.
struct Identity {
  std::string boot, pid_ns, shm, host;

  std::string text() const { return boot + "\n" + pid_ns + "\n" + shm + "\n" + host; }

  static Identity parse(const std::string& value) {
    Identity id;
    std::string* parts[] = {&id.boot, &id.pid_ns, &id.shm, &id.host};
    size_t from = 0;
    for (std::string* part : parts) {
      size_t newline = value.find('\n', from);
      *part = value.substr(from, newline == std::string::npos ? std::string::npos : newline - from);
      from = newline == std::string::npos ? value.size() : newline + 1;
    }
    return id;
  }
};

common::Result<Sharing> check_one_host(const TransportContext& c) {
  if (c.size == 1) return Sharing::kAnonymous;
  if (c.local_size > 0 && c.local_size < c.size) {
    return common::failed_precondition(
        "shm transport: only " + std::to_string(c.local_size) + " of the " + std::to_string(c.size) +
        " ranks are on this host; it needs every rank of the world on one host");
  }
  std::string prefix = c.key_prefix + "shm/host/";
  Identity mine{boot_id(), std::to_string(pid_namespace()), shm_identity(), host_name()};
  HVD_RETURN_IF_ERROR(c.store->set(prefix + std::to_string(c.rank), mine.text()));
  std::vector<std::string> keys;
  for (int r = 0; r < c.size; ++r) keys.push_back(prefix + std::to_string(r));
  auto values = c.store->get(keys, c.timeout);
  if (!values.is_ok()) {
    return values.status().with_context("shm transport: " + where(c.rank, c.size) +
                                        " waiting for its peers' hosts");
  }
  Identity first = Identity::parse(values.value()[0]);
  bool one_pid_ns = true;
  bool one_shm = true;
  for (int r = 1; r < c.size; ++r) {
    Identity id = Identity::parse(values.value()[static_cast<size_t>(r)]);
    one_pid_ns = one_pid_ns && id.pid_ns == first.pid_ns;
    one_shm = one_shm && id.shm == first.shm;
    std::string why;
    if (id.boot != first.boot) {
      why = id.host == first.host ? "rank " + std::to_string(r) + " (also on " + id.host +
                                        ") does not share rank 0's kernel"
                                  : "rank 0 is on " + first.host + " but rank " + std::to_string(r) +
                                        " is on " + id.host;
    } else if (!one_pid_ns && !one_shm) {
      // This rank may share one of them with rank 0, an earlier rank the other.
      bool same_pid_ns = id.pid_ns == first.pid_ns;
      bool same_shm = id.shm == first.shm;
      why = same_pid_ns || same_shm
                ? "the ranks share neither one pid namespace nor one /dev/shm (rank " +
                      std::to_string(r) + " has another " + (same_pid_ns ? "/dev/shm" : "pid namespace") +
                      " than rank 0)"
                : "rank " + std::to_string(r) + " shares neither rank 0's pid namespace nor its /dev/shm";
    }
    if (!why.empty()) {
      return common::failed_precondition("shm transport: " + why +
                                         "; it needs every rank of the world on one host");
    }
  }
  return one_pid_ns ? Sharing::kAnonymous : Sharing::kNamed;
}

// Rank 0 makes the segment and says where it is (or why there is none);
// the others wait for that and attach. `name`: the POSIX name of a named
// segment, for unlinking; empty for an anonymous one.
common::Result<Segment> create_or_attach(const TransportContext& c, Sharing sharing,
                                         size_t staging_bytes, std::string& name) {
  std::string key = c.key_prefix + "shm/segment";
  if (c.rank == 0) {
    if (sharing == Sharing::kNamed) name = segment_name(c.key_prefix);
    auto segment = sharing == Sharing::kNamed ? Segment::create(name, c.size, staging_bytes)
                                              : Segment::create_anonymous(c.size, staging_bytes);
    if (c.size > 1) {
      std::string value = "error:" + segment.status().message();
      if (segment.is_ok()) {
        const std::string& where = name.empty() ? segment.value().locator() : name;
        value = "at:" + std::to_string(segment.value().header().nonce) + ":" + where;
      }
      common::Status published = c.store->set(key, value);
      if (!published.is_ok() && segment.is_ok()) {
        if (!name.empty()) Segment::unlink(name);
        return published.with_context("shm transport: rank 0 publishing its segment");
      }
    }
    return segment;
  }
  auto value = c.store->get({key}, common::scaled_timeout(c.timeout, c.size));
  if (!value.is_ok()) {
    return value.status().with_context("shm transport: " + where(c.rank, c.size) +
                                       " waiting for rank 0's segment");
  }
  const std::string& text = value.value()[0];
  if (text.rfind("error:", 0) == 0) {
    return common::unavailable("shm transport: rank 0 could not create the segment: " + text.substr(6));
  }
  // "at:<nonce>:<where>"
  size_t colon = text.find(':', 3);
  uint64_t nonce = 0;
  bool parsed = text.rfind("at:", 0) == 0 && colon != std::string::npos &&
                std::from_chars(text.data() + 3, text.data() + colon, nonce).ptr == text.data() + colon;
  if (!parsed) {
    return common::internal_error("shm transport: rank 0 published a malformed segment location");
  }
  std::string at = text.substr(colon + 1);
  if (sharing == Sharing::kNamed) name = at;
  return Segment::attach(at, c.size, nonce);
}

}  // namespace

common::Result<Segment> join_segment(const TransportContext& c, size_t staging_bytes) {
  auto sharing = check_one_host(c);
  if (!sharing.is_ok()) return sharing.status();
  std::string name;
  auto segment = create_or_attach(c, sharing.value(), staging_bytes, name);
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
    if (!name.empty()) Segment::unlink(name);  // everyone has it mapped
    attached.fetch_add(1, std::memory_order_seq_cst);  // size + 1: "and the name is gone"
    // Only the last one rings: the others wait for everyone, not for each
    // attach (N wake-ups of N waiters at 1024 ranks on 2 cores).
    bell.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&header.bell);
  }

  // Between looks at the abort: longer when ranks outnumber the cores (each
  // look takes a core from the ranks still attaching), up to 200 ms.
  const std::chrono::milliseconds slice = std::clamp(
      std::chrono::milliseconds(10) * (c.size / usable_cpus()),
      std::chrono::milliseconds(10), std::chrono::milliseconds(200));
  const std::chrono::milliseconds timeout = common::scaled_timeout(c.timeout, c.size);
  auto deadline = Clock::now() + timeout;
  while (true) {
    uint32_t seen = bell.load(std::memory_order_seq_cst);
    if (attached.load(std::memory_order_seq_cst) > everyone) break;
    if (c.abort && c.abort->fired()) {
      if (!name.empty()) Segment::unlink(name);
      return c.abort->reason().with_context("shm transport: " + where(c.rank, c.size) +
                                            " stopped waiting for its peers to attach");
    }
    auto now = Clock::now();
    if (now >= deadline) {
      if (!name.empty()) Segment::unlink(name);
      std::string missing;
      for (int r = 0; r < c.size; ++r) {
        if (std::atomic_ref<uint32_t>(segment.value().slot(r).state).load() == kSlotEmpty) {
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        }
      }
      return common::timeout_error("shm transport: " + where(c.rank, c.size) + " timed out after " +
                                   std::to_string(timeout.count()) +
                                   " ms waiting for ranks " + missing + " to attach to " +
                                   (name.empty() ? "rank 0's segment" : name));
    }
    futex_wait(&header.bell, seen, std::min<Clock::duration>(slice, deadline - now));
  }
  segment.value().close_locator();  // every rank has it mapped: nobody needs rank 0's descriptor
  return segment;
}

}  // namespace hvd::transports::shm
