// Elastic recovery of a GPU transport by shrink (docs/gpu.md, "Elastic
// recovery: shrink"): DeviceRoute shrinks instead of aborting when told which
// members left, waits for that word up to its grace after a failure, and
// aborts otherwise; DeviceShrink keeps the survivors' transport across
// rounds and uses it again only when every rank of the new world keeps the
// one of the same shrink at its place. A transport double records what is
// done to it; ranks are threads over one in-process store.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "runtime/device_shrink.h"
#include "runtime/engine/device_route.h"
#include "runtime/engine/engine_stats.h"
#include "tests/unit/runtime/host_device_work.h"
#include "transports/shrinkable_transport.h"

namespace hvd::runtime {

namespace {

using namespace std::chrono_literals;
using common::Status;
using Clock = std::chrono::steady_clock;
using common::DataType;
using common::ReduceOp;

// A GPU transport that can shrink: collectives do nothing; it records its
// abort and its shrinks.
class ShrinkingTransport final : public transports::Transport,
                                 public transports::StreamedTransport,
                                 public transports::ShrinkableTransport {
 public:
  ShrinkingTransport(int rank, int size, bool can_shrink = true)
      : rank_(rank), size_(size), can_shrink_(can_shrink) {}
  std::string_view name() const override { return "fakegpu"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status allreduce(transports::Buffer, DataType, ReduceOp) override { return aborted(); }
  Status allgatherv(transports::ConstBuffer, transports::Buffer,
                    std::span<const int64_t>) override {
    return aborted();
  }
  Status broadcast(transports::Buffer, int) override { return aborted(); }
  Status alltoallv(transports::ConstBuffer, std::span<const int64_t>, transports::Buffer,
                   std::span<const int64_t>) override {
    return aborted();
  }
  Status reducescatter(transports::ConstBuffer, transports::Buffer, std::span<const int64_t>,
                       DataType, ReduceOp) override {
    return aborted();
  }
  Status barrier() override { return aborted(); }
  void abort(Status reason) override {
    std::lock_guard lock(mu_);
    if (abort_reason_.is_ok()) {
      abort_reason_ = reason;
      aborted_at_ = Clock::now();
    }
  }
  void set_stream(void*) override {}
  common::Result<std::unique_ptr<transports::Transport>> shrink(
      const transports::TransportContext& context, std::span<const int> excluded) override {
    std::lock_guard lock(mu_);
    if (!abort_reason_.is_ok()) return common::failed_precondition("shrink of an aborted one");
    if (!can_shrink_) return common::unimplemented("this one cannot shrink");
    excluded_.assign(excluded.begin(), excluded.end());
    shrunk_at_ = Clock::now();
    return std::unique_ptr<transports::Transport>(
        std::make_unique<ShrinkingTransport>(context.rank, context.size));
  }

  Status aborted() const {
    std::lock_guard lock(mu_);
    return abort_reason_;
  }
  std::optional<Clock::time_point> aborted_at() const {
    std::lock_guard lock(mu_);
    return aborted_at_;
  }
  std::optional<Clock::time_point> shrunk_at() const {
    std::lock_guard lock(mu_);
    return shrunk_at_;
  }
  std::vector<int> excluded() const {
    std::lock_guard lock(mu_);
    return excluded_;
  }

 private:
  const int rank_;
  const int size_;
  const bool can_shrink_;
  mutable std::mutex mu_;
  Status abort_reason_;
  std::optional<Clock::time_point> aborted_at_;
  std::optional<Clock::time_point> shrunk_at_;
  std::vector<int> excluded_;
};

// A route over a ShrinkingTransport of rank `rank` of `size`; `parent`
// points at it once the first device op made it.
struct Route {
  engine::EngineCounters counters;
  ShrinkingTransport* parent = nullptr;
  engine::DeviceRoute route;

  Route(int rank, int size, std::chrono::milliseconds grace, bool can_shrink = true)
      : route(
            [this, rank, size, can_shrink](int device) -> common::Result<transports::DeviceLink> {
              auto transport = std::make_unique<ShrinkingTransport>(rank, size, can_shrink);
              parent = transport.get();
              transports::DeviceLink link;
              link.transport = std::move(transport);
              link.work = std::make_shared<testing::HostDeviceWork>(device);
              return link;
            },
            rank, size, counters, grace) {
    REQUIRE(route.executor(0).is_ok());  // the first device op connects
    REQUIRE(parent != nullptr);
  }
};

// What keep() received.
struct Kept {
  std::mutex mu;
  std::unique_ptr<transports::Transport> transport;
  int device = -1;
  engine::ShrinkRequest request(int rank, int size, std::vector<int> excluded) {
    engine::ShrinkRequest r;
    r.context.rank = rank;
    r.context.size = size;
    r.context.timeout = 5s;
    r.excluded = std::move(excluded);
    r.keep = [this](std::unique_ptr<transports::Transport> t, int d) {
      std::lock_guard lock(mu);
      transport = std::move(t);
      device = d;
    };
    return r;
  }
  bool has() {
    std::lock_guard lock(mu);
    return transport != nullptr;
  }
};

const Status kLost = common::aborted("slot(s) 1 of rendezvous round 3 left the job");

bool eventually(const std::function<bool()>& condition, std::chrono::milliseconds limit = 5s) {
  const auto deadline = Clock::now() + limit;
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

}  // namespace

TEST_CASE("device route: told which members left, it shrinks, then aborts the old transport",
          "[device_shrink]") {
  Route r(2, 3, 2s);
  Kept kept;
  r.route.shrink(kLost, kept.request(1, 2, {1}));
  REQUIRE(eventually([&] { return kept.has(); }));
  CHECK(kept.transport->size() == 2);
  CHECK(kept.transport->rank() == 1);
  CHECK(kept.device == 0);
  CHECK(r.parent->excluded() == std::vector<int>{1});
  REQUIRE(eventually([&] { return !r.parent->aborted().is_ok(); }));
  // Aborted after the shrink, never before: the shrink needs it alive.
  CHECK(*r.parent->aborted_at() >= *r.parent->shrunk_at());
  // Device ops fail from the moment it was told.
  CHECK(r.route.executor(0).status().message() == kLost.message());
}

TEST_CASE("device route: a failure first waits for the word up to the grace, then shrinks",
          "[device_shrink]") {
  Route r(0, 3, 3s);
  r.route.abort(common::unavailable("fakegpu asynchronous error on rank 0"));
  std::this_thread::sleep_for(200ms);
  CHECK(r.parent->aborted().is_ok());  // waiting for shrink(), not aborted
  Kept kept;
  const auto told = Clock::now();
  r.route.shrink(kLost, kept.request(0, 2, {2}));
  r.route.settle();  // returns at once: the shrink was asked for
  CHECK(Clock::now() - told < 1s);
  REQUIRE(eventually([&] { return kept.has(); }));
  REQUIRE(eventually([&] { return !r.parent->aborted().is_ok(); }));
  // The first reason stays the ops' reason.
  CHECK(r.route.executor(0).status().message() == "fakegpu asynchronous error on rank 0");
}

TEST_CASE("device route: no word within the grace aborts; no grace aborts at once",
          "[device_shrink]") {
  SECTION("a grace that passes") {
    Route r(0, 2, 300ms);
    const auto start = Clock::now();
    r.route.abort(common::unavailable("nccl asynchronous error"));
    r.route.settle();  // up to the grace
    REQUIRE(eventually([&] { return !r.parent->aborted().is_ok(); }, 2s));
    CHECK(*r.parent->aborted_at() - start >= 250ms);
    Kept kept;
    r.route.shrink(kLost, kept.request(0, 1, {1}));  // too late: nothing kept
    std::this_thread::sleep_for(100ms);
    CHECK_FALSE(kept.has());
    CHECK_FALSE(r.parent->shrunk_at().has_value());
  }
  SECTION("no grace (a static job, a process set)") {
    Route r(0, 2, 0ms);
    r.route.abort(common::unavailable("nccl asynchronous error"));
    CHECK_FALSE(r.parent->aborted().is_ok());
  }
  SECTION("a transport that cannot shrink is aborted at once") {
    Route r(0, 2, 2s, /*can_shrink=*/false);
    Kept kept;
    r.route.shrink(kLost, kept.request(0, 1, {1}));
    REQUIRE(eventually([&] { return !r.parent->aborted().is_ok(); }, 2s));
    CHECK_FALSE(kept.has());
  }
  SECTION("a shrink asked for, then settle() and the route destroyed at once: it still shrinks") {
    // hvd.shutdown() right after the word came, on a loaded machine: the
    // destruction must not beat the thread to the request.
    for (int i = 0; i < 20; ++i) {
      Kept kept;
      {
        Route r(0, 3, 5s);
        r.route.abort(common::unavailable("nccl asynchronous error"));
        r.route.shrink(kLost, kept.request(0, 2, {1}));
        r.route.settle();
      }
      REQUIRE(kept.has());
    }
  }
  SECTION("destroyed during the grace: aborted, the destructor does not wait it out") {
    ShrinkingTransport* parent = nullptr;
    const auto start = Clock::now();
    {
      Route r(0, 2, 10s);
      parent = r.parent;
      r.route.abort(common::unavailable("nccl asynchronous error"));
      CHECK(parent->aborted().is_ok());
    }
    CHECK(Clock::now() - start < 2s);
  }
}

TEST_CASE("device shrink: the next round uses the kept transport only when every rank keeps "
          "the same one at its place", "[device_shrink]") {
  daemon::KvStore store;
  transports::TransportRegistry registry;
  registry.add(
      "fakegpu", transports::DeviceKind::kCuda,
      [](const transports::TransportContext&) -> common::Result<std::unique_ptr<transports::Transport>> {
        return common::unimplemented("not connected in this test");
      },
      nullptr,
      [](int device, std::chrono::milliseconds) -> common::Result<std::unique_ptr<transports::DeviceWork>> {
        return std::unique_ptr<transports::DeviceWork>(
            std::make_unique<testing::HostDeviceWork>(device));
      });
  // One process is one DeviceShrink; here each rank's is its own object.
  auto exchange = [&](std::vector<DeviceShrink*> ranks, const std::string& prefix) {
    std::vector<std::future<common::Result<std::optional<transports::DeviceLink>>>> results;
    for (size_t r = 0; r < ranks.size(); ++r) {
      results.push_back(std::async(std::launch::async, [&, r] {
        transports::TransportContext context;
        context.rank = static_cast<int>(r);
        context.size = static_cast<int>(ranks.size());
        context.store = &store;
        context.key_prefix = prefix;
        context.timeout = 5s;
        context.device = 0;
        return ranks[r]->reuse(registry, context);
      }));
    }
    std::vector<bool> reused;
    for (auto& f : results) {
      auto got = f.get();
      REQUIRE(got.is_ok());
      reused.push_back(got->has_value());
      if (got->has_value()) CHECK((*got)->transport->name() == "fakegpu");
    }
    return reused;
  };
  // Survivors of round 3 without rank 1 of 3: ranks 0 and 1 of 2.
  auto keep = [&](DeviceShrink& shrink, int old_rank, int old_size, std::vector<int> excluded,
                  int64_t round) {
    transports::TransportContext old;
    old.rank = old_rank;
    old.size = old_size;
    old.device = 0;
    auto request = shrink.request(old, excluded, round);
    request.keep(std::make_unique<ShrinkingTransport>(request.context.rank, request.context.size),
                 0);
  };

  SECTION("every rank keeps the same shrink at its place: used, not connected anew") {
    DeviceShrink a, b;
    keep(a, 0, 3, {1}, 3);
    keep(b, 2, 3, {1}, 3);
    CHECK(exchange({&a, &b}, "round4/gpu/") == std::vector<bool>{true, true});
    CHECK_FALSE(a.holds());
  }
  SECTION("one rank keeps none (its shrink failed, or it is new): every rank connects anew") {
    DeviceShrink a, b;
    keep(a, 0, 3, {1}, 3);
    CHECK(exchange({&a, &b}, "round4/gpu/") == std::vector<bool>{false, false});
    CHECK_FALSE(a.holds());  // destroyed
  }
  SECTION("kept from different shrinks, or at another place: connected anew") {
    DeviceShrink a, b, c, d;
    keep(a, 0, 3, {1}, 3);
    keep(b, 2, 3, {0}, 3);  // rank 1 of the survivors of another shrink
    CHECK(exchange({&a, &b}, "round4/gpu/") == std::vector<bool>{false, false});
    keep(c, 2, 3, {1}, 3);  // rank 1 of 2...
    keep(d, 0, 3, {1}, 3);  // ...and rank 0 of 2, joined in the other order
    CHECK(exchange({&c, &d}, "round5/gpu/") == std::vector<bool>{false, false});
  }
  SECTION("the survivors' place: rank less the excluded below it") {
    DeviceShrink a;
    transports::TransportContext old;
    old.rank = 4;
    old.size = 6;
    auto request = a.request(old, {1, 3, 5}, 7);
    CHECK(request.context.rank == 2);
    CHECK(request.context.size == 3);
    CHECK(request.excluded == std::vector<int>{1, 3, 5});
    CHECK(request.context.store != nullptr);  // one that follows the rounds
  }
}

TEST_CASE("rebound store: calls go to the bound round's store under its prefix, and fail "
          "between rounds", "[device_shrink]") {
  daemon::KvStore store;
  ReboundStore rebound;
  CHECK(rebound.set("k", "v").code() == common::StatusCode::kUnavailable);
  rebound.bind(&store, "round2/gpu/shrunk/");
  REQUIRE(rebound.set("k", "v").is_ok());
  auto got = store.get({"round2/gpu/shrunk/k"}, 1s);
  REQUIRE(got.is_ok());
  CHECK(got->front() == "v");
  auto back = rebound.get({"k"}, 1s);
  REQUIRE(back.is_ok());
  CHECK(back->front() == "v");
  rebound.unbind();
  CHECK(rebound.get({"k"}, 1s).status().code() == common::StatusCode::kUnavailable);
}

}  // namespace hvd::runtime
