#include "launcher/elastic/background_calls.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace hvd::launcher::elastic {

void BackgroundCalls::run(std::function<void()> call) {
  std::lock_guard lock(mu_);
  prune_locked();
  calls_.push_back(std::async(std::launch::async, std::move(call)));
}

void BackgroundCalls::wait_all() {
  std::vector<std::future<void>> calls;
  {
    std::lock_guard lock(mu_);
    calls.swap(calls_);
  }
  for (auto& call : calls) call.wait();
}

size_t BackgroundCalls::pending() {
  std::lock_guard lock(mu_);
  prune_locked();
  return calls_.size();
}

void BackgroundCalls::prune_locked() {
  std::erase_if(calls_, [](const std::future<void>& call) {
    return call.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
}

}  // namespace hvd::launcher::elastic
