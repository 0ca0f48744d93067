#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "daemon/agent/line_splitter.h"

using hvd::daemon::LineSplitter;

namespace {

struct Collect {
  std::vector<std::string> lines;
  LineSplitter::Emit emit() {
    return [this](std::string line) { lines.push_back(std::move(line)); };
  }
};

}  // namespace

TEST_CASE("LineSplitter joins pieces and splits at newlines") {
  LineSplitter s;
  Collect c;
  s.feed("ab", c.emit());
  s.feed("c\nd", c.emit());
  s.feed("\n\nxyz", c.emit());
  CHECK(c.lines == std::vector<std::string>{"abc", "d", ""});
  s.finish(c.emit());
  CHECK(c.lines == std::vector<std::string>{"abc", "d", "", "xyz"});
  s.finish(c.emit());  // nothing left
  CHECK(c.lines.size() == 4);
}

TEST_CASE("LineSplitter cuts long lines into 64 KiB pieces") {
  LineSplitter s;
  Collect c;
  const size_t max = LineSplitter::kMaxLine;
  s.feed(std::string(max, 'a'), c.emit());
  REQUIRE(c.lines.size() == 1);
  s.feed("\n", c.emit());  // ends the line already handed out: no empty line
  REQUIRE(c.lines.size() == 1);
  s.feed(std::string(max + 10, 'b') + "\nc\n", c.emit());
  REQUIRE(c.lines.size() == 4);
  CHECK(c.lines[1] == std::string(max, 'b'));
  CHECK(c.lines[2] == std::string(10, 'b'));
  CHECK(c.lines[3] == "c");
}
