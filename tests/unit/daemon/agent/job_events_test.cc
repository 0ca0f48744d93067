#include <catch2/catch.hpp>

#include <atomic>
#include <future>

#include "daemon/agent/job_events.h"

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
  CHECK(seen[0].output().text() == "a");
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
  std::vector<v1::WatchEvent> seen;
  CHECK(events.watch([&](const v1::WatchEvent& e) {
                       seen.push_back(e);
                       return true;
                     },
                     never_cancelled)
            .ok());
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
  int written = 0;
  auto status = events.watch(
      [&](const v1::WatchEvent&) {
        ++written;
        return true;
      },
      never_cancelled);
  CHECK(written == 1);
  CHECK(status.error_code() == grpc::StatusCode::CANCELLED);
  CHECK(status.error_message() == "shutting down");
}

TEST_CASE("JobEvents drops output beyond its limit, says so, and keeps exits") {
  JobEvents events(1);
  const std::string line(64 * 1024, 'z');
  const size_t pushed = JobEvents::kMaxQueuedBytes / line.size() + 50;
  for (size_t i = 0; i < pushed; ++i) events.push(output(0, line));
  events.push(exit_event(0, 0));
  size_t lines = 0;
  std::string notice;
  bool exited = false;
  auto status = events.watch(
      [&](const v1::WatchEvent& e) {
        if (e.has_exit()) exited = true;
        else if (e.output().text() == line) ++lines;
        else notice = e.output().text();
        return true;
      },
      never_cancelled);
  CHECK(status.ok());
  CHECK(exited);
  CHECK(lines < pushed);
  CHECK(lines > pushed - 100);
  CHECK(notice == "hvd-agent: " + std::to_string(pushed - lines) +
                      " line(s) of output dropped: they were not read in time");
}

TEST_CASE("JobEvents discard drops queued and later events and ends every watch") {
  JobEvents events(1);
  events.push(output(0, "unread"));
  events.discard({grpc::StatusCode::ABORTED, "the launcher is gone"});
  events.push(output(0, "later"));
  events.push(exit_event(0, 0));
  int written = 0;
  auto status = events.watch(
      [&](const v1::WatchEvent&) {
        ++written;
        return true;
      },
      never_cancelled);
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
