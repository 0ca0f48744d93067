// Helpers for tests of untrusted input (issue 21): FIFOs that must not block
// a reader, and messages that must not carry raw bytes to a terminal.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>

namespace hvd::test {

// Makes a FIFO at `path` (replacing a file there) and returns `read()`'s
// result, `read` being a call that opens the FIFO. Should `read` still block
// after 3 s, the FIFO is opened for writing once so that it returns, and the
// test fails.
template <class Read>
auto read_fifo_within_3s(const std::string& path, Read read) {
  ::unlink(path.c_str());
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  auto pending = std::async(std::launch::async, read);
  if (pending.wait_for(std::chrono::seconds(3)) != std::future_status::ready) {
    const int writer = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
    pending.wait();
    FAIL("reading the FIFO " << path << " blocked");
  }
  return pending.get();
}

// True when every byte of `text` is printable ASCII (0x20..0x7e).
inline bool printable_ascii(const std::string& text) {
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) return false;
  }
  return true;
}

}  // namespace hvd::test
