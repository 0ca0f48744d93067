// A file under /tmp holding `text`, for tests that parse files.
#pragma once

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

namespace hvd::test {

inline std::string write_temp_file(const std::string& text) {
  char path[] = "/tmp/hvd_test_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

}  // namespace hvd::test
