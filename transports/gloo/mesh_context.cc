#include "transports/gloo/mesh_context.h"

#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hvd::transports::gloo {
namespace {

// Closes the pairs it was given once stopped (by the caller's abort or by
// the deadline); the first reason wins.
class PairCloser {
 public:
  explicit PairCloser(std::vector<::gloo::transport::Pair*> pairs) : pairs_(std::move(pairs)) {}

  void stop(common::Status why) {
    std::lock_guard lock(mu_);
    if (!why_.is_ok()) return;
    why_ = std::move(why);
    for (auto* pair : pairs_) pair->close();  // wakes a connect waiting on it
    cv_.notify_all();
  }
  common::Status why() const {
    std::lock_guard lock(mu_);
    return why_;
  }
  bool expired() const {
    std::lock_guard lock(mu_);
    return expired_;
  }
  // Until the deadline (then stops, expired()) or until finish().
  void watch(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    if (cv_.wait_until(lock, deadline, [&] { return finished_ || !why_.is_ok(); })) return;
    expired_ = true;
    lock.unlock();
    stop(common::timeout_error("the connect's deadline passed"));
  }
  void finish() {
    std::lock_guard lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<::gloo::transport::Pair*> pairs_;
  common::Status why_;
  bool expired_ = false;
  bool finished_ = false;
};

std::string ranks_from(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

}  // namespace

common::Status MeshContext::connect(::gloo::rendezvous::Store& store,
                                    const std::shared_ptr<::gloo::transport::Device>& device,
                                    std::chrono::milliseconds timeout, ConnectAbort* abort) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto transport = device->createContext(rank, size);
  transport->setTimeout(timeout);
  std::vector<::gloo::transport::Pair*> pairs;
  std::vector<char> addresses;  // one per peer, in rank order
  size_t address_size = 0;
  for (int peer = 0; peer < size; ++peer) {
    if (peer == rank) continue;
    auto& pair = transport->createPair(peer);
    pairs.push_back(pair.get());
    auto bytes = pair->address().bytes();
    address_size = bytes.size();
    addresses.insert(addresses.end(), bytes.begin(), bytes.end());
  }
  if (size > 1) store.set(std::to_string(rank), addresses);

  // Declared after `transport`: unsubscribed, and the watcher joined, before
  // the pairs go.
  PairCloser closer(pairs);
  std::vector<int> waiting;
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) waiting.push_back(peer);
  }
  auto timed_out = [&] {
    return common::timeout_error("ranks " + ranks_from(waiting) + " did not connect within " +
                                 std::to_string(timeout.count()) + " ms");
  };
  auto stopped = [&]() -> common::Status {  // OK while neither aborted nor past the deadline
    if (closer.expired()) return timed_out();
    return closer.why();
  };
  ConnectAbort::Subscription subscription;
  if (abort != nullptr) {
    subscription = abort->subscribe([&closer](const common::Status& why) { closer.stop(why); });
  }
  std::thread watcher;
  if (size > 1) {
    watcher = std::thread([&closer, deadline] { closer.watch(deadline); });
  }
  struct Joiner {
    PairCloser& closer;
    std::thread& watcher;
    ConnectAbort::Subscription& subscription;
    ~Joiner() {
      closer.finish();
      if (watcher.joinable()) watcher.join();
      subscription.reset();
    }
  } joiner{closer, watcher, subscription};

  for (size_t i = 0; i < waiting.size();) {
    if (auto why = stopped(); !why.is_ok()) return why;
    const int peer = waiting[i];
    const std::string key = std::to_string(peer);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return timed_out();
    store.wait({key}, left);
    auto all = store.get(key);
    // The peer's address for this rank: peers skip themselves.
    const size_t index = static_cast<size_t>(rank > peer ? rank - 1 : rank);
    if (address_size == 0 || all.size() != address_size * static_cast<size_t>(size - 1)) {
      return common::internal_error("rank " + key + " published " + std::to_string(all.size()) +
                                    " bytes of addresses, not " +
                                    std::to_string(address_size * static_cast<size_t>(size - 1)));
    }
    std::vector<char> address(all.begin() + static_cast<std::ptrdiff_t>(index * address_size),
                              all.begin() + static_cast<std::ptrdiff_t>((index + 1) * address_size));
    try {
      transport->getPair(peer)->connect(address);
    } catch (...) {
      if (auto why = stopped(); !why.is_ok()) return why;  // closed here: say why
      throw;
    }
    if (auto why = stopped(); !why.is_ok()) return why;
    waiting.erase(waiting.begin() + static_cast<std::ptrdiff_t>(i));
  }
  device_ = device;
  transportContext_ = std::move(transport);
  return common::Status::ok();
}

}  // namespace hvd::transports::gloo
