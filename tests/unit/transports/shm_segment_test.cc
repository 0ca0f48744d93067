// How the ranks of an shm world come to share one segment
// (transports/shm/segment_rendezvous.h): ranks in one pid namespace share rank 0's
// anonymous segment (memfd, reached through /proc), so nothing is ever in
// /dev/shm and the segment dies with the last process that maps it, even
// when rank 0 is killed before its peers attached; ranks that share only
// /dev/shm get a POSIX name, removed once all attached or at the timeout.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#include "daemon/rendezvous/kv_store.h"
#include "file_store.h"
#include "forked_ranks.h"
#include "transports/shm/segment_rendezvous.h"
#include "transports/shm/segment.h"

namespace hvd::transports::shm {
namespace {

using namespace std::chrono_literals;
using common::StatusCode;
using testing::shm_files;

// What a rank publishes about itself (segment_rendezvous.cc's Identity), with a
// given pid namespace and /dev/shm.
std::string identity(const std::string& pid_ns, const std::string& shm) {
  std::string boot;
  std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot);
  return boot + "\n" + pid_ns + "\n" + shm + "\n" + "this-host";
}

std::string our_shm() {
  struct stat st {};
  REQUIRE(stat("/dev/shm", &st) == 0);
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

std::string our_pid_ns() {
  struct stat st {};
  REQUIRE(stat("/proc/self/ns/pid", &st) == 0);
  return std::to_string(st.st_ino);
}

// "at:<nonce>:<where>" as rank 0 publishes it.
std::pair<uint64_t, std::string> location(const std::string& value) {
  REQUIRE(value.rfind("at:", 0) == 0);
  size_t colon = value.find(':', 3);
  REQUIRE(colon != std::string::npos);
  return {std::stoull(value.substr(3, colon - 3)), value.substr(colon + 1)};
}

TransportContext context_for(common::Store& store, const std::string& prefix, int rank, int size,
                             std::chrono::milliseconds timeout) {
  TransportContext c;
  c.rank = rank;
  c.size = size;
  c.store = &store;
  c.key_prefix = prefix;
  c.timeout = timeout;
  return c;
}

}  // namespace

TEST_CASE("shm segment: one pid namespace shares rank 0's anonymous segment; killing rank 0 before "
          "its peers attach leaves nothing", "[shm]") {
  std::string prefix = "anon-" + std::to_string(getpid()) + "/";
  std::string directory = (std::filesystem::temp_directory_path() / ("hvd-segment-" + std::to_string(getpid())))
                              .string();
  std::filesystem::create_directories(directory);
  testing::FileStore store(directory);
  // Rank 1 (this process) says it shares rank 0's pid namespace, then never
  // counts itself attached: rank 0 waits for it, and is killed waiting.
  REQUIRE(store.set(prefix + "shm/host/1", identity(our_pid_ns(), our_shm())).is_ok());
  std::fflush(nullptr);
  pid_t child = fork();
  if (child == 0) {
    testing::FileStore child_store(directory);
    auto joined = join_segment(context_for(child_store, prefix, 0, 2, 60s), 1 << 20);
    std::_Exit(joined.is_ok() ? 0 : 1);
  }
  REQUIRE(child > 0);
  auto published = store.get({prefix + "shm/segment"}, 20s);
  REQUIRE(published.is_ok());
  auto [nonce, where] = location(published.value()[0]);
  CHECK(where.rfind("/proc/" + std::to_string(child) + "/fd/", 0) == 0);
  CHECK(shm_files("anon-" + std::to_string(getpid())).empty());  // no name: not the named way

  // The locator reaches the segment while rank 0 holds it; a wrong nonce is refused.
  auto attached = Segment::attach(where, 2, nonce);
  REQUIRE(attached.is_ok());
  CHECK(attached.value().header().size == 2);
  auto wrong = Segment::attach(where, 2, nonce + 1);
  REQUIRE_FALSE(wrong.is_ok());
  CHECK_THAT(wrong.status().message(), Catch::Contains("is not an hvd segment"));

  REQUIRE(kill(child, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  // Gone with its creator: nobody can reach it any more (this process's own
  // mapping keeps its memory until it is unmapped).
  auto late = Segment::attach(where, 2, nonce);
  REQUIRE_FALSE(late.is_ok());
  CHECK_THAT(late.status().message(), Catch::Contains("did its creator, rank 0, exit?"));
  std::filesystem::remove_all(directory);
}

TEST_CASE("shm segment: ranks sharing /dev/shm but not a pid namespace get a name, removed at the "
          "attach timeout", "[shm]") {
  daemon::KvStore store;
  std::string prefix = "named-" + std::to_string(getpid()) + "/";
  REQUIRE(store.set(prefix + "shm/host/1", identity("4026531836-elsewhere", our_shm())).is_ok());
  auto rank0 = std::async(std::launch::async, [&] {
    return join_segment(context_for(store, prefix, 0, 2, 1500ms), 1 << 20);
  });
  auto published = store.get({prefix + "shm/segment"}, 20s);
  REQUIRE(published.is_ok());
  auto [nonce, where] = location(published.value()[0]);
  CHECK(where.rfind("/hvd-named-" + std::to_string(getpid()), 0) == 0);
  CHECK(shm_files("named-" + std::to_string(getpid())).size() == 1);
  auto attached = Segment::attach(where, 2, nonce);
  CHECK(attached.is_ok());
  auto joined = rank0.get();
  REQUIRE_FALSE(joined.is_ok());
  CHECK(joined.status().code() == StatusCode::kTimeout);
  CHECK_THAT(joined.status().message(), Catch::Contains("waiting for ranks 1 to attach to " + where));
  CHECK(shm_files("named-" + std::to_string(getpid())).empty());
}

TEST_CASE("shm segment: a rank sharing neither rank 0's pid namespace nor its /dev/shm is refused",
          "[shm]") {
  daemon::KvStore store;
  std::string prefix = "apart-" + std::to_string(getpid()) + "/";
  REQUIRE(store.set(prefix + "shm/host/1", identity("elsewhere", "0:0")).is_ok());
  auto joined = join_segment(context_for(store, prefix, 0, 2, 2000ms), 1 << 20);
  REQUIRE_FALSE(joined.is_ok());
  CHECK(joined.status().code() == StatusCode::kFailedPrecondition);
  CHECK_THAT(joined.status().message(),
             Catch::Contains("rank 1 shares neither rank 0's pid namespace nor its /dev/shm"));
  CHECK(store.check({prefix + "shm/segment"}).value() == false);
}

}  // namespace hvd::transports::shm
