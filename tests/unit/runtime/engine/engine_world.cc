#include "engine_world.h"

#include <cstdio>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <thread>

#include "transports/registry.h"
#include "transports/table/transport_table.h"

namespace hvd::runtime::engine::testing {

EngineWorld::EngineWorld(const WorldOptions& options) : own_store_(std::make_unique<daemon::KvStore>()) {
  start(options, *own_store_);
}

EngineWorld::EngineWorld(const WorldOptions& options, daemon::KvStore& store) {
  start(options, store);
}

void EngineWorld::start(const WorldOptions& options, daemon::KvStore& store) {
  const int n = options.size;
  std::vector<int> ranks = options.global_ranks;
  if (ranks.empty()) {
    for (int r = 0; r < n; ++r) ranks.push_back(r);
  }
  std::vector<std::unique_ptr<transports::Transport>> transports(static_cast<size_t>(n));
  std::vector<std::string> errors(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  auto registry = transports::builtin_registry();
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      transports::TransportContext context;
      context.rank = r;
      context.size = n;
      context.store = &store;
      context.key_prefix = options.key_prefix;
      context.timeout = options.transport_timeout;
      auto t = registry.create(options.transport, context);
      if (t.is_ok()) {
        transports[static_cast<size_t>(r)] = std::move(t).value();
      } else {
        errors[static_cast<size_t>(r)] = t.status().to_string();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    if (!errors[static_cast<size_t>(r)].empty()) {
      throw std::runtime_error("rank " + std::to_string(r) + ": " + errors[static_cast<size_t>(r)]);
    }
  }
  for (int r = 0; r < n; ++r) {
    auto transport = std::move(transports[static_cast<size_t>(r)]);
    if (options.wrap) transport = options.wrap(r, std::move(transport));
    SetEngineOptions o = options.engine;
    o.rank = r;
    o.global_ranks = ranks;
    handles_.push_back(std::make_unique<HandleTable>());
    engines_.push_back(std::make_unique<SetEngine>(
        o, std::move(transport), *handles_.back(),
        r == options.timeline_rank ? options.timeline : nullptr));
  }
}

void EngineWorld::stop(int r) {
  engines_[static_cast<size_t>(r)]->stop(common::aborted("hvd is shutting down"));
}

EngineWorld::~EngineWorld() {
  for (auto& e : engines_) e->stop(common::aborted("hvd is shutting down"));
  engines_.clear();
}

std::vector<std::string> on_ranks(int size, const std::function<std::string(int)>& body,
                                  std::chrono::seconds deadline) {
  std::vector<std::future<std::string>> results;
  for (int rank = 0; rank < size; ++rank) {
    results.push_back(std::async(std::launch::async, [&body, rank]() -> std::string {
      try {
        return body(rank);
      } catch (const std::exception& e) {
        return std::string("exception: ") + e.what();
      }
    }));
  }
  std::vector<std::string> problems;
  auto until = std::chrono::steady_clock::now() + deadline;
  for (size_t rank = 0; rank < results.size(); ++rank) {
    if (results[rank].wait_until(until) != std::future_status::ready) {
      std::fprintf(stderr, "rank thread %zu did not finish within %lld s; giving up\n", rank,
                   static_cast<long long>(deadline.count()));
      std::fflush(stderr);
      std::_Exit(1);
    }
    std::string p = results[rank].get();
    if (!p.empty()) problems.push_back("rank " + std::to_string(rank) + ": " + p);
  }
  return problems;
}

std::string problem_lines(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems) out += p + "\n";
  return out;
}

Request request(const std::string& name, OpType type, DataType dtype, std::vector<int64_t> shape,
                ReduceOp op) {
  Request q;
  q.name = name;
  q.op_type = type;
  q.dtype = dtype;
  q.shape = std::move(shape);
  q.reduce_op = op;
  return q;
}

common::Result<int64_t> submit(EngineWorld& world, int r, Request request, const void* input,
                               void* output) {
  Entry e;
  e.request = std::move(request);
  e.request.rank = r;
  e.input = input;
  e.output = output;
  e.handle = world.handles(r).create();
  e.enqueued = Clock::now();
  int64_t handle = e.handle;
  common::Status s = world.engine(r).enqueue(e);
  if (!s.is_ok()) {
    world.handles(r).discard(handle);
    return s;
  }
  return handle;
}

common::Result<std::vector<int64_t>> submit_group(EngineWorld& world, int r,
                                                  std::vector<Request> requests,
                                                  std::vector<const void*> inputs,
                                                  std::vector<void*> outputs) {
  std::vector<Entry> entries(requests.size());
  std::vector<int64_t> handles;
  for (size_t i = 0; i < requests.size(); ++i) {
    entries[i].request = std::move(requests[i]);
    entries[i].request.rank = r;
    entries[i].request.group_id = 7;
    entries[i].request.group_size = static_cast<int32_t>(entries.size());
    entries[i].input = inputs[i];
    entries[i].output = outputs[i];
    entries[i].handle = world.handles(r).create();
    handles.push_back(entries[i].handle);
  }
  common::Status s = world.engine(r).enqueue_group(entries);
  if (!s.is_ok()) return s;
  return handles;
}

common::Status wait(EngineWorld& world, int r, int64_t handle) {
  return world.handles(r).wait(handle, std::chrono::duration<double>(30));
}

}  // namespace hvd::runtime::engine::testing
