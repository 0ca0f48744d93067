#include "common/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/logging.h"

namespace hvd::common {

namespace {

using Clock = std::chrono::steady_clock;

struct Connection {
  int fd = -1;
  std::string in;   // the request head as it arrives
  std::string out;  // the reply, once rendered
  size_t sent = 0;
  Clock::time_point deadline;
};

std::string_view reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return status < 400 ? "OK" : "Error";
  }
}

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

Result<int> bind_listener(const std::string& address, int port) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    length = sizeof(*v4);
  } else if (inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    length = sizeof(*v6);
  } else {
    return invalid_argument("metrics address '" + address + "' is not an IP address");
  }
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return unavailable(std::string("socket: ") + std::strerror(errno));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 || listen(fd, 64) != 0) {
    const std::string why = std::strerror(errno);
    close(fd);
    return unavailable("cannot listen on " + address + ":" + std::to_string(port) + ": " + why);
  }
  set_nonblocking(fd);
  return fd;
}

int bound_port(int fd) {
  sockaddr_storage storage{};
  socklen_t length = sizeof(storage);
  getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
  if (storage.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&storage)->sin_port);
}

HttpResponse error_response(int status, std::string text) {
  return {status, "text/plain; charset=utf-8", std::move(text) + "\n"};
}

// The reply to a complete head (or to one over the limit: `too_large`).
std::string answer(const std::string& head, bool too_large, const HttpServer::Handler& handler) {
  if (too_large) return render_http_response(error_response(431, "request head too large"), false);
  auto request = parse_http_request(head);
  if (!request.is_ok()) {
    return render_http_response(error_response(400, request.status().message()), false);
  }
  const bool head_only = request.value().method == "HEAD";
  if (request.value().method != "GET" && !head_only) {
    return render_http_response(
        error_response(405, "method '" + request.value().method.substr(0, 16) + "' not allowed"),
        false);
  }
  try {
    return render_http_response(handler(request.value()), head_only);
  } catch (const std::exception& e) {
    spdlog::warn("metrics page {}: {}", request.value().path, e.what());
    return render_http_response(error_response(503, "page failed"), false);
  }
}

}  // namespace

std::string render_http_response(const HttpResponse& response, bool head_only) {
  std::string out = "HTTP/1.1 " + std::to_string(response.status) + " ";
  out += reason_phrase(response.status);
  out += "\r\nContent-Type: " + response.content_type;
  out += "\r\nContent-Length: " + std::to_string(response.body.size());
  out += "\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
  if (!head_only) out += response.body;
  return out;
}

Result<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& address, int port,
                                                      Handler handler) {
  if (port < 0 || port > 65535) {
    return invalid_argument("metrics port " + std::to_string(port) + " is out of range");
  }
  auto fd = bind_listener(address, port);
  if (!fd.is_ok()) return fd.status();
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(fd.value());
    return unavailable(std::string("pipe: ") + std::strerror(errno));
  }
  return std::unique_ptr<HttpServer>(new HttpServer(fd.value(), pipe_fds[0], pipe_fds[1],
                                                    bound_port(fd.value()), std::move(handler)));
}

HttpServer::HttpServer(int listen_fd, int wake_read, int wake_write, int port, Handler handler)
    : listen_fd_(listen_fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      port_(port),
      handler_(std::move(handler)) {
  thread_ = std::thread([this] { run(); });
}

HttpServer::~HttpServer() {
  stop();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void HttpServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  const char byte = 0;
  [[maybe_unused]] auto n = write(wake_write_, &byte, 1);
  if (thread_.joinable()) thread_.join();
}

void HttpServer::run() {
  pthread_setname_np(pthread_self(), "hvd-http");
  std::vector<Connection> connections;
  std::vector<pollfd> fds;
  while (true) {
    fds.clear();
    fds.push_back({wake_read_, POLLIN, 0});
    fds.push_back({listen_fd_,
                   static_cast<short>(connections.size() < kMaxConnections ? POLLIN : 0), 0});
    for (const auto& c : connections) {
      fds.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
    }
    if (poll(fds.data(), fds.size(), 250) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;
    const auto now = Clock::now();
    for (size_t i = 0; i < connections.size(); ++i) {
      Connection& c = connections[i];
      const short events = fds[i + 2].revents;
      bool done = now >= c.deadline || (events & (POLLERR | POLLNVAL)) != 0;
      if (!done && c.out.empty() && (events & (POLLIN | POLLHUP)) != 0) {
        char buffer[4096];
        const ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
        if (n <= 0) {
          done = n == 0 || (errno != EAGAIN && errno != EINTR);
        } else {
          c.in.append(buffer, static_cast<size_t>(n));
          const auto length = http_head_length(c.in);
          const bool too_large = !length && c.in.size() >= kMaxHttpHeadBytes;
          if (length || too_large) {
            c.out = answer(length ? c.in.substr(0, *length) : std::string(), too_large, handler_);
            c.deadline = now + kWriteDeadline;
          }
        }
      } else if (!done && !c.out.empty() && (events & POLLOUT) != 0) {
        const ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) c.sent += static_cast<size_t>(n);
        done = c.sent == c.out.size() || (n < 0 && errno != EAGAIN && errno != EINTR);
      }
      if (done) {
        close(c.fd);
        c.fd = -1;
      }
    }
    std::erase_if(connections, [](const Connection& c) { return c.fd < 0; });
    if ((fds[1].revents & POLLIN) != 0) {
      while (connections.size() < kMaxConnections) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        connections.push_back({fd, {}, {}, 0, now + kReadDeadline});
      }
    }
  }
  for (const auto& c : connections) close(c.fd);
}

}  // namespace hvd::common
