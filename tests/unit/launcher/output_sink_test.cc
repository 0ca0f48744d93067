#include "launcher/output_sink.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace hvd::launcher;
namespace fs = std::filesystem;

namespace {

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string text;
  char buf[256];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
  return text;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("output lines are prefixed by rank and stream and logs hold the raw lines") {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  REQUIRE(out != nullptr);
  REQUIRE(err != nullptr);
  char tmpl[] = "/tmp/hvd_sink_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  fs::path dir = fs::path(tmpl) / "logs" / "nested";
  {
    OutputSink sink(out, err);
    REQUIRE(sink.open_log_dir(dir.string(), 2).is_ok());
    sink.write(0, false, "hello");
    sink.write(1, true, "oops");
    sink.write(1, false, "");
    sink.write(0, false, "bye");
  }
  CHECK(read_all(out) == "[0]<stdout>:hello\n[1]<stdout>:\n[0]<stdout>:bye\n");
  CHECK(read_all(err) == "[1]<stderr>:oops\n");
  CHECK(read_file(dir / "rank.0" / "stdout") == "hello\nbye\n");
  CHECK(read_file(dir / "rank.0" / "stderr") == "");
  CHECK(read_file(dir / "rank.1" / "stdout") == "\n");
  CHECK(read_file(dir / "rank.1" / "stderr") == "oops\n");
  std::fclose(out);
  std::fclose(err);
  fs::remove_all(tmpl);
}

TEST_CASE("output sink: a batch of lines, each prefixed, binary bytes as they are") {
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  {
    OutputSink sink(out, out);
    const std::vector<std::string> lines{"a", "", std::string("\xff\x00\x80z", 4)};
    sink.write(3, false, lines);
  }
  CHECK(read_all(out) == "[3]<stdout>:a\n[3]<stdout>:\n[3]<stdout>:" + std::string("\xff\x00\x80z", 4) + "\n");
  std::fclose(out);
}

TEST_CASE("a log directory that cannot be created is reported") {
  std::FILE* out = std::tmpfile();
  OutputSink sink(out, out);
  auto status = sink.open_log_dir("/proc/hvd-cannot-create", 1);
  REQUIRE_FALSE(status.is_ok());
  CHECK_THAT(status.message(),
             Catch::Contains("--output-filename") && Catch::Contains("/proc/hvd-cannot-create"));
  std::fclose(out);
}

TEST_CASE("output sink: with timestamps each printed line starts with the time") {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  REQUIRE(out != nullptr);
  REQUIRE(err != nullptr);
  {
    OutputSink sink(out, err);
    sink.set_timestamps(true);
    sink.write(1, false, "hello");
  }
  const std::string text = read_all(out);
  // "Thu Nov 26 16:01:36 2026[1]<stdout>:hello\n"
  const size_t at = text.find("[1]<stdout>:hello\n");
  REQUIRE(at != std::string::npos);
  CHECK(at == 24);
  CHECK(text[3] == ' ');
  CHECK(text[13] == ':');
  CHECK(text[16] == ':');
  CHECK(read_all(err).empty());
  std::fclose(out);
  std::fclose(err);
}
