// Hierarchical allreduce of device ops (runtime/gpu_hierarchical.h,
// transports/hierarchical/device_hierarchical.h): the slicing arithmetic,
// the decision from a set's layout, and GpuTransportChoice::connect with
// the setting on, ranks as threads over an in-process store. The "device"
// transport is gloo over host memory and the device work HostDeviceWork, so
// the three steps run for real here.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "daemon/rendezvous/kv_store.h"
#include "runtime/gpu_hierarchical.h"
#include "runtime/gpu_transport.h"
#include "tests/unit/runtime/host_device_work.h"
#include "transports/gloo/factory.h"
#include "transports/hierarchical/factory.h"
#include "transports/hierarchical/slices.h"
#include "transports/table/transport_table.h"

namespace hvd::runtime {

namespace {

using transports::DeviceKind;
using transports::Layout;
using transports::TransportContext;
using transports::TransportRegistry;
using transports::layout_of;
using common::Status;

// The built-in transports plus "fakegpu": a CUDA entry whose transport is
// gloo on host memory, with HostDeviceWork as its device work.
TransportRegistry registry_with_fake_gpu() {
  TransportRegistry registry = hvd::transports::builtin_registry();
  registry.add(
      "fakegpu", DeviceKind::kCuda,
      [](const TransportContext& c) { return transports::gloo::create(c); }, nullptr,
      [](int device, std::chrono::milliseconds)
          -> common::Result<std::unique_ptr<transports::DeviceWork>> {
        return std::unique_ptr<transports::DeviceWork>(new testing::HostDeviceWork(device));
      });
  return registry;
}

// body(rank) on a thread per rank; each returns its problems ("" when
// none). A rank that does not finish within 60 s ends the test process.
std::vector<std::string> on_threads(int size, const std::function<std::string(int)>& body) {
  std::vector<std::future<std::string>> running;
  for (int rank = 0; rank < size; ++rank) {
    running.push_back(std::async(std::launch::async, [&body, rank] {
      try {
        return body(rank);
      } catch (const std::exception& e) {
        return std::string("exception: ") + e.what();
      }
    }));
  }
  std::vector<std::string> problems;
  for (int rank = 0; rank < size; ++rank) {
    auto& f = running[static_cast<size_t>(rank)];
    if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      std::fprintf(stderr, "rank thread %d of %d did not finish within 60 s\n", rank, size);
      std::_Exit(1);
    }
    problems.push_back(f.get());
  }
  return problems;
}

// One rank's device link for a set of `hosts` (a host name per rank).
common::Result<transports::DeviceLink> connect_rank(const TransportRegistry& registry,
                                                    const std::string& setting, bool hierarchical,
                                                    common::Store& store,
                                                    const std::vector<std::string>& hosts,
                                                    int rank) {
  auto choice = GpuTransportChoice::parse(setting, registry, "fakegpu", hierarchical);
  if (!choice.is_ok()) return choice.status();
  TransportContext context;
  context.rank = rank;
  context.size = static_cast<int>(hosts.size());
  context.store = &store;
  context.key_prefix = "test/" + setting + "/";
  context.host = hosts[static_cast<size_t>(rank)];
  context.timeout = std::chrono::milliseconds(10000);
  context.device = rank;
  return choice->connect(registry, context);
}

// Sum allreduces of float32 and int32, uneven against the host's ranks,
// checked; "" when all is right.
std::string check_sums(transports::Transport& t, int rank, int size) {
  std::string problems;
  for (size_t n : {size_t{1}, size_t{3}, size_t{7}, size_t{1001}}) {
    std::vector<float> f(n);
    std::iota(f.begin(), f.end(), static_cast<float>(rank));
    Status s = t.allreduce({f.data(), n * 4}, common::DataType::kFloat32, common::ReduceOp::kSum);
    if (!s.is_ok()) return s.to_string();
    std::vector<int32_t> i(n, rank + 1);
    s = t.allreduce({i.data(), n * 4}, common::DataType::kInt32, common::ReduceOp::kSum);
    if (!s.is_ok()) return s.to_string();
    const float base = static_cast<float>(size * (size - 1) / 2);
    for (size_t k = 0; k < n; ++k) {
      if (f[k] != base + static_cast<float>(size * k) || i[k] != size * (size + 1) / 2) {
        problems += "n " + std::to_string(n) + " element " + std::to_string(k) + " wrong; ";
        break;
      }
    }
  }
  return problems;
}

}  // namespace

TEST_CASE("hierarchical slices: whole elements, the first ones longer", "[gpu_hierarchical]") {
  using transports::hierarchical::slice_bytes;
  CHECK(slice_bytes(32, 4, 4) == std::vector<int64_t>{8, 8, 8, 8});
  CHECK(slice_bytes(28, 4, 3) == std::vector<int64_t>{12, 8, 8});    // 7 floats
  CHECK(slice_bytes(16, 8, 3) == std::vector<int64_t>{8, 8, 0});     // 2 of 3 ranks get one
  CHECK(slice_bytes(0, 4, 2) == std::vector<int64_t>{0, 0});
  CHECK(slice_bytes(10, 2, 1) == std::vector<int64_t>{10});
  const auto big = slice_bytes(1001 * 4, 4, 4);
  CHECK(std::accumulate(big.begin(), big.end(), int64_t{0}) == 1001 * 4);
  CHECK(big == std::vector<int64_t>{251 * 4, 250 * 4, 250 * 4, 250 * 4});
}

TEST_CASE("hierarchical decision: several hosts of equal rank counts only",
          "[gpu_hierarchical]") {
  transports::hierarchical::Choice c = transports::hierarchical::choose(layout_of({"a", "a", "b", "b"}, 1));
  CHECK(c.hierarchical);
  CHECK(c.why == "2 hosts of 2 ranks");
  c = transports::hierarchical::choose(layout_of({"a", "a", "a"}, 0));
  CHECK_FALSE(c.hierarchical);
  CHECK(c.why == "every rank of the set is on one host");
  c = transports::hierarchical::choose(layout_of({"a", "a", "b"}, 2));
  CHECK_FALSE(c.hierarchical);
  CHECK(c.why == "its hosts have unequal numbers of ranks (2, 1)");
  c = transports::hierarchical::choose(layout_of({"a", "b", "c"}, 0));
  CHECK_FALSE(c.hierarchical);
  CHECK(c.why == "each of its 3 hosts has one rank: nothing to reduce within a host");
}

TEST_CASE("hierarchical on: device allreduce in three steps over two hosts of two ranks",
          "[gpu_hierarchical]") {
  const TransportRegistry registry = registry_with_fake_gpu();
  daemon::KvStore store;
  const std::vector<std::string> hosts{"h0", "h0", "h1", "h1"};
  auto problems = on_threads(4, [&](int rank) -> std::string {
    auto link = connect_rank(registry, "fakegpu", true, store, hosts, rank);
    if (!link.is_ok()) return link.status().to_string();
    auto& t = *link->transport;
    if (t.name() != "hierarchical (fakegpu within hosts, gloo across)") {
      return "name " + std::string(t.name());
    }
    std::string p = check_sums(t, rank, 4);
    // An average is the engine's to divide, as on every transport.
    std::vector<float> a(2, 1.0f);
    if (t.allreduce({a.data(), 8}, common::DataType::kFloat32, common::ReduceOp::kAverage)
            .code() != common::StatusCode::kInvalidArgument) {
      p += "average accepted; ";
    }
    std::vector<int64_t> b(3, rank == 3 ? 9 : 0);  // other ops: the flat device world
    if (!t.broadcast({b.data(), 24}, 3).is_ok() || b[2] != 9) p += "broadcast; ";
    if (!t.barrier().is_ok()) p += "barrier; ";
    auto* work = dynamic_cast<testing::HostDeviceWork*>(link->work.get());
    if (work == nullptr || work->allocs < 1 || work->pinned_allocs < 1 || work->syncs < 2) {
      p += "the slice did not go through device memory and pinned host memory; ";
    }
    return p;
  });
  for (size_t r = 0; r < problems.size(); ++r) CHECK(problems[r] == "");
}

TEST_CASE("hierarchical on: one host, unequal hosts and the setting off use the flat transport",
          "[gpu_hierarchical]") {
  const TransportRegistry registry = registry_with_fake_gpu();
  struct Case {
    std::vector<std::string> hosts;
    bool on;
  };
  for (const Case& c : {Case{{"h0", "h0", "h0"}, true}, Case{{"h0", "h0", "h1"}, true},
                        Case{{"h0", "h0", "h1", "h1"}, false}}) {
    daemon::KvStore store;
    const int size = static_cast<int>(c.hosts.size());
    auto problems = on_threads(size, [&](int rank) -> std::string {
      auto link = connect_rank(registry, "fakegpu", c.on, store, c.hosts, rank);
      if (!link.is_ok()) return link.status().to_string();
      if (link->transport->name() != "gloo") return "name " + std::string(link->transport->name());
      return check_sums(*link->transport, rank, size);
    });
    INFO(size << " ranks, setting " << c.on);
    for (const auto& p : problems) CHECK(p == "");
  }
}

TEST_CASE("hierarchical on, staged: the CPU hierarchical transport, staged", "[gpu_hierarchical]") {
  const TransportRegistry registry = registry_with_fake_gpu();
  daemon::KvStore store;
  const std::vector<std::string> hosts{"h0", "h0", "h1", "h1"};
  auto problems = on_threads(4, [&](int rank) -> std::string {
    auto link = connect_rank(registry, "gloo", true, store, hosts, rank);
    if (!link.is_ok()) return link.status().to_string();
    if (link->transport->name() != "hierarchical (staged through host-device-work)") {
      return "name " + std::string(link->transport->name());
    }
    return check_sums(*link->transport, rank, 4);
  });
  for (const auto& p : problems) CHECK(p == "");
}

TEST_CASE("hierarchical on: an abort from another thread ends a blocked allreduce and sticks",
          "[gpu_hierarchical]") {
  const TransportRegistry registry = registry_with_fake_gpu();
  daemon::KvStore store;
  const std::vector<std::string> hosts{"h0", "h0", "h1", "h1"};
  std::promise<void> connected_all;
  std::shared_future<void> connected = connected_all.get_future().share();
  std::atomic<int> ready{0};
  std::promise<void> rank0_done;  // the others keep their transports until then
  std::shared_future<void> finished = rank0_done.get_future().share();
  auto problems = on_threads(4, [&](int rank) -> std::string {
    auto link = connect_rank(registry, "fakegpu", true, store, hosts, rank);
    if (!link.is_ok()) return link.status().to_string();
    if (++ready == 4) connected_all.set_value();
    connected.wait();
    if (rank != 0) {  // the others never join: rank 0's allreduce blocks
      return finished.wait_for(std::chrono::seconds(30)) == std::future_status::ready
                 ? ""
                 : "rank 0 did not finish";
    }
    auto& t = *link->transport;
    std::thread aborter([&t] {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      t.abort(common::aborted("test abort"));
    });
    std::vector<float> data(10, 1.0f);
    const auto start = std::chrono::steady_clock::now();
    Status s = t.allreduce({data.data(), 40}, common::DataType::kFloat32, common::ReduceOp::kSum);
    const auto took = std::chrono::steady_clock::now() - start;
    aborter.join();
    std::string p;
    if (s.code() != common::StatusCode::kAborted) p += "blocked call: " + s.to_string() + "; ";
    if (took > std::chrono::seconds(5)) p += "the blocked call was not ended by the abort; ";
    if (s.message().find("rank 0 of 4") == std::string::npos ||
        s.message().find("test abort") == std::string::npos) {
      p += "message does not name the rank and reason: " + s.message() + "; ";
    }
    Status later = t.barrier();
    if (later.message() != s.message()) p += "the abort did not stick: " + later.to_string();
    rank0_done.set_value();
    return p;
  });
  for (const auto& p : problems) CHECK(p == "");
}

}  // namespace hvd::runtime
