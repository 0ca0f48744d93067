// The head of an HTTP/1.1 request, as the metrics server (http_server.h)
// reads it: the request line only; headers are skipped. Untrusted input:
// anything but "METHOD SP TARGET SP HTTP/1.x" is refused with a message
// naming the offending token (escaped, printable.h).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd::common {

struct HttpRequest {
  std::string method;  // "GET"
  std::string path;    // "/metrics" (the target without its query)
  std::string query;   // after '?', or empty
};

// Bytes of a request head at most (request line and headers).
inline constexpr size_t kMaxHttpHeadBytes = 8 * 1024;

// The length of the head in `received` (through its blank line), or none
// while it is incomplete.
std::optional<size_t> http_head_length(std::string_view received);

// Parses the request line of a complete head.
Result<HttpRequest> parse_http_request(std::string_view head);

}  // namespace hvd::common
