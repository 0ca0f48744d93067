#include "transports/gloo/gloo_transport.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "common/host_lookup.h"
#include "transports/argument_checks.h"
#include "transports/gloo/factory.h"
#include "transports/gloo/mesh_context.h"
#include "transports/gloo/pair_abort.h"
#include "transports/gloo/store_adapter.h"
#include "transports/reduce_functions.h"

namespace hvd::transports::gloo {

namespace {

// Ring allreduce segment size. Gloo's default is 1 MiB; larger segments
// mean fewer hand-offs between its I/O thread and the caller per buffer,
// which is what limits bandwidth on small CPU hosts (bench/hvd_perf).
constexpr size_t kAllreduceSegmentBytes = 4 << 20;

using common::StatusCode;

// gloo's TCP pairs write with writev(2), so a peer that died would kill this
// process with SIGPIPE on the next write instead of failing the collective.
// Like CPython at start-up, ignore SIGPIPE unless the program chose a handler.
void ignore_sigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    std::signal(SIGPIPE, SIG_IGN);
  }
}

// gloo reports timeouts and lost peers alike as IoException.
StatusCode io_error_code(const char* what) {
  return std::strstr(what, "Timed out") != nullptr ? StatusCode::kTimeout : StatusCode::kUnavailable;
}

// gloo wants a buffer object even for zero bytes; never hand it a null pointer.
void* writable(void* data, char& placeholder) { return data != nullptr ? data : &placeholder; }
void* writable(const void* data, char& placeholder) {
  // gloo only reads from send buffers, but its API takes non-const pointers.
  return data != nullptr ? const_cast<void*>(data) : &placeholder;
}

std::vector<int64_t> to_vector(std::span<const int64_t> counts) {
  return {counts.begin(), counts.end()};
}

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) {
    const auto& x = reinterpret_cast<const sockaddr_in&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in&>(b);
    return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
  }
  if (a.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
    return x.sin6_port == y.sin6_port &&
           std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof(x.sin6_addr)) == 0;
  }
  return false;
}

// Whether `fd` is a connected socket bound to one of `addresses`.
bool is_pair_socket(int fd, const std::vector<sockaddr_storage>& addresses) {
  sockaddr_storage local{};
  sockaddr_storage peer{};
  socklen_t local_size = sizeof(local);
  socklen_t peer_size = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_size) != 0) {
    return false;  // not a socket, or not a connected one
  }
  for (const auto& address : addresses) {
    if (same_address(local, address)) return true;
  }
  return false;
}

// Descriptors of our own (dup()s) for the sockets of `context`'s pairs, so
// that abort() can shut them down: gloo keeps its descriptors to itself. In
// this gloo every pair's connected socket is bound to the pair's address (the
// connecting side binds before it connects), which no other socket has.
std::vector<int> own_pair_sockets(::gloo::Context& context) {
  std::vector<sockaddr_storage> addresses;
  for (int peer = 0; peer < context.size; ++peer) {
    if (peer == context.rank || !context.getPair(peer)) continue;
    const auto* address =
        dynamic_cast<const ::gloo::transport::tcp::Address*>(&context.getPair(peer)->address());
    if (address != nullptr) addresses.push_back(address->getSockaddr());
  }
  std::vector<int> sockets;
  std::error_code error;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end; !error && it != end;
       it.increment(error)) {
    std::string name = it->path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc() ||
        std::find(sockets.begin(), sockets.end(), fd) != sockets.end() ||  // a copy made here
        !is_pair_socket(fd, addresses)) {
      continue;
    }
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) continue;
    // `fd` may have been closed and reused since the check: check the copy.
    if (is_pair_socket(own, addresses)) {
      sockets.push_back(own);
    } else {
      ::close(own);
    }
  }
  if (sockets.size() < addresses.size()) {
    spdlog::warn("gloo transport: {} found {} of its {} sockets ({}); abort() leaves calls on the "
                 "others to the transport timeout",
                 where(context.rank, context.size), sockets.size(), addresses.size(),
                 error ? error.message() : "some are missing from /proc/self/fd");
  }
  return sockets;
}

}  // namespace

GlooTransport::GlooTransport(int rank, int size, std::chrono::milliseconds timeout,
                             std::shared_ptr<::gloo::Context> context, std::vector<int> sockets)
    : rank_(rank),
      size_(size),
      timeout_(timeout),
      context_(std::move(context)),
      sockets_(std::move(sockets)) {}

GlooTransport::~GlooTransport() {
  context_.reset();  // gloo closes its descriptors and stops its I/O thread
  for (int fd : sockets_) ::close(fd);
}

Result<std::unique_ptr<Transport>> GlooTransport::connect(const TransportContext& ctx) {
  HVD_RETURN_IF_ERROR(check_context(kName, ctx));
  ignore_sigpipe();
  // Resolved and checked here, and gloo given the number: Debian's gloo
  // resolves a name itself and crashes on one that does not resolve.
  auto address = common::local_listen_address(ctx.bind_address);
  if (!address.is_ok()) {
    return common::invalid_argument("gloo transport: " + where(ctx.rank, ctx.size) +
                                    " cannot listen on '" + ctx.bind_address +
                                    "': " + address.status().message());
  }
  std::shared_ptr<::gloo::transport::Device> device;
  try {
    ::gloo::transport::tcp::attr attr;
    attr.hostname = *address;
    device = ::gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return common::invalid_argument("gloo transport: " + where(ctx.rank, ctx.size) +
                                    " cannot listen on '" + ctx.bind_address + "': " + e.what());
  }
  auto context = std::make_shared<MeshContext>(ctx.rank, ctx.size);
  context->setTimeout(ctx.timeout);
  // Nobody to find at size 1: a private in-memory store is enough.
  ::gloo::rendezvous::HashStore local;
  std::optional<StoreAdapter> shared;
  if (ctx.size > 1) shared.emplace(*ctx.store, ctx.key_prefix, ctx.timeout);
  ::gloo::rendezvous::Store& store =
      shared ? static_cast<::gloo::rendezvous::Store&>(*shared) : local;
  const std::string failed =
      "gloo transport: " + where(ctx.rank, ctx.size) + " could not connect to its peers";
  try {
    auto connected = context->connect(store, device, ctx.timeout, ctx.abort.get());
    if (!connected.is_ok()) return connected.with_context(failed);
  } catch (const std::exception& e) {
    if (ctx.abort && ctx.abort->fired()) {
      return ctx.abort->reason().with_context(failed);
    }
    if (shared && !shared->first_error().is_ok()) return shared->first_error().with_context(failed);
    return common::Status(io_error_code(e.what()), failed + ": " + e.what());
  }
  spdlog::debug("gloo transport: {} connected (key prefix '{}', listening on {})",
                where(ctx.rank, ctx.size), ctx.key_prefix, ctx.bind_address);
  std::vector<int> sockets = own_pair_sockets(*context);
  return std::unique_ptr<Transport>(
      new GlooTransport(ctx.rank, ctx.size, ctx.timeout, context, std::move(sockets)));
}

std::string_view GlooTransport::name() const { return kName; }

template <typename Body>
Status GlooTransport::guarded(std::string_view op, Body&& body) {
  try {
    body();
    return Status::ok();
  } catch (const ::gloo::IoException& e) {
    return failed(op, Status(io_error_code(e.what()), e.what()));
  } catch (const std::exception& e) {  // ::gloo::EnforceNotMet (an assertion) and the rest
    return failed(op, Status(StatusCode::kInternal, e.what()));
  }
}

Status GlooTransport::check_reduction(Reduction /*collective*/, DataType type, ReduceOp op) const {
  return reduce_function(kName, type, op).status();
}

void GlooTransport::on_failure(const Status& error) {
  // (After an abort, whatever the closed sockets made gloo throw is the
  // abort: TransportBase returns the abort's Status, and this does not run.)
  // The caller gets the error and reports it (hvd's engine: one warning,
  // Runtime::abort's, that names this failure): details here.
  spdlog::info("{}", error.message());
  // gloo may have closed its descriptors of the failed pairs, but ours keep
  // the sockets open: shut them all down (the transport is failed for good)
  // so that peers see this rank leave, as they did before ours existed.
  shut_down_sockets();
}

void GlooTransport::shut_down_sockets() const {
  // gloo's I/O thread sees end of file and fails every pending operation of
  // the pair (an operation posted later fails when posted).
  for (int fd : sockets_) ::shutdown(fd, SHUT_RDWR);
}

void GlooTransport::on_abort(const Status& /*reason*/, const Status& aborted) {
  // Whoever aborts says why at warning level (Runtime::abort): details here.
  spdlog::info("{}", aborted.message());
  shut_down_sockets();
  // What the sockets' end does not reach: messages in progress (pair_abort.h).
  fail_pairs(*context_, aborted.message());
}

Status GlooTransport::do_allreduce(Buffer data, DataType type, ReduceOp op) {
  auto fn = reduce_function(kName, type, op);  // check_reduction found it
  if (data.size == 0) return Status::ok();     // nothing to move on any rank
  return guarded("allreduce", [&] {
    if (size_ == 1 && type == DataType::kBool) {
      // gloo skips the reduce function in a world of one; bools still come
      // back as 0 or 1, as they do in larger worlds.
      fn.value()(data.data, data.data, data.data, data.size);
    }
    ::gloo::AllreduceOptions opts(context_);
    size_t elements = data.size / common::data_type_size(type);
    // The element type only fixes the element size; `fn` does the typed work.
    switch (common::data_type_size(type)) {
      case 1: opts.setOutput(static_cast<uint8_t*>(data.data), elements); break;
      case 2: opts.setOutput(static_cast<uint16_t*>(data.data), elements); break;
      case 4: opts.setOutput(static_cast<uint32_t*>(data.data), elements); break;
      default: opts.setOutput(static_cast<uint64_t*>(data.data), elements); break;
    }
    opts.setReduceFunction(fn.value());
    opts.setTag(next_tag());
    opts.setTimeout(timeout_);
    opts.setMaxSegmentSize(kAllreduceSegmentBytes);
    ::gloo::allreduce(opts);
  });
}

Status GlooTransport::do_allgatherv(ConstBuffer in, Buffer out, std::span<const int64_t> counts) {
  if (out.size == 0) return Status::ok();
  return guarded("allgatherv", [&] {
    char placeholder = 0;
    ::gloo::AllgathervOptions opts(context_);
    opts.setInput(static_cast<uint8_t*>(writable(in.data, placeholder)), in.size);
    opts.setOutput(static_cast<uint8_t*>(out.data), std::vector<size_t>(counts.begin(), counts.end()));
    opts.setTag(next_tag());
    opts.setTimeout(timeout_);
    ::gloo::allgatherv(opts);
  });
}

Status GlooTransport::do_broadcast(Buffer data, int root) {
  if (data.size == 0) return Status::ok();
  return guarded("broadcast", [&] {
    ::gloo::BroadcastOptions opts(context_);
    opts.setOutput(static_cast<uint8_t*>(data.data), data.size);
    opts.setRoot(root);
    opts.setTag(next_tag());
    opts.setTimeout(timeout_);
    ::gloo::broadcast(opts);
  });
}

void GlooTransport::exchange(const void* in, std::span<const int64_t> send_counts, void* out,
                             std::span<const int64_t> recv_counts) {
  char in_placeholder = 0;
  char out_placeholder = 0;
  ::gloo::AlltoallvOptions opts(context_);
  opts.setInput(static_cast<uint8_t*>(writable(in, in_placeholder)), to_vector(send_counts));
  opts.setOutput(static_cast<uint8_t*>(writable(out, out_placeholder)), to_vector(recv_counts));
  opts.setTag(next_tag());
  opts.setTimeout(timeout_);
  ::gloo::alltoallv(opts);
}

Status GlooTransport::do_alltoallv(ConstBuffer in, std::span<const int64_t> send_counts,
                                   Buffer out, std::span<const int64_t> recv_counts) {
  // Every rank takes part even when it has nothing to send or receive: its
  // peers' (empty) messages must still be matched.
  return guarded("alltoallv", [&] { exchange(in.data, send_counts, out.data, recv_counts); });
}

Status GlooTransport::do_reducescatter(ConstBuffer in, Buffer out,
                                       std::span<const int64_t> recv_counts, DataType type,
                                       ReduceOp op) {
  auto fn = reduce_function(kName, type, op);       // check_reduction found it
  if (total(recv_counts) == 0) return Status::ok();  // recv_counts agree on every rank
  // Chunk r of every rank's input goes to rank r, which reduces the size_
  // chunks it receives in rank order (so every run gives the same bits).
  size_t chunk = out.size;
  std::vector<char> gathered(chunk * static_cast<size_t>(size_));
  std::vector<int64_t> from_each(static_cast<size_t>(size_), static_cast<int64_t>(chunk));
  return guarded("reducescatter", [&] {
    exchange(in.data, recv_counts, gathered.data(), from_each);
    if (chunk == 0) return;
    size_t elements = chunk / common::data_type_size(type);
    std::memcpy(out.data, gathered.data(), chunk);
    for (int r = 1; r < size_; ++r) {
      fn.value()(out.data, out.data, gathered.data() + chunk * static_cast<size_t>(r), elements);
    }
  });
}

Status GlooTransport::do_barrier() {
  return guarded("barrier", [&] {
    ::gloo::BarrierOptions opts(context_);
    opts.setTag(next_tag());
    opts.setTimeout(timeout_);
    ::gloo::barrier(opts);
  });
}

}  // namespace hvd::transports::gloo
