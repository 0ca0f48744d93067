#include "launcher/signal_watcher.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "launcher/job_events.h"

using namespace hvd::launcher;
using namespace std::chrono_literals;

TEST_CASE("the event queue hands events over in order and honours its deadline") {
  EventQueue queue;
  auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(queue.pop_until(start + 50ms).has_value());
  CHECK(std::chrono::steady_clock::now() - start >= 50ms);

  std::thread producer([&] {
    std::this_thread::sleep_for(20ms);
    queue.push(WorkerOutput{1, false, {"a"}});
    queue.push(WorkerExited{1, 42, 3, 0});
  });
  auto first = queue.pop_until(std::chrono::steady_clock::now() + 5s);
  REQUIRE(first.has_value());
  REQUIRE(std::holds_alternative<WorkerOutput>(*first));
  CHECK(std::get<WorkerOutput>(*first).lines == std::vector<std::string>{"a"});
  auto second = queue.pop_until(std::chrono::steady_clock::now() + 5s);
  REQUIRE(second.has_value());
  REQUIRE(std::holds_alternative<WorkerExited>(*second));
  CHECK(std::get<WorkerExited>(*second).exit_code == 3);
  producer.join();
}

TEST_CASE("the event queue's output waits for room, or until its reader stops") {
  EventQueue queue;
  std::atomic<bool> stop{false};
  const size_t lines = EventQueue::kMaxOutputBytes / (1000 + EventQueue::kLineOverhead) + 1;
  const WorkerOutput full{0, false, std::vector<std::string>(lines, std::string(1000, 'x'))};
  queue.push_output(full, stop);  // an empty queue takes it whole
  auto next = std::async(std::launch::async,
                         [&] { queue.push_output(WorkerOutput{0, false, {"next"}}, stop); });
  CHECK(next.wait_for(100ms) == std::future_status::timeout);
  REQUIRE(queue.pop_until(std::chrono::steady_clock::now() + 5s).has_value());
  REQUIRE(next.wait_for(5s) == std::future_status::ready);

  queue.push_output(full, stop);
  auto last = std::async(std::launch::async,
                         [&] { queue.push_output(WorkerOutput{0, false, {"last"}}, stop); });
  CHECK(last.wait_for(100ms) == std::future_status::timeout);
  stop = true;
  queue.wake_output_waiters();
  REQUIRE(last.wait_for(5s) == std::future_status::ready);
  std::vector<std::string> order;
  while (auto event = queue.pop_until(std::chrono::steady_clock::now() + 10ms)) {
    order.push_back(std::get<WorkerOutput>(*event).lines.back());
  }
  CHECK(order == std::vector<std::string>{"next", std::string(1000, 'x'), "last"});
}

TEST_CASE("termination signals become events on the watcher's thread") {
  SignalWatcher::block_termination_signals();
  EventQueue queue;
  {
    SignalWatcher watcher([&](int signo) { queue.push(SignalReceived{signo}); });
    REQUIRE(kill(getpid(), SIGHUP) == 0);
    auto event = queue.pop_until(std::chrono::steady_clock::now() + 5s);
    REQUIRE(event.has_value());
    REQUIRE(std::holds_alternative<SignalReceived>(*event));
    CHECK(std::get<SignalReceived>(*event).signal == SIGHUP);
  }  // the destructor stops the thread within its poll interval
  CHECK(signal_name(SIGINT) == "SIGINT");
  CHECK(signal_name(SIGKILL) == "SIGKILL");
  CHECK(signal_name(64) == "signal 64");
}
