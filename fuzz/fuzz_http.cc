// The request head of hvdrun's and hvd-agent's metrics port
// (common/http_request.h), straight from the network: any bytes. Checks: the
// head length, when found, is within the input and ends with a blank line;
// a parsed request has a method without spaces and a path that starts with
// '/' and holds no '?'; every refusal is INVALID_ARGUMENT with a one-line
// printable message.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/http_request.h"
#include "fuzz_check.h"

using hvd::fuzz::one_line_printable;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto length = hvd::common::http_head_length(input);
  if (length) {
    FUZZ_CHECK(*length <= size, std::to_string(*length));
    FUZZ_CHECK(input.substr(0, *length).ends_with("\n\n") ||
                   input.substr(0, *length).ends_with("\r\n\r\n"),
               "head without its blank line");
  }
  auto request = hvd::common::parse_http_request(input);
  if (!request.is_ok()) {
    FUZZ_CHECK(request.status().code() == hvd::common::StatusCode::kInvalidArgument,
               request.status().message());
    FUZZ_CHECK(one_line_printable(request.status().message()), request.status().message());
    return 0;
  }
  FUZZ_CHECK(request->method.find(' ') == std::string::npos, request->method);
  FUZZ_CHECK(!request->path.empty() && request->path.front() == '/', request->path);
  FUZZ_CHECK(request->path.find('?') == std::string::npos, request->path);
  return 0;
}
