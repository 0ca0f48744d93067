#include "rank_threads.h"

#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

#include "daemon/rendezvous/kv_store.h"
#include "transports/table/transport_table.h"

namespace hvd::transports::testing {

std::vector<Problems> run_ranks(
    const RankOptions& options,
    const std::function<void(int, std::unique_ptr<Transport>&, Problems&)>& body) {
  daemon::KvStore store;
  TransportRegistry registry = builtin_registry();
  std::vector<Problems> problems(static_cast<size_t>(options.size));
  std::vector<std::promise<void>> done(static_cast<size_t>(options.size));
  std::vector<std::future<void>> finished;
  for (auto& d : done) finished.push_back(d.get_future());
  std::vector<std::thread> threads;
  for (int rank = 0; rank < options.size; ++rank) {
    threads.emplace_back([&, rank] {
      Problems& mine = problems[static_cast<size_t>(rank)];
      try {
        TransportContext context;
        context.rank = rank;
        context.size = options.size;
        context.store = &store;
        context.key_prefix = "test/" + options.transport + "/";
        context.timeout = options.timeout;
        if (options.host) context.host = options.host(rank);
        auto transport = registry.create(options.transport, context);
        if (!transport.is_ok()) {
          mine.push_back("create: " + transport.status().to_string());
        } else {
          body(rank, transport.value(), mine);
        }
      } catch (const std::exception& e) {
        mine.push_back(std::string("exception: ") + e.what());
      }
      done[static_cast<size_t>(rank)].set_value();
    });
  }
  auto deadline = std::chrono::steady_clock::now() + options.deadline;
  for (int rank = 0; rank < options.size; ++rank) {
    if (finished[static_cast<size_t>(rank)].wait_until(deadline) !=
        std::future_status::ready) {
      std::fprintf(stderr, "rank thread %d of %d (%s) did not finish within %lld s; giving up\n",
                   rank, options.size, options.transport.c_str(),
                   static_cast<long long>(options.deadline.count()));
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  for (auto& t : threads) t.join();
  return problems;
}

std::string describe(const std::vector<Problems>& problems) {
  std::string out;
  for (size_t rank = 0; rank < problems.size(); ++rank) {
    for (const auto& p : problems[rank]) out += "rank " + std::to_string(rank) + ": " + p + "\n";
  }
  return out;
}

}  // namespace hvd::transports::testing
