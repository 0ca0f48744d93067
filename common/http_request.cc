#include "common/http_request.h"

#include "common/printable.h"

namespace hvd::common {

std::optional<size_t> http_head_length(std::string_view received) {
  const size_t end = received.find("\r\n\r\n");
  if (end != std::string_view::npos) return end + 4;
  const size_t bare = received.find("\n\n");  // tolerated: a hand-typed request
  if (bare != std::string_view::npos) return bare + 2;
  return std::nullopt;
}

Result<HttpRequest> parse_http_request(std::string_view head) {
  const size_t eol = head.find('\n');
  std::string_view line = head.substr(0, eol);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return invalid_argument("bad HTTP request line '" + printable(line) + "'");
  }
  const std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    return invalid_argument("bad HTTP version '" + printable(version) + "'");
  }
  HttpRequest request;
  request.method = std::string(line.substr(0, sp1));
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (target.empty() || target.front() != '/') {
    return invalid_argument("bad HTTP target '" + printable(target) + "'");
  }
  const size_t q = target.find('?');
  if (q != std::string_view::npos) {
    request.query = std::string(target.substr(q + 1));
    target = target.substr(0, q);
  }
  request.path = std::string(target);
  return request;
}

}  // namespace hvd::common
