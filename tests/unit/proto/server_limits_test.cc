// Connections that hold a server's resources without calling anything
// (issue 21: 200 idle connections were held forever): a peer that connects
// and never speaks is dropped after the handshake timeout, a gRPC connection
// without calls after the idle timeout, and a connection with an open
// stream is not idle.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "hvd/v1/agent.grpc.pb.h"
#include "proto/grpc_server.h"

using namespace std::chrono_literals;
using hvd::daemon::GrpcServer;
using hvd::daemon::ServerOptions;
namespace v1 = hvd::v1;

namespace {

// Watch streams stay open until release(); Info answers at once.
class HoldingService final : public v1::Agent::Service {
 public:
  grpc::Status Watch(grpc::ServerContext* ctx, const v1::WatchRequest*,
                     grpc::ServerWriter<v1::WatchEvent>* writer) override {
    writer->Write(v1::WatchEvent());
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return released_ || ctx->IsCancelled(); });
    return ctx->IsCancelled() ? grpc::Status::CANCELLED : grpc::Status::OK;
  }
  grpc::Status Info(grpc::ServerContext*, const v1::InfoRequest*, v1::InfoReply*) override {
    return grpc::Status::OK;
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

std::unique_ptr<GrpcServer> start(HoldingService& service, const ServerOptions& options) {
  auto started = GrpcServer::start("127.0.0.1", 0, {&service}, options);
  REQUIRE(started.is_ok());
  return std::move(started).value();
}

// A channel with a connection of its own.
std::shared_ptr<grpc::Channel> own_channel(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

}  // namespace

TEST_CASE("A server drops connections that never send the HTTP/2 preface") {
  HoldingService service;
  ServerOptions options;
  options.handshake_timeout_ms = 300;
  auto server = start(service, options);

  constexpr int kSockets = 200;
  std::vector<int> fds;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < kSockets; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    fds.push_back(fd);
  }
  // Each must see the server close it (EOF or reset) well within 10 s.
  const auto start_time = std::chrono::steady_clock::now();
  const auto deadline = start_time + 10s;
  int closed = 0;
  for (int fd : fds) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd p{fd, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char byte[64];
      const ssize_t n = ::recv(fd, byte, sizeof(byte), 0);
      if (n <= 0) {  // EOF or reset: closed by the server
        ++closed;
        break;
      }
      // The server's SETTINGS: read on until it closes.
    }
    ::close(fd);
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start_time);
  INFO(closed << " of " << kSockets << " silent connections closed by the server in "
              << took.count() << " ms");
  CHECK(closed == kSockets);
  server->shutdown(1s);
}

TEST_CASE("A server closes gRPC connections without calls after the idle timeout") {
  HoldingService service;
  ServerOptions options;
  options.max_connection_idle_ms = 300;
  auto server = start(service, options);

  constexpr int kChannels = 50;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < kChannels; ++i) {
    channels.push_back(own_channel(server->address()));
    REQUIRE(channels.back()->WaitForConnected(std::chrono::system_clock::now() + 5s));
  }
  // The server's GOAWAY takes each back to IDLE (it reconnects at its next call).
  int closed = 0;
  const auto deadline = std::chrono::system_clock::now() + 10s;
  for (auto& channel : channels) {
    grpc_connectivity_state state = channel->GetState(false);
    while (state == GRPC_CHANNEL_READY && channel->WaitForStateChange(state, deadline)) {
      state = channel->GetState(false);
    }
    if (state != GRPC_CHANNEL_READY) ++closed;
  }
  CHECK(closed == kChannels);
  // A channel closed for idleness calls again as usual.
  auto stub = v1::Agent::NewStub(channels.front());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 5s);
  v1::InfoReply reply;
  CHECK(stub->Info(&ctx, v1::InfoRequest(), &reply).ok());
  server->shutdown(1s);
}

TEST_CASE("A connection with an open stream is not idle") {
  HoldingService service;
  ServerOptions options;
  options.max_connection_idle_ms = 200;
  auto server = start(service, options);
  auto channel = own_channel(server->address());
  auto stub = v1::Agent::NewStub(channel);
  grpc::ClientContext ctx;
  auto reader = stub->Watch(&ctx, v1::WatchRequest());
  v1::WatchEvent event;
  REQUIRE(reader->Read(&event));
  // Five idle timeouts with the stream open but silent: the connection must
  // stay (there is no event to wait for; the absence of one is the point).
  const auto deadline = std::chrono::system_clock::now() + 1s;
  grpc_connectivity_state state = channel->GetState(false);
  while (state == GRPC_CHANNEL_READY && channel->WaitForStateChange(state, deadline)) {
    state = channel->GetState(false);
  }
  CHECK(state == GRPC_CHANNEL_READY);
  service.release();
  CHECK_FALSE(reader->Read(&event));
  CHECK(reader->Finish().ok());
  server->shutdown(1s);
}
