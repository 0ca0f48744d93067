// rendezvous_load: plays N ranks against the real Rendezvous service
// (issue 31). A forked child serves RendezvousService through GrpcServer
// with rendezvous_server_options() on a loopback port, as hvdrun does; this
// process plays every rank over async gRPC (one CompletionQueue, few
// channels, many calls per channel), each rank with its own worker
// credential, making the calls a worker makes:
//   Join (placement: `--per-host` ranks per simulated host);
//   the key exchange of the CPU transport "auto" on several hosts
//   (hierarchical): the host layout (transports/layout.cc; --layout full:
//   as it was before issue 31, every rank reading every rank's host), each host's shm
//   check (transports/shm/segment_rendezvous.cc: identity keys, then the segment key
//   rank 0 of the host sets), and, with --gloo, gloo's cross-host full mesh
//   (transports/gloo/mesh_context.cc: every local rank's cross world);
//   Watch (elastic: one stream per rank), heartbeats at the real period.
// It prints one line of figures (key=value) per N:
//   round_s     all ranks joined and through the key exchange
//   hb_cpu      the server's CPU (% of one core) while every rank beats
//   lost_s      elastic: one rank lost -> the survivors' next round formed
//   rss_mb      the server's peak RSS
// Usage: rendezvous_load --ranks N [--per-host 8] [--elastic] [--gloo]
//        [--layout gather|full] [--hb-seconds 3] [--hb-timeout-s 5] [--hb-interval-ms MS]
// The heartbeat interval is the workers' (Heartbeat::interval_for of the
// timeout and N) unless --hb-interval-ms says.
#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/rendezvous/heartbeat.h"
#include "daemon/rendezvous/rendezvous_service.h"
#include "daemon/rendezvous/round_keys.h"
#include "daemon/rendezvous/worker_credentials.h"
#include "hvd/v1/rendezvous.grpc.pb.h"
#include "proto/grpc_server.h"
#include "proto/rpc_auth.h"
#include "transports/layout.h"

namespace {

using Clock = std::chrono::steady_clock;
using hvd::v1::Rendezvous;

struct Options {
  int ranks = 1024;
  int per_host = 8;
  bool elastic = false;
  bool gloo = false;
  bool layout_full = false;  // every rank gets every rank's layout key (N^2)
  double hb_seconds = 3;
  int hb_interval_ms = 0;  // 0: Heartbeat::interval_for(hb_timeout_s, ranks), as workers do
  int hb_timeout_s = 5;
  int channels = 0;  // 0: one per 512 ranks, at least 4
};

[[noreturn]] void usage(const std::string& bad) {
  std::fprintf(stderr, "rendezvous_load: bad argument '%s'\n", bad.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage(a);
      return argv[++i];
    };
    try {
      if (a == "--ranks") o.ranks = std::stoi(next());
      else if (a == "--per-host") o.per_host = std::stoi(next());
      else if (a == "--elastic") o.elastic = true;
      else if (a == "--gloo") o.gloo = true;
      else if (a == "--layout") {
        std::string v = next();
        if (v != "full" && v != "gather") usage(v);
        o.layout_full = v == "full";
      } else if (a == "--hb-seconds") o.hb_seconds = std::stod(next());
      else if (a == "--hb-interval-ms") o.hb_interval_ms = std::stoi(next());
      else if (a == "--hb-timeout-s") o.hb_timeout_s = std::stoi(next());
      else if (a == "--channels") o.channels = std::stoi(next());
      else usage(a);
    } catch (const std::logic_error&) {
      usage(a);
    }
  }
  if (o.ranks < 2 || o.per_host < 1 || o.ranks % o.per_host != 0) usage("--ranks/--per-host");
  if (o.channels <= 0) o.channels = std::max(4, o.ranks / 512);
  if (o.hb_interval_ms <= 0) {
    o.hb_interval_ms = static_cast<int>(
        hvd::runtime::Heartbeat::interval_for(std::chrono::seconds(o.hb_timeout_s), o.ranks)
            .count());
  }
  return o;
}

// ---- the server child: serves, answers "stat" and "lost <slot>" ----

struct ServerChild {
  pid_t pid = -1;
  FILE* to = nullptr;
  FILE* from = nullptr;
  int port = 0;
};

long rss_kb_now() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  long kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) kb = std::atol(line + 6);
  }
  std::fclose(f);
  return kb;
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

[[noreturn]] void serve(const Options& o, const std::string& token, FILE* in, FILE* out) {
  hvd::daemon::RendezvousService service(token, o.ranks);
  if (o.elastic) service.enable_elastic(1, o.ranks);
  auto server = hvd::daemon::GrpcServer::start("127.0.0.1", 0, {&service},
                                               hvd::daemon::rendezvous_server_options());
  if (!server.is_ok()) {
    std::fprintf(stderr, "rendezvous_load: server: %s\n", server.status().to_string().c_str());
    std::_Exit(1);
  }
  std::fprintf(out, "%d\n", server.value()->port());
  std::fflush(out);
  char line[128];
  while (std::fgets(line, sizeof line, in)) {
    if (std::strncmp(line, "stat", 4) == 0) {
      std::fprintf(out, "%.6f %ld %zu\n", cpu_seconds(), rss_kb_now(), service.watchers());
    } else if (std::strncmp(line, "lost ", 5) == 0) {
      service.hosts_changed({}, {}, {std::atoi(line + 5)});
      std::fprintf(out, "ok\n");
    } else {
      break;
    }
    std::fflush(out);
  }
  service.close();
  server.value()->shutdown(std::chrono::milliseconds(200));
  std::_Exit(0);
}

ServerChild start_server(const Options& o, const std::string& token) {
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) std::exit(1);
  ServerChild c;
  c.pid = fork();
  if (c.pid == 0) {
    close(down[1]);
    close(up[0]);
    serve(o, token, fdopen(down[0], "r"), fdopen(up[1], "w"));
  }
  close(down[0]);
  close(up[1]);
  c.to = fdopen(down[1], "w");
  c.from = fdopen(up[0], "r");
  if (std::fscanf(c.from, "%d", &c.port) != 1) {
    std::fprintf(stderr, "rendezvous_load: the server did not start\n");
    std::exit(1);
  }
  return c;
}

struct ServerStat {
  double cpu = 0;
  long rss_kb = 0;
  long watchers = 0;
};

ServerStat stat(ServerChild& c) {
  std::fprintf(c.to, "stat\n");
  std::fflush(c.to);
  ServerStat s;
  if (std::fscanf(c.from, "%lf %ld %ld", &s.cpu, &s.rss_kb, &s.watchers) != 3) std::exit(1);
  return s;
}

// ---- the ranks ----

// A completion: the callback runs on the CQ thread with gRPC's `ok`.
struct Tag {
  std::function<void(bool)> done;
};
void* tag(std::function<void(bool)> f) { return new Tag{std::move(f)}; }

class Ranks {
 public:
  Ranks(const Options& o, const std::string& address, const std::string& token) : o_(o) {
    for (int c = 0; c < o.channels; ++c) {
      grpc::ChannelArguments args;
      args.SetInt("hvd.load.channel", c);  // a connection of its own
      args.SetMaxReceiveMessageSize(64 << 20);
      stubs_.push_back(Rendezvous::NewStub(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args)));
    }
    for (int r = 0; r < o.ranks; ++r) creds_.push_back(hvd::daemon::worker_credential(token, r));
    slot_round_.assign(static_cast<size_t>(o.ranks), 0);
    rank_of_.assign(static_cast<size_t>(o.ranks), 0);
    for (int t = 0; t < 2; ++t) threads_.emplace_back([this] { poll(); });
  }
  ~Ranks() {
    cq_.Shutdown();
    for (auto& t : threads_) t.join();
  }

  Rendezvous::Stub& stub(int slot) { return *stubs_[static_cast<size_t>(slot % o_.channels)]; }

  std::unique_ptr<grpc::ClientContext> context(int slot, double seconds) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    hvd::proto::attach_token(*ctx, creds_[static_cast<size_t>(slot)]);
    if (seconds > 0) {
      ctx->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
    }
    return ctx;
  }

  // One unary call; `then(ok, reply)` on the CQ thread. Fails the run on error.
  template <typename Req, typename Rep, typename Prepare>
  void call(int slot, const char* name, Prepare prepare, const Req& req,
            std::function<void(Rep&)> then, double seconds = 120) {
    struct Call {
      std::unique_ptr<grpc::ClientContext> ctx;
      Rep reply;
      grpc::Status status;
      std::unique_ptr<grpc::ClientAsyncResponseReader<Rep>> reader;
    };
    auto* c = new Call;
    c->ctx = context(slot, seconds);
    c->reader = prepare(stub(slot), c->ctx.get(), req, &cq_);
    c->reader->StartCall();
    c->reader->Finish(&c->reply, &c->status, tag([this, c, name, slot, then](bool) {
      if (!c->status.ok()) {
        if (stopping_) return delete c;  // cancelled at exit
        failures_++;
        if (failures_ <= 5) {
          std::fprintf(stderr, "rendezvous_load: %s of slot %d failed: %s\n", name, slot,
                       c->status.error_message().c_str());
        }
      } else if (then) {
        then(c->reply);
      }
      delete c;
    }));
  }

  void join(int slot, int prev_rank, std::function<void(const hvd::v1::JoinReply&)> then) {
    hvd::v1::JoinRequest req;
    req.set_rank(slot);
    req.set_size(o_.ranks);
    req.set_host("h" + std::to_string(slot / o_.per_host));
    req.set_pid(100000 + slot);
    req.set_timeout_ms(300'000);
    req.set_local_rank(slot % o_.per_host);
    req.set_local_size(o_.per_host);
    req.set_prev_rank(prev_rank);
    call<hvd::v1::JoinRequest, hvd::v1::JoinReply>(
        slot, "Join",
        [](Rendezvous::Stub& s, grpc::ClientContext* ctx, const hvd::v1::JoinRequest& r,
           grpc::CompletionQueue* cq) { return s.PrepareAsyncJoin(ctx, r, cq); },
        req, [then](hvd::v1::JoinReply& rep) { then(rep); }, 300);
  }

  void set(int slot, const std::string& key, const std::string& value, std::function<void()> then) {
    hvd::v1::SetRequest req;
    req.set_key(key);
    req.set_value(value);
    call<hvd::v1::SetRequest, hvd::v1::SetReply>(
        slot, "Set",
        [](Rendezvous::Stub& s, grpc::ClientContext* ctx, const hvd::v1::SetRequest& r,
           grpc::CompletionQueue* cq) { return s.PrepareAsyncSet(ctx, r, cq); },
        req, [then](hvd::v1::SetReply&) { then(); });
  }

  // As RendezvousClient::get does it: one call per kMaxKeysPerCall keys.
  void get(int slot, std::vector<std::string> keys,
           std::function<void(const hvd::v1::GetReply&)> then, size_t from = 0,
           std::shared_ptr<hvd::v1::GetReply> all = nullptr) {
    if (!all) all = std::make_shared<hvd::v1::GetReply>();
    const size_t to = std::min(keys.size(), from + hvd::daemon::kMaxKeysPerCall);
    hvd::v1::GetRequest req;
    for (size_t i = from; i < to; ++i) req.add_keys(keys[i]);
    req.set_timeout_ms(120'000);
    call<hvd::v1::GetRequest, hvd::v1::GetReply>(
        slot, "Get",
        [](Rendezvous::Stub& s, grpc::ClientContext* ctx, const hvd::v1::GetRequest& r,
           grpc::CompletionQueue* cq) { return s.PrepareAsyncGet(ctx, r, cq); },
        req, [this, slot, keys = std::move(keys), then, to, all](hvd::v1::GetReply& rep) mutable {
          for (auto& v : *rep.mutable_values()) all->add_values(std::move(v));
          if (to < keys.size()) return get(slot, std::move(keys), then, to, all);
          then(*all);
        });
  }

  void heartbeat(int slot) {
    hvd::v1::HeartbeatRequest req;
    req.set_rank(slot);
    req.set_round(slot_round_[static_cast<size_t>(slot)]);
    call<hvd::v1::HeartbeatRequest, hvd::v1::HeartbeatReply>(
        slot, "Heartbeat",
        [](Rendezvous::Stub& s, grpc::ClientContext* ctx, const hvd::v1::HeartbeatRequest& r,
           grpc::CompletionQueue* cq) { return s.PrepareAsyncHeartbeat(ctx, r, cq); },
        req, [this](hvd::v1::HeartbeatReply&) { beats_++; }, 10);
  }

  // Watch of `slot` (a member of `round`); `on_event` per event.
  void watch(int slot, int64_t round, std::function<void(const hvd::v1::MembershipEvent&)> on_event) {
    struct W {
      std::unique_ptr<grpc::ClientContext> ctx;
      hvd::v1::MembershipWatchRequest req;
      hvd::v1::MembershipEvent ev;
      std::unique_ptr<grpc::ClientAsyncReader<hvd::v1::MembershipEvent>> reader;
      std::function<void(bool)> read;
    };
    auto* w = new W;
    w->ctx = context(slot, 0);
    w->req.set_slot(slot);
    w->req.set_round(round);
    {
      std::lock_guard lock(mu_);
      watches_.push_back(w->ctx.get());
    }
    w->read = [this, w, on_event](bool ok) {
      if (!ok) return;  // ended (cancelled at exit): W leaks until exit
      on_event(w->ev);
      w->reader->Read(&w->ev, tag(w->read));
    };
    w->reader = stub(slot).PrepareAsyncWatch(w->ctx.get(), w->req, &cq_);
    w->reader->StartCall(tag([this, w](bool ok) {
      if (ok) w->reader->Read(&w->ev, tag(w->read));
    }));
  }

  void cancel_watches() {
    std::lock_guard lock(mu_);
    for (auto* c : watches_) c->TryCancel();
  }

  std::vector<int64_t> slot_round_;
  std::vector<int> rank_of_;
  std::atomic<long> failures_{0};
  std::atomic<long> beats_{0};
  std::atomic<bool> stopping_{false};  // the figures are out: calls may fail

 private:
  void poll() {
    void* t = nullptr;
    bool ok = false;
    while (cq_.Next(&t, &ok)) {
      auto* g = static_cast<Tag*>(t);
      g->done(ok);
      delete g;
    }
  }

  const Options& o_;
  grpc::CompletionQueue cq_;
  std::vector<std::unique_ptr<Rendezvous::Stub>> stubs_;
  std::vector<std::string> creds_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::vector<grpc::ClientContext*> watches_;
};

// Waits until `count` reaches `target` (or the deadline); false on timeout.
// Stops early when a call failed.
std::atomic<long>* g_failures = nullptr;
bool wait_for(std::atomic<int>& count, int target, double seconds) {
  const auto end = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  while (count.load() < target) {
    if (g_failures && g_failures->load() > 0) return false;
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The key exchange of one rank (hierarchical "auto" over several hosts),
// after its Join in `round`; `done()` once through.
void exchange(Ranks& ranks, const Options& o, int slot, int rank, int64_t round,
              std::function<void()> done) {
  const std::string prefix = hvd::daemon::round_key_prefix(round);
  const int n = o.ranks;
  const int host = rank / o.per_host, local = rank % o.per_host;
  const int hosts = n / o.per_host;
  auto shm = [&ranks, &o, slot, local, host, hosts, prefix, done] {
    const std::string p = prefix + "h/local" + std::to_string(host) + "/shm/";
    auto segment = [&ranks, &o, slot, local, host, hosts, prefix, p, done] {
      auto gloo = [&ranks, &o, slot, local, host, hosts, prefix, done] {
        if (!o.gloo || hosts < 2) return done();
        // gloo's cross world of this local rank: `hosts` ranks, full mesh.
        const std::string g = prefix + "h/cross" + std::to_string(local) + "/";
        ranks.set(slot, g + std::to_string(host), std::string(136 * (hosts - 1), 'a'),
                  [&ranks, slot, g, hosts, done] {
                    std::vector<std::string> keys;
                    for (int h = 0; h < hosts; ++h) keys.push_back(g + std::to_string(h));
                    ranks.get(slot, keys, [done](const hvd::v1::GetReply&) { done(); });
                  });
      };
      if (local == 0) return ranks.set(slot, p + "segment", "at:1:/anon", gloo);
      ranks.get(slot, {p + "segment"}, [gloo](const hvd::v1::GetReply&) { gloo(); });
    };
    // transports/shm/segment_rendezvous.cc check_one_host within the host.
    ranks.set(slot, p + "host/" + std::to_string(local), "boot\n1\n2\nh" + std::to_string(host),
              [&ranks, &o, slot, p, segment] {
                std::vector<std::string> keys;
                for (int r = 0; r < o.per_host; ++r) keys.push_back(p + "host/" + std::to_string(r));
                ranks.get(slot, keys, [segment](const hvd::v1::GetReply&) { segment(); });
              });
  };
  // transports/layout.cc: the hosts of every rank. "full" (before issue
  // 31): every rank reads every rank's key; "gather": rank 0 reads them and
  // publishes the encoded groups, which the others read.
  const std::string lp = prefix + "layout/";
  ranks.set(slot, lp + std::to_string(rank), "h" + std::to_string(host),
            [&ranks, &o, slot, rank, lp, n, shm] {
              if (!o.layout_full && rank != 0) {
                return ranks.get(slot, {lp + "all"}, [shm](const hvd::v1::GetReply&) { shm(); });
              }
              std::vector<std::string> keys;
              for (int r = 0; r < n; ++r) keys.push_back(lp + std::to_string(r));
              ranks.get(slot, keys, [&ranks, &o, slot, lp, shm](const hvd::v1::GetReply& rep) {
                if (o.layout_full) return shm();
                std::vector<std::string> hosts(rep.values().begin(), rep.values().end());
                ranks.set(slot, lp + "all", hvd::transports::encode_groups(
                                                hvd::transports::groups_of(hosts)), shm);
              });
            });
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  const Options o = parse(argc, argv);
  const std::string token = "load-generator-job-token-0123456789abcdef";
  ServerChild server = start_server(o, token);
  const std::string address = "127.0.0.1:" + std::to_string(server.port);
  bool good = true;
  {
    Ranks ranks(o, address, token);
    g_failures = &ranks.failures_;
    const ServerStat before = stat(server);

    // 1. The first round: every rank joins, then goes through the exchange.
    std::atomic<int> through{0};
    const auto t0 = Clock::now();
    std::atomic<int> joined{0};
    for (int slot = 0; slot < o.ranks; ++slot) {
      ranks.join(slot, -1, [&, slot](const hvd::v1::JoinReply& rep) {
        ranks.slot_round_[static_cast<size_t>(slot)] = rep.round();
        ranks.rank_of_[static_cast<size_t>(slot)] = rep.rank();
        joined++;
        exchange(ranks, o, slot, rep.rank(), rep.round(), [&] { through++; });
      });
    }
    good = wait_for(joined, o.ranks, 300);
    const double join_s = since(t0);
    good = good && wait_for(through, o.ranks, 300);
    const double round_s = since(t0);
    const ServerStat after_round = stat(server);

    // 2. Elastic: every rank watches membership, as elastic workers do.
    std::atomic<int> rejoined{0};
    Clock::time_point lost_at;
    const int lost_slot = o.ranks / 2;
    if (good && o.elastic) {
      std::atomic<int> removed_seen{0};
      for (int slot = 0; slot < o.ranks; ++slot) {
        ranks.watch(slot, ranks.slot_round_[static_cast<size_t>(slot)],
                    [&, slot](const hvd::v1::MembershipEvent& ev) {
                      if (ev.kind() != hvd::v1::MembershipEvent::REMOVED || slot == lost_slot) return;
                      removed_seen++;
                      ranks.join(slot, ranks.rank_of_[static_cast<size_t>(slot)],
                                 [&, slot](const hvd::v1::JoinReply& rep) {
                                   ranks.slot_round_[static_cast<size_t>(slot)] = rep.round();
                                   rejoined++;
                                 });
                    });
      }
      const auto until = Clock::now() + std::chrono::seconds(60);
      while (stat(server).watchers < o.ranks && Clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }

    // 3. Steady heartbeats at the real period, spread over the interval.
    double hb_cpu = 0;
    long hb_rate = 0;
    if (good) {
      const ServerStat a = stat(server);
      const long beats0 = ranks.beats_.load();
      const auto start = Clock::now();
      const double period = o.hb_interval_ms / 1000.0;
      long sent = 0;
      while (since(start) < o.hb_seconds) {
        const long due = static_cast<long>(since(start) / period * o.ranks);
        for (; sent < due; ++sent) ranks.heartbeat(static_cast<int>(sent % o.ranks));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      const double wall = since(start);
      const ServerStat b = stat(server);
      hb_cpu = 100.0 * (b.cpu - a.cpu) / wall;
      hb_rate = static_cast<long>((ranks.beats_.load() - beats0) / wall);
    }

    // 4. Elastic: one rank lost -> the survivors' next round.
    double lost_s = -1;
    if (good && o.elastic) {
      lost_at = Clock::now();
      std::fprintf(server.to, "lost %d\n", lost_slot);
      std::fflush(server.to);
      char ok[16];
      if (std::fscanf(server.from, "%15s", ok) != 1) return 1;
      if (wait_for(rejoined, o.ranks - 1, 120)) {
        lost_s = since(lost_at);
      } else {
        good = false;
      }
    }
    const ServerStat end = stat(server);
    std::printf(
        "ranks=%d per_host=%d elastic=%d layout=%s gloo=%d join_s=%.3f round_s=%.3f "
        "round_cpu_s=%.2f hb_interval_ms=%d hb_per_s=%ld hb_cpu=%.1f lost_s=%.3f rss_mb=%.1f "
        "failures=%ld ok=%d\n",
        o.ranks, o.per_host, o.elastic ? 1 : 0, o.layout_full ? "full" : "gather", o.gloo ? 1 : 0,
        join_s, round_s, after_round.cpu - before.cpu, o.hb_interval_ms, hb_rate, hb_cpu, lost_s,
        static_cast<double>(end.rss_kb) / 1024.0, ranks.failures_.load(),
        good && ranks.failures_.load() == 0 ? 1 : 0);
    std::fflush(stdout);
    ranks.stopping_ = true;
    ranks.cancel_watches();
    std::fprintf(server.to, "quit\n");
    std::fflush(server.to);
    int status = 0;
    waitpid(server.pid, &status, 0);
  }
  return good ? 0 : 1;
}
