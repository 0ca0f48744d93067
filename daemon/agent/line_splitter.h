// Splits a byte stream into lines at '\n' (the newline is dropped). A line
// longer than kMaxLine comes out in kMaxLine pieces (a newline right after a
// full piece ends that line; it adds no empty line); finish() hands out a last
// line that has no newline.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace hvd::daemon {

class LineSplitter {
 public:
  static constexpr size_t kMaxLine = 64 * 1024;
  using Emit = std::function<void(std::string line)>;

  void feed(std::string_view data, const Emit& emit);
  // Emits what is left (a line without a newline), if anything.
  void finish(const Emit& emit);

 private:
  std::string pending_;
  bool just_split_ = false;  // the last piece was cut at kMaxLine
};

}  // namespace hvd::daemon
