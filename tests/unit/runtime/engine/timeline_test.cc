#include "runtime/engine/timeline.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/runtime/engine/json_lite.h"

namespace hvd::runtime::engine {
namespace {

using namespace std::chrono_literals;
using Clock = Timeline::Clock;
using test::Json;

// A fresh directory under /tmp, removed with everything in it.
struct TempDir {
  TempDir() {
    char templ[] = "/tmp/hvd_timeline_XXXXXX";
    REQUIRE(mkdtemp(templ) != nullptr);
    path = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
  std::string path;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<Timeline> open_timeline(const std::string& path, int rank = 0) {
  auto t = Timeline::open(path, rank);
  REQUIRE(t.is_ok());
  return std::move(t).value();
}

std::vector<Json> parse_events(const std::string& text) {
  test::JsonParser parser(text);
  auto doc = parser.parse();
  INFO(parser.error());
  REQUIRE(doc.has_value());
  REQUIRE(doc->type == Json::Type::kArray);
  for (const Json& e : doc->array) REQUIRE(e.type == Json::Type::kObject);
  return doc->array;
}

// An independent check of the whole file with Python's json module.
void check_with_python(const std::string& path) {
  if (access("/usr/bin/python3", X_OK) != 0) return;  // the C++ parser still checked it
  const std::string cmd =
      "/usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding=\"utf-8\"))' " +
      path;
  CHECK(std::system(cmd.c_str()) == 0);
}

// What the rows of a trace hold, after checking that every B/E event is on a
// row named before it, that B/E pairs nest and balance per row, and that
// timestamps never go back within a row.
struct Rows {
  std::map<long, std::string> names;             // tid -> row name
  std::map<std::string, long> tid_of;            // row name -> tid
  std::map<long, std::vector<const Json*>> events;  // tid -> B/E/i events in file order
  std::size_t begins = 0, ends = 0, marks = 0;
};

Rows check_rows(const std::vector<Json>& events, int pid) {
  Rows rows;
  std::map<long, std::vector<std::string>> open;  // tid -> stack of open phases
  std::map<long, double> last_ts;
  for (const Json& e : events) {
    CHECK(e.num("pid") == pid);
    const std::string ph = e.str("ph");
    const long tid = static_cast<long>(e.num("tid"));
    if (ph == "M") {
      if (e.str("name") == "thread_name") {
        const std::string name = e.get("args")->str("name");
        INFO("row " << tid << " named twice");
        CHECK(rows.names.count(tid) == 0);
        rows.names[tid] = name;
        rows.tid_of[name] = tid;
      }
      continue;
    }
    REQUIRE((ph == "B" || ph == "E" || ph == "i"));
    INFO("event on row " << tid << " before the row was named");
    REQUIRE(rows.names.count(tid) == 1);
    const double ts = e.num("ts");
    REQUIRE(ts >= 0);
    if (last_ts.count(tid)) CHECK(ts >= last_ts[tid]);
    last_ts[tid] = ts;
    rows.events[tid].push_back(&e);
    if (ph == "B") {
      ++rows.begins;
      open[tid].push_back(e.str("name"));
    } else if (ph == "E") {
      ++rows.ends;
      REQUIRE(!open[tid].empty());
      CHECK(open[tid].back() == e.str("name"));
      open[tid].pop_back();
    } else {
      ++rows.marks;
      CHECK(tid == 0);
    }
  }
  for (const auto& [tid, stack] : open) {
    INFO("unbalanced B/E on row " << tid);
    CHECK(stack.empty());
  }
  return rows;
}

TEST_CASE("timeline: metadata, one row per tensor, phases and marks", "[timeline]") {
  TempDir dir;
  const std::string path = dir.file("timeline.json");
  auto timeline = open_timeline(path, 3);
  CHECK(timeline->path() == path);
  const auto t0 = Clock::now();
  timeline->begin("grad_w", "NEGOTIATE", t0 + 1ms);
  timeline->begin("grad_b", "NEGOTIATE", t0 + 2ms);
  timeline->end("grad_w", "NEGOTIATE", t0 + 3ms);
  timeline->mark("CYCLE", t0 + 4ms);
  timeline->end("grad_b", "NEGOTIATE", t0 + 4ms);
  timeline->begin("grad_w", "ALLREDUCE", t0 + 5ms);
  timeline->end("grad_w", "ALLREDUCE", t0 + 6ms);
  timeline->begin("early", "NEGOTIATE", t0 - 1h);  // before the timeline opened
  timeline->end("early", "NEGOTIATE", t0 + 7ms);
  timeline.reset();

  const std::string text = read_file(path);
  CHECK(text.rfind("[\n", 0) == 0);
  CHECK(text.substr(text.size() - 4) == "}\n]\n");
  check_with_python(path);

  const auto events = parse_events(text);
  REQUIRE(events.size() >= 2);
  CHECK(events[0].str("name") == "process_name");
  CHECK(events[0].str("ph") == "M");
  CHECK(events[0].get("args")->str("name") == "hvd rank 3");

  const Rows rows = check_rows(events, 3);
  CHECK(rows.names.at(0) == "engine");
  CHECK(rows.names.at(1) == "grad_w");
  CHECK(rows.names.at(2) == "grad_b");
  CHECK(rows.names.at(3) == "early");
  CHECK(rows.names.size() == 4);
  CHECK(rows.begins == 4);
  CHECK(rows.ends == 4);
  CHECK(rows.marks == 1);

  const auto& w = rows.events.at(1);
  REQUIRE(w.size() == 4);
  CHECK(w[0]->str("name") == "NEGOTIATE");
  CHECK(w[0]->str("ph") == "B");
  CHECK(w[1]->str("ph") == "E");
  CHECK(w[1]->num("ts") - w[0]->num("ts") == 2000);  // microseconds
  CHECK(w[2]->str("name") == "ALLREDUCE");
  CHECK(w[3]->num("ts") - w[2]->num("ts") == 1000);
  CHECK(w[0]->num("ts") >= 1000);  // opened before t0

  const auto& cycle = rows.events.at(0);
  REQUIRE(cycle.size() == 1);
  CHECK(cycle[0]->str("name") == "CYCLE");
  CHECK(cycle[0]->str("ph") == "i");
  CHECK(cycle[0]->str("s") == "t");

  CHECK(rows.events.at(3)[0]->num("ts") == 0);  // clamped
}

TEST_CASE("timeline: names are JSON-escaped", "[timeline]") {
  TempDir dir;
  const std::string path = dir.file("escape.json");
  const std::string weird = "layer\"1\"\\w\nx\t\x01\x1f caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  const std::string invalid_utf8 = std::string("bad\xff\xc3") + "\x28" + "end";
  auto timeline = open_timeline(path);
  timeline->begin(weird, "PH\"ASE\\", Clock::now());
  timeline->end(weird, "PH\"ASE\\", Clock::now());
  timeline->begin(invalid_utf8, "NEGOTIATE", Clock::now());
  timeline->end(invalid_utf8, "NEGOTIATE", Clock::now());
  timeline->mark("mark \"quoted\"\n", Clock::now());
  timeline.reset();

  check_with_python(path);
  const std::string text = read_file(path);
  const auto events = parse_events(text);
  const Rows rows = check_rows(events, 0);
  CHECK(rows.names.at(1) == weird);
  CHECK(rows.names.at(2) == "bad\xef\xbf\xbd\xef\xbf\xbd(end");  // U+FFFD per bad byte
  CHECK(rows.events.at(1)[0]->str("name") == "PH\"ASE\\");
  CHECK(rows.events.at(0)[0]->str("name") == "mark \"quoted\"\n");
  // One event per line: no raw newline inside any event.
  std::size_t lines = 0;
  for (char c : text) lines += c == '\n';
  CHECK(lines == events.size() + 2);  // "[", one line per event, "]", each ending in "\n"
}

TEST_CASE("timeline: destroyed right after open, it is a valid array of metadata", "[timeline]") {
  TempDir dir;
  const std::string path = dir.file("empty.json");
  open_timeline(path, 1).reset();
  check_with_python(path);
  const auto events = parse_events(read_file(path));
  REQUIRE(!events.empty());
  for (const Json& e : events) CHECK(e.str("ph") == "M");
  CHECK(events[0].get("args")->str("name") == "hvd rank 1");
  CHECK(check_rows(events, 1).names.at(0) == "engine");
}

TEST_CASE("timeline: a file that cannot be created fails with its path and reason",
          "[timeline]") {
  TempDir dir;
  SECTION("missing directory") {
    const std::string path = dir.file("no/such/dir/timeline.json");
    auto t = Timeline::open(path, 0);
    REQUIRE(!t.is_ok());
    CHECK(t.status().code() == common::StatusCode::kInvalidArgument);
    CHECK(t.status().message() ==
          "cannot open timeline file '" + path + "': No such file or directory");
  }
  SECTION("a directory") {
    auto t = Timeline::open(dir.path, 0);
    REQUIRE(!t.is_ok());
    CHECK(t.status().code() == common::StatusCode::kInvalidArgument);
    CHECK(t.status().message() == "cannot open timeline file '" + dir.path + "': Is a directory");
  }
}

TEST_CASE("timeline: events from four threads are all written", "[timeline]") {
  TempDir dir;
  const std::string path = dir.file("threads.json");
  constexpr int kThreads = 4, kPairs = 2000, kTensorsPerThread = 25;
  auto timeline = open_timeline(path);
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < kPairs; ++i) {
        const std::string tensor =
            "thread" + std::to_string(k) + "/t" + std::to_string(i % kTensorsPerThread);
        timeline->begin(tensor, "ALLREDUCE", Clock::now());
        timeline->end(tensor, "ALLREDUCE", Clock::now());
        if (k == 0 && i % 100 == 0) timeline->mark("CYCLE", Clock::now());
      }
    });
  }
  for (auto& t : threads) t.join();
  timeline.reset();

  check_with_python(path);
  const Rows rows = check_rows(parse_events(read_file(path)), 0);
  CHECK(rows.begins == kThreads * kPairs);
  CHECK(rows.ends == kThreads * kPairs);
  CHECK(rows.marks == kPairs / 100);
  CHECK(rows.names.size() == kThreads * kTensorsPerThread + 1);
  for (int k = 0; k < kThreads; ++k) {
    for (int j = 0; j < kTensorsPerThread; ++j) {
      const std::string tensor = "thread" + std::to_string(k) + "/t" + std::to_string(j);
      REQUIRE(rows.tid_of.count(tensor) == 1);
      CHECK(rows.events.at(rows.tid_of.at(tensor)).size() == 2 * kPairs / kTensorsPerThread);
    }
  }
}

TEST_CASE("timeline: recording 200k events is cheap for the caller", "[timeline]") {
  TempDir dir;
  const std::string path = dir.file("many.json");
  std::vector<std::string> names;
  for (int i = 0; i < 128; ++i) names.push_back("model/layer" + std::to_string(i) + "/grad");
  auto timeline = open_timeline(path);
  const auto when = Clock::now();
  const auto start = Clock::now();
  for (int i = 0; i < 100000; ++i) {
    timeline->begin(names[i % names.size()], "ALLREDUCE", when);
    timeline->end(names[i % names.size()], "ALLREDUCE", when);
  }
  const auto elapsed = Clock::now() - start;
  timeline.reset();
  INFO("recording took " << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
                         << " ms");
  CHECK(elapsed < 1s);

  const Rows rows = check_rows(parse_events(read_file(path)), 0);
  CHECK(rows.begins == 100000);
  CHECK(rows.ends == 100000);
  CHECK(rows.names.size() == names.size() + 1);
}

TEST_CASE("timeline: events reach the file while it is open, as an unterminated array",
          "[timeline]") {
  TempDir dir;
  const std::string path = dir.file("live.json");
  auto timeline = open_timeline(path);
  timeline->begin("grad", "NEGOTIATE", Clock::now());
  timeline->end("grad", "NEGOTIATE", Clock::now());
  // The writer flushes about every 100 ms; allow plenty.
  const auto deadline = Clock::now() + 5s;
  std::string text;
  while (Clock::now() < deadline) {
    text = read_file(path);
    if (text.find("\"ph\":\"E\"") != std::string::npos) break;
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(text.find("\"ph\":\"E\"") != std::string::npos);
  CHECK(text.back() == '}');  // what a crash now would leave: "[ ... }"
  const Rows rows = check_rows(parse_events(text + "\n]"), 0);
  CHECK(rows.begins == 1);
  CHECK(rows.ends == 1);
  timeline.reset();
  check_with_python(path);
}

}  // namespace
}  // namespace hvd::runtime::engine
