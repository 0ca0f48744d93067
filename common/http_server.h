// A small HTTP/1.1 server for read-only pages (hvdrun's and hvd-agent's
// /metrics, the live job page): GET (and HEAD) only, one request per
// connection (Connection: close), one thread running one poll loop over the
// listening socket and at most kMaxConnections connections. A request head
// is at most kMaxHttpHeadBytes and must arrive within kReadDeadline; a
// reply must be taken within kWriteDeadline; a connection past its
// deadline is closed. The handler runs on the server's thread: it must
// return quickly (it renders a page from state it reads under its own
// locks). No TLS and no authentication: bind it to loopback (the default
// of every caller) unless the user names an address.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "common/http_request.h"
#include "common/status.h"

namespace hvd::common {

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

class HttpServer {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest& request)>;
  static constexpr int kMaxConnections = 32;
  static constexpr std::chrono::seconds kReadDeadline{5};
  static constexpr std::chrono::seconds kWriteDeadline{10};

  // Listens on `address`:`port` (an IPv4 or IPv6 literal; port 0: any free
  // port) and serves from a thread of its own; the error names the address
  // when it cannot bind.
  static Result<std::unique_ptr<HttpServer>> start(const std::string& address, int port,
                                                   Handler handler);
  ~HttpServer();  // stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The port it listens on.
  int port() const { return port_; }
  // Ends the thread and closes every connection. Idempotent.
  void stop();

 private:
  HttpServer(int listen_fd, int wake_read, int wake_write, int port, Handler handler);
  void run();

  const int listen_fd_;
  const int wake_read_;   // a pipe: stop() writes, the loop wakes
  const int wake_write_;
  const int port_;
  const Handler handler_;
  bool stopped_ = false;
  std::thread thread_;  // last: starts after everything above exists
};

// "HTTP/1.1 200 OK" and its headers, then the body (none for HEAD).
std::string render_http_response(const HttpResponse& response, bool head_only);

}  // namespace hvd::common
