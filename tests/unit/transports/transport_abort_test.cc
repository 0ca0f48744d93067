// Transport::abort, for every CPU transport in the registry, ranks as threads
// over an in-process key-value store (the rest of the conformance suite is
// transport_conformance_test.cc).
#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rank_threads.h"
#include "transport_under_test.h"
#include "transports/table/transport_table.h"

namespace hvd::transports {

using common::StatusCode;
using testing::Problems;
using testing::RankOptions;
using testing::run_ranks;
using testing::require_no_problems;
using testing::transport_under_test;

// abort(): ranks block in a collective that cannot complete (a rank stays
// away), another thread aborts; a 30 s transport timeout shows that what
// ends the call is the abort. Every wait below has a deadline.
namespace {

using Clock = std::chrono::steady_clock;

RankOptions abort_options(int size) {
  RankOptions options;
  options.transport = transport_under_test();
  options.size = size;
  options.timeout = std::chrono::milliseconds(30000);
  options.deadline = std::chrono::seconds(20);
  return options;
}

long long ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

// Set once; waited for with a deadline (a rank that must stay away until
// the others are done).
class Flag {
 public:
  void set() { std::call_once(once_, [this] { promise_.set_value(); }); }
  bool wait(std::chrono::seconds deadline) const {
    return done_.wait_for(deadline) == std::future_status::ready;
  }

 private:
  std::once_flag once_;
  std::promise<void> promise_;
  std::shared_future<void> done_ = promise_.get_future().share();
};

// Every rank's transport is connected: a rank that aborts (shuts its sockets
// down) before a peer finished connecting would fail the peer's connect.
class Connected {
 public:
  explicit Connected(int size) : size_(size) {}
  void arrive_and_wait(Problems& p) {
    if (++arrived_ == size_) all_.set();
    if (!all_.wait(std::chrono::seconds(15))) p.push_back("the other ranks did not connect");
  }

 private:
  int size_;
  std::atomic<int> arrived_{0};
  Flag all_;
};

// Aborts `transport` from its own thread after `delay`.
class DelayedAbort {
 public:
  DelayedAbort(Transport& transport, std::chrono::milliseconds delay, Status reason)
      : thread_([this, &transport, delay, reason = std::move(reason)] {
          std::this_thread::sleep_for(delay);
          at_ = Clock::now();
          transport.abort(reason);
        }) {}
  ~DelayedAbort() { join(); }
  // When abort() was called.
  Clock::time_point join() {
    if (thread_.joinable()) thread_.join();
    return at_;
  }

 private:
  Clock::time_point at_;
  std::thread thread_;  // last: starts once at_ exists
};

// A problem unless `s` is the abort Status for `reason` on this rank.
void expect_aborted(const Status& s, StatusCode code, const std::string& reason, int rank,
                    int size, const std::string& what, Problems& p) {
  std::string who = "rank " + std::to_string(rank) + " of " + std::to_string(size);
  if (s.code() != code || s.message().find(reason) == std::string::npos ||
      s.message().find(who) == std::string::npos) {
    p.push_back(what + " gave '" + s.to_string() + "', expected " +
                std::string(common::status_code_name(code)) + " naming '" + reason + "' and '" +
                who + "'");
  }
}

// A later call fails at once with exactly `first`.
void expect_fails_at_once(Transport& t, const Status& first, Problems& p) {
  std::vector<int32_t> data(16, 1);
  std::vector<int64_t> counts(static_cast<size_t>(t.size()), 0);
  counts[static_cast<size_t>(t.rank())] = 64;
  std::vector<int32_t> gathered(16 * static_cast<size_t>(t.size()));
  auto start = Clock::now();
  const Status later[] = {
      t.barrier(),
      t.allreduce({data.data(), 64}, DataType::kInt32, ReduceOp::kSum),
      t.allreduce({data.data(), 0}, DataType::kInt32, ReduceOp::kSum),  // moves nothing
      t.allgatherv({data.data(), 64}, {gathered.data(), 64}, counts),
      t.broadcast({data.data(), 64}, 0),
  };
  for (const Status& s : later) {
    if (s.code() != first.code() || s.message() != first.message()) {
      p.push_back("a later call gave '" + s.to_string() + "' instead of '" + first.to_string() + "'");
    }
  }
  if (Clock::now() - start > std::chrono::milliseconds(200)) {
    p.push_back("later calls took " + std::to_string(ms_between(start, Clock::now())) + " ms");
  }
  Status invalid = t.broadcast({data.data(), 64}, -1);
  if (invalid.code() != StatusCode::kInvalidArgument) {
    p.push_back("an invalid call after the abort gave '" + invalid.to_string() +
                "' instead of its own InvalidArgument");
  }
}

// Calls `op` with small buffers; in a world where a rank stays away it blocks.
Status call(Transport& t, const std::string& op) {
  size_t size = static_cast<size_t>(t.size());
  std::vector<int32_t> in(64 * size, t.rank());
  std::vector<int32_t> out(64 * size, 0);
  std::vector<int64_t> counts(size, 256);
  if (op == "allreduce") return t.allreduce({in.data(), 256}, DataType::kInt32, ReduceOp::kSum);
  if (op == "allgatherv") return t.allgatherv({in.data(), 256}, {out.data(), 256 * size}, counts);
  if (op == "broadcast") return t.broadcast({in.data(), 256}, t.size() - 1);
  if (op == "alltoallv") return t.alltoallv({in.data(), 256 * size}, counts, {out.data(), 256 * size}, counts);
  if (op == "reducescatter") {
    return t.reducescatter({in.data(), 256 * size}, {out.data(), 256}, counts, DataType::kInt32,
                           ReduceOp::kSum);
  }
  return t.barrier();
}

}  // namespace

TEST_CASE("abort: a call waiting for a peer that never calls returns at once", "[transport][abort]") {
  RankOptions options = abort_options(2);
  Connected connected(2);
  CAPTURE(options.transport);
  Flag done;
  const std::string reason = "membership changed: host b left";
  require_no_problems(run_ranks(options, [&](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    connected.arrive_and_wait(p);
    if (rank == 1) {  // never calls, keeps its transport until rank 0 is done
      if (!done.wait(std::chrono::seconds(15))) p.push_back("rank 0 did not finish");
      return;
    }
    std::vector<float> data(1000, 1.0f);
    DelayedAbort aborter(*t, std::chrono::milliseconds(200), common::aborted(reason));
    Status s = t->allreduce({data.data(), data.size() * 4}, DataType::kFloat32, ReduceOp::kSum);
    auto returned = Clock::now();
    auto aborted_at = aborter.join();
    expect_aborted(s, StatusCode::kAborted, reason, rank, 2, "the blocked allreduce", p);
    if (returned < aborted_at || returned - aborted_at > std::chrono::seconds(1)) {
      p.push_back("the blocked allreduce returned " + std::to_string(ms_between(aborted_at, returned)) +
                  " ms after the abort");
    }
    expect_fails_at_once(*t, s, p);
    done.set();
  }));
}

TEST_CASE("abort: every rank blocked in a collective returns at once", "[transport][abort]") {
  RankOptions options = abort_options(3);
  Connected connected(3);
  std::string op = GENERATE(as<std::string>{}, "allreduce", "allgatherv", "broadcast", "alltoallv",
                            "reducescatter", "barrier");
  CAPTURE(options.transport, op);
  Flag done;
  std::atomic<int> finished{0};
  require_no_problems(run_ranks(options, [&](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    connected.arrive_and_wait(p);
    if (rank == 2) {  // stays away until the others are done
      if (!done.wait(std::chrono::seconds(15))) p.push_back("ranks 0 and 1 did not finish");
      return;
    }
    std::string reason = "world rebuilt (rank " + std::to_string(rank) + ")";
    DelayedAbort aborter(*t, std::chrono::milliseconds(200), common::aborted(reason));
    Status s = call(*t, op);
    auto returned = Clock::now();
    auto aborted_at = aborter.join();
    // A peer's abort may end the call first (its sockets go): then the call
    // fails on its own account, and this rank's abort takes over afterwards.
    if (s.is_ok()) p.push_back("the blocked " + op + " succeeded");
    if (returned - aborted_at > std::chrono::seconds(1)) {
      p.push_back("the blocked " + op + " returned " + std::to_string(ms_between(aborted_at, returned)) +
                  " ms after the abort: " + s.to_string());
    }
    if (s.code() == StatusCode::kAborted) expect_aborted(s, StatusCode::kAborted, reason, rank, 3, op, p);
    Status later = t->barrier();
    expect_aborted(later, StatusCode::kAborted, reason, rank, 3, "the call after the abort", p);
    expect_fails_at_once(*t, later, p);
    if (++finished == 2) done.set();
  }));
}

TEST_CASE("abort: before any call, twice, and with the reason's own code", "[transport][abort]") {
  RankOptions options = abort_options(2);
  Connected connected(2);
  CAPTURE(options.transport);
  require_no_problems(run_ranks(options, [&](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    connected.arrive_and_wait(p);
    t->abort(common::aborted("first reason"));
    t->abort(common::unavailable("second reason"));
    Status s = t->barrier();
    expect_aborted(s, StatusCode::kAborted, "first reason", rank, 2, "a call after two aborts", p);
    if (s.message().find("second reason") != std::string::npos) {
      p.push_back("the second reason replaced the first: " + s.to_string());
    }
    expect_fails_at_once(*t, s, p);
  }));

  TransportContext alone;  // a world of one: nothing to wait for, still aborted
  auto transport = builtin_registry().create(options.transport, alone);
  REQUIRE(transport.is_ok());
  transport.value()->abort(common::unavailable("peer 3 died"));
  Problems p;
  expect_aborted(transport.value()->barrier(), StatusCode::kUnavailable, "peer 3 died", 0, 1,
                 "a reason with its own code", p);
  auto plain = builtin_registry().create(options.transport, alone);
  REQUIRE(plain.is_ok());
  plain.value()->abort(Status::ok());
  expect_aborted(plain.value()->barrier(), StatusCode::kAborted, "aborted", 0, 1, "an OK reason", p);
  INFO(testing::describe({p}));
  CHECK(p.empty());
}

TEST_CASE("abort: from several threads at once", "[transport][abort]") {
  RankOptions options = abort_options(2);
  Connected connected(2);
  CAPTURE(options.transport);
  Flag done;
  require_no_problems(run_ranks(options, [&](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    connected.arrive_and_wait(p);
    if (rank == 1) {
      if (!done.wait(std::chrono::seconds(15))) p.push_back("rank 0 did not finish");
      return;
    }
    Flag go;
    std::vector<std::thread> aborters;
    for (int i = 0; i < 8; ++i) {
      aborters.emplace_back([&, i] {
        if (go.wait(std::chrono::seconds(10))) t->abort(common::aborted("reason " + std::to_string(i)));
      });
    }
    std::thread starter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      go.set();
    });
    std::vector<int64_t> data(64, 1);
    auto start = Clock::now();
    Status s = t->allreduce({data.data(), data.size() * 8}, DataType::kInt64, ReduceOp::kSum);
    auto waited = Clock::now() - start;
    starter.join();
    for (auto& a : aborters) a.join();
    expect_aborted(s, StatusCode::kAborted, "reason ", rank, 2, "the blocked allreduce", p);
    if (waited > std::chrono::milliseconds(1150)) {
      p.push_back("the blocked allreduce took " + std::to_string(ms_between(start, start + waited)) + " ms");
    }
    expect_fails_at_once(*t, s, p);  // one reason, the same for every later call
    done.set();
  }));
}

TEST_CASE("abort: destroying an aborted transport returns at once", "[transport][abort]") {
  RankOptions options = abort_options(3);
  Connected connected(3);
  CAPTURE(options.transport);
  Flag done;
  std::atomic<int> finished{0};
  require_no_problems(run_ranks(options, [&](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    connected.arrive_and_wait(p);
    if (rank == 2) {  // stays away, then goes with its transport aborted while idle
      if (!done.wait(std::chrono::seconds(15))) p.push_back("ranks 0 and 1 did not finish");
      t->abort(common::aborted("leaving"));
    } else {
      DelayedAbort aborter(*t, std::chrono::milliseconds(100), common::aborted("leaving"));
      std::vector<int8_t> data(4096, 1);
      Status s = t->allreduce({data.data(), data.size()}, DataType::kInt8, ReduceOp::kSum);
      aborter.join();
      if (s.is_ok()) p.push_back("the blocked allreduce succeeded");
      if (++finished == 2) done.set();
    }
    auto start = Clock::now();
    t.reset();
    if (Clock::now() - start > std::chrono::milliseconds(500)) {
      p.push_back("destroying the aborted transport took " + std::to_string(ms_between(start, Clock::now())) +
                  " ms");
    }
  }));
}

namespace {

// Paces every connected socket of this process to `bytes_per_second`
// (SO_MAX_PACING_RATE, TCP's own pacing): a peer that sends this slowly
// leaves the receiver in the middle of a message for seconds, as a peer that
// stops halfway through does. The number of sockets paced.
int pace_every_socket(unsigned bytes_per_second) {
  int paced = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::string name = entry.path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    sockaddr_storage peer{};
    socklen_t length = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
    if (setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &bytes_per_second,
                   sizeof(bytes_per_second)) == 0) {
      ++paced;
    }
  }
  return paced;
}

}  // namespace

// gloo's tcp pairs fail their pending operations when their socket goes,
// but not the message being read or written (transports/gloo/pair_abort.h):
// without pair_abort these calls ended only at the transport timeout.
TEST_CASE("abort: gloo calls in the middle of a message return at once", "[transport][abort]") {
  RankOptions options = abort_options(2);
  options.transport = "gloo";               // the gap is gloo's tcp pairs'
  options.timeout = std::chrono::milliseconds(8000);  // what a miss would wait for
  std::string op = GENERATE(as<std::string>{}, "broadcast", "allreduce");
  CAPTURE(op);
  Connected connected(2);
  Connected paced(2);
  require_no_problems(run_ranks(options, [&](int rank, std::unique_ptr<Transport>& t, Problems& p) {
    connected.arrive_and_wait(p);
    // 1 MB/s: 16 MiB take 16 s, so both ranks are mid-message when they abort.
    if (rank == 0 && pace_every_socket(1'000'000) < 2) p.push_back("could not pace the sockets");
    paced.arrive_and_wait(p);
    std::vector<float> data(4 << 20, 1.0f);
    Buffer buffer{data.data(), data.size() * sizeof(float)};
    const std::string reason = "mid-message abort on rank " + std::to_string(rank);
    DelayedAbort aborter(*t, std::chrono::milliseconds(300), common::aborted(reason));
    Status s = op == "broadcast" ? t->broadcast(buffer, 1)
                                 : t->allreduce(buffer, DataType::kFloat32, ReduceOp::kSum);
    auto returned = Clock::now();
    auto aborted_at = aborter.join();
    if (s.is_ok()) p.push_back("the " + op + " succeeded: the sockets were not slow enough");
    if (returned - aborted_at > std::chrono::seconds(1)) {
      p.push_back("the " + op + " returned " + std::to_string(ms_between(aborted_at, returned)) +
                  " ms after the abort: " + s.to_string());
    }
    if (s.code() == StatusCode::kAborted) expect_aborted(s, StatusCode::kAborted, reason, rank, 2, op, p);
    expect_fails_at_once(*t, t->barrier(), p);
  }));
}

}  // namespace hvd::transports
