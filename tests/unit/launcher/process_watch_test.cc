#include "launcher/elastic/process_watch.h"

#include <catch2/catch.hpp>

namespace hvd::launcher::elastic {

namespace {

using namespace std::chrono_literals;
const ProcessWatch::Clock::time_point t0{};

// "process:stopped|late" for each overdue process.
std::vector<std::string> overdue(ProcessWatch& w, ProcessWatch::Clock::time_point now) {
  std::vector<std::string> out;
  for (const auto& o : w.overdue(now)) {
    out.push_back(std::to_string(o.process) + (o.stopped ? ":stopped " : ":late ") +
                  std::to_string(o.limit.count()));
  }
  return out;
}

}  // namespace

TEST_CASE("process watch: stopped for the limit, or not arrived by the start limit",
          "[elastic][starters]") {
  ProcessWatch w({3s, 30s});
  w.state(5, true, t0);  // a stop may be seen before the process is first listed
  w.keep_only({{5, false}, {6, true}, {7, true}}, t0);
  w.arrived(7);
  CHECK(overdue(w, t0 + 2s).empty());
  CHECK(overdue(w, t0 + 3s) == std::vector<std::string>{"5:stopped 3"});
  CHECK(overdue(w, t0 + 4s).empty());  // each once
  CHECK(overdue(w, t0 + 30s) == std::vector<std::string>{"6:late 30"});  // 7 arrived
  // Listed no more (joined, exited): forgotten; listed again: a new start.
  w.keep_only({{7, true}}, t0 + 31s);
  w.keep_only({{6, true}}, t0 + 40s);
  CHECK(overdue(w, t0 + 69s).empty());
  CHECK(overdue(w, t0 + 70s) == std::vector<std::string>{"6:late 30"});
  w.forget(6);
  w.keep_only({{6, false}}, t0 + 71s);  // a first worker need not arrive
  CHECK(overdue(w, t0 + 1000s).empty());
}

TEST_CASE("process watch: running again resets the stop, zero limits check nothing",
          "[elastic][starters]") {
  ProcessWatch w({3s, 30s});
  w.keep_only({{1, false}}, t0);
  w.state(1, true, t0);
  w.state(1, false, t0 + 2s);
  w.state(1, true, t0 + 4s);
  w.state(1, true, t0 + 5s);  // a repeated report keeps the first time
  CHECK(overdue(w, t0 + 6s).empty());
  CHECK(overdue(w, t0 + 7s) == std::vector<std::string>{"1:stopped 3"});
  ProcessWatch off({0s, 0s});
  off.keep_only({{1, true}}, t0);
  off.state(1, true, t0);
  CHECK(overdue(off, t0 + 24h).empty());
}

}  // namespace hvd::launcher::elastic
