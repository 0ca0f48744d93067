#include <catch2/catch.hpp>

#include <atomic>
#include <utility>
#include <future>
#include <string>
#include <vector>

#include "daemon/agent/agent_job_events.h"

using namespace std::chrono_literals;
using hvd::daemon::JobEvents;
using hvd::daemon::ProcessEvent;
namespace v1 = hvd::v1;

namespace {

ProcessEvent output(int rank, std::string text, bool is_stderr = false) {
  ProcessEvent e;
  e.rank = rank;
  e.pid = 100 + rank;
  e.is_stderr = is_stderr;
  e.text = std::move(text);
  return e;
}

ProcessEvent exit_event(int rank, int code) {
  ProcessEvent e;
  e.kind = ProcessEvent::Kind::kExit;
  e.rank = rank;
  e.pid = 100 + rank;
  e.exit_code = code;
  return e;
}

auto never_cancelled = [] { return false; };

// Every event of a watch that must end OK.
std::vector<v1::WatchEvent> watch_all(JobEvents& events) {
  std::vector<v1::WatchEvent> seen;
  CHECK(events.watch([&](const v1::WatchEvent& e) {
                       seen.push_back(e);
                       return true;
                     },
                     never_cancelled)
            .ok());
  return seen;
}

// How many events a watch wrote, and how it ended.
std::pair<int, grpc::Status> count_watched(JobEvents& events) {
  int written = 0;
  grpc::Status status = events.watch(
      [&](const v1::WatchEvent&) {
        ++written;
        return true;
      },
      never_cancelled);
  return {written, status};
}

std::vector<std::string> lines_of(const v1::WatchEvent& e) {
  return {e.output().lines().begin(), e.output().lines().end()};
}

}  // namespace

TEST_CASE("JobEvents streams queued events and ends after the last exit") {
  JobEvents events(2);
  events.push(output(0, "a"));
  events.push(output(1, "b", true));
  events.push(exit_event(0, 0));
  std::vector<v1::WatchEvent> seen;
  auto watcher = std::async(std::launch::async, [&] {
    return events.watch(
        [&](const v1::WatchEvent& e) {
          seen.push_back(e);
          return true;
        },
        never_cancelled);
  });
  std::this_thread::sleep_for(20ms);
  events.push(exit_event(1, 3));
  REQUIRE(watcher.wait_for(5s) == std::future_status::ready);
  CHECK(watcher.get().ok());
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].output().lines(0) == "a");
  CHECK(seen[0].output().stream() == v1::STDOUT);
  CHECK(seen[1].output().stream() == v1::STDERR);
  CHECK(seen[1].output().rank() == 1);
  CHECK(seen[2].exit().rank() == 0);
  CHECK(seen[3].exit().exit_code() == 3);
  CHECK(seen[3].exit().pid() == 101);
}

TEST_CASE("JobEvents streams a worker's stops and continues as state events") {
  JobEvents events(1);
  ProcessEvent stopped;
  stopped.kind = ProcessEvent::Kind::kState;
  stopped.rank = 3;
  stopped.pid = 103;
  stopped.stopped = true;
  events.push(stopped);
  stopped.stopped = false;
  events.push(stopped);
  events.push(exit_event(3, 0));
  const std::vector<v1::WatchEvent> seen = watch_all(events);
  REQUIRE(seen.size() == 3);
  REQUIRE(seen[0].has_state());
  CHECK(seen[0].state().rank() == 3);
  CHECK(seen[0].state().pid() == 103);
  CHECK(seen[0].state().state() == v1::ProcessState::STOPPED);
  CHECK(seen[1].state().state() == v1::ProcessState::RUNNING);
  CHECK(seen[2].has_exit());  // a state event is no exit: the stream went on
}

TEST_CASE("JobEvents keeps an event whose write failed, and allows one watcher at a time") {
  JobEvents events(1);
  events.push(output(0, "first"));
  CHECK(events.watch([](const v1::WatchEvent&) { return false; }, never_cancelled)
            .error_code() == grpc::StatusCode::CANCELLED);

  std::atomic<bool> stop{false};
  auto busy = std::async(std::launch::async, [&] {
    return events.watch([](const v1::WatchEvent&) { return true; }, [&] { return stop.load(); });
  });
  std::this_thread::sleep_for(50ms);
  CHECK(events.watch([](const v1::WatchEvent&) { return true; }, never_cancelled).error_code() ==
        grpc::StatusCode::FAILED_PRECONDITION);
  stop = true;
  REQUIRE(busy.wait_for(2s) == std::future_status::ready);
  CHECK(busy.get().error_code() == grpc::StatusCode::CANCELLED);
}

TEST_CASE("JobEvents close ends a watcher with the reason after the queued events") {
  JobEvents events(1);
  events.push(output(0, "x"));
  events.close({grpc::StatusCode::CANCELLED, "shutting down"});
  auto [written, status] = count_watched(events);
  CHECK(written == 1);
  CHECK(status.error_code() == grpc::StatusCode::CANCELLED);
  CHECK(status.error_message() == "shutting down");
}

TEST_CASE("JobEvents gathers consecutive lines of one worker's stream into one event") {
  JobEvents events(2);
  events.push(output(0, "a"));
  events.push(output(0, "b"));
  events.push(output(0, "c", true));
  events.push(output(1, "d"));
  events.push(output(0, "e"));
  events.push(exit_event(0, 0));
  events.push(output(1, "f"));
  events.push(exit_event(1, 0));
  const std::vector<v1::WatchEvent> seen = watch_all(events);
  REQUIRE(seen.size() == 7);
  CHECK(lines_of(seen[0]) == std::vector<std::string>{"a", "b"});
  CHECK(lines_of(seen[1]) == std::vector<std::string>{"c"});
  CHECK(seen[1].output().stream() == v1::STDERR);
  CHECK(lines_of(seen[2]) == std::vector<std::string>{"d"});
  CHECK(seen[2].output().rank() == 1);
  CHECK(lines_of(seen[3]) == std::vector<std::string>{"e"});
  CHECK(seen[4].has_exit());
  CHECK(lines_of(seen[5]) == std::vector<std::string>{"f"});
  CHECK(seen[6].has_exit());
}

TEST_CASE("JobEvents keeps every line past its limit, has no room until half is written") {
  JobEvents events(1);
  std::atomic<int> wakes{0};
  events.on_room([&] { ++wakes; });
  auto text = [](size_t i) {  // 1000 bytes
    std::string number = std::to_string(i);
    return std::string(1000 - number.size(), 'z') + number;
  };
  const size_t per_line = 1000 + JobEvents::kLineOverhead;
  const size_t to_fill = (JobEvents::kMaxQueuedBytes + per_line - 1) / per_line;
  size_t pushed = 0;
  for (; pushed + 1 < to_fill; ++pushed) events.push(output(0, text(pushed)));
  CHECK(events.has_room());
  events.push(output(0, text(pushed++)));
  CHECK_FALSE(events.has_room());
  // The queue itself never drops: a Supervisor that pushes on (a process's
  // last output after its exit) is kept.
  for (int i = 0; i < 10; ++i) events.push(output(0, text(pushed++)));
  events.push(exit_event(0, 0));

  size_t lines = 0;
  size_t room_at = 0;  // lines written when has_room() turned true
  bool in_order = true;
  auto status = events.watch(
      [&](const v1::WatchEvent& e) {
        if (e.has_output()) {
          CHECK(e.output().lines_size() <=
                static_cast<int>(JobEvents::kMaxEventBytes / per_line));
          for (const auto& line : e.output().lines()) {
            in_order = in_order && line == text(lines);
            ++lines;
          }
        }
        if (room_at == 0 && events.has_room()) room_at = lines;
        return true;
      },
      never_cancelled);
  CHECK(status.ok());
  CHECK(in_order);
  CHECK(lines == pushed);
  CHECK(wakes == 1);
  // has_room() turned true once no more than half the limit was queued.
  CHECK(room_at > 0);
  CHECK((pushed - room_at) * per_line <= JobEvents::kMaxQueuedBytes / 2);
  CHECK((pushed - room_at) * per_line >=
        JobEvents::kMaxQueuedBytes / 2 - 2 * JobEvents::kMaxEventBytes);
}

TEST_CASE("JobEvents puts an event whose write failed back at the front") {
  JobEvents events(1);
  events.push(output(0, "a"));
  CHECK(events.watch([](const v1::WatchEvent&) { return false; }, never_cancelled)
            .error_code() == grpc::StatusCode::CANCELLED);
  events.push(output(0, "b"));  // joins "a", back in the queue
  events.push(exit_event(0, 0));
  const std::vector<v1::WatchEvent> seen = watch_all(events);
  REQUIRE(seen.size() == 2);
  CHECK(lines_of(seen[0]) == std::vector<std::string>{"a", "b"});
}

TEST_CASE("JobEvents discarded has room again and wakes the reader of the pipes") {
  JobEvents events(1);
  std::atomic<int> wakes{0};
  events.on_room([&] { ++wakes; });
  const std::string line(64 * 1024, 'z');
  while (events.has_room()) events.push(output(0, line));
  events.discard({grpc::StatusCode::ABORTED, "gone"});
  CHECK(events.has_room());
  CHECK(wakes == 1);
}

TEST_CASE("JobEvents discard drops queued and later events and ends every watch") {
  JobEvents events(1);
  events.push(output(0, "unread"));
  events.discard({grpc::StatusCode::ABORTED, "the launcher is gone"});
  events.push(output(0, "later"));
  events.push(exit_event(0, 0));
  auto [written, status] = count_watched(events);
  CHECK(written == 0);
  CHECK(status.error_code() == grpc::StatusCode::ABORTED);
  CHECK(status.error_message() == "the launcher is gone");
}

TEST_CASE("JobEvents discard ends a watch that is waiting") {
  JobEvents events(1);
  auto watcher = std::async(std::launch::async, [&] {
    return events.watch([](const v1::WatchEvent&) { return true; }, never_cancelled);
  });
  std::this_thread::sleep_for(20ms);
  events.discard({grpc::StatusCode::ABORTED, "gone"});
  REQUIRE(watcher.wait_for(5s) == std::future_status::ready);
  CHECK(watcher.get().error_code() == grpc::StatusCode::ABORTED);
}
