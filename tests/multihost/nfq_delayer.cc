// NFQUEUE packet delayer for the multihost chaos tests. The test kernel has no
// netem, so delay comes from here: iptables sends packets to an NFQUEUE, this
// program holds each one for D ms and then accepts it.
//
//   iptables -I OUTPUT -p tcp -j NFQUEUE --queue-num 7 --queue-bypass
//   nfq_delayer --queue-num 7 --delay-ms 40 [--jitter-ms J] [--loss-percent P] [--seed S]
//
// Binds queue N in the network namespace it runs in, then prints one line to
// stdout, "nfq_delayer: ready queue N", and flushes. Every packet is held
// D ms plus a uniform 0..J ms and accepted; release times never decrease, so
// packets leave in arrival order (TCP sees no reordering). --loss-percent P
// drops that share of packets at once (RNG seeded by --seed, default 1).
// Runs until SIGTERM or SIGINT, then accepts every held packet, unbinds and
// prints "nfq_delayer: queue N: P packets, delayed D ms, dropped K" to
// stderr as its last line (preceded by one warning line if the kernel
// dropped packets because the queue or the socket overflowed) and exits 0.
// Exit 2: bad arguments (one line naming the token); exit 1: cannot bind
// (one line saying why) or the netlink socket failed.
//
// One thread: ppoll() on the queue socket and a signalfd, with a timeout
// equal to the time until the next release (at most 1 s). Packets are copied
// as metadata only (NFQNL_COPY_META, GSO packets unsegmented), the kernel
// queue holds up to 10000 packets, and accepts go out as batch verdicts
// ("every packet up to id X"), one per release round.
//
// Where to hook: a packet queued in OUTPUT still counts against its sending
// socket (TCP small queues, UDP send buffer), so one TCP flow delayed 40 ms
// in OUTPUT tops out near 50 Mbit/s. Queued in INPUT (or PREROUTING) of the
// receiving namespace, after loopback/veth released it from the sender, the
// same flow reaches a few hundred Mbit/s (then the TCP window is the limit).
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink_queue.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>

namespace {

constexpr const char* kUsage =
    "usage: nfq_delayer --queue-num N --delay-ms D [--jitter-ms J] [--loss-percent P] "
    "[--seed S]";
constexpr uint32_t kQueueMaxLen = 10000;
constexpr unsigned kSocketBufferBytes = 32u << 20;
constexpr int kMaxMessagesPerRound = 1024;
constexpr int64_t kIdleWaitNs = 1000000000;  // ppoll timeout with nothing held
constexpr int64_t kMaxDelayMs = 3600000;

struct Options {
  long queue = -1;
  long delay_ms = -1;
  long jitter_ms = 0;
  double loss_percent = 0;
  uint64_t seed = 1;
};

struct Held {
  uint32_t id;
  int64_t release_ns;
};

struct State {
  Options opt;
  std::mt19937_64 rng;
  std::deque<Held> held;
  int64_t last_release_ns = 0;
  uint64_t packets = 0;
  uint64_t dropped = 0;
  uint64_t verdict_errors = 0;
};

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

bool parse_long(const std::string& text, long lo, long hi, long* out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Returns 0 on success, 2 after printing one line naming the bad token.
int parse_args(int argc, char** argv, Options* opt) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    std::string value;
    bool has_value = false;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    if (flag == "--help" || flag == "-h") {
      std::printf("%s\n", kUsage);
      std::exit(0);
    }
    if (flag != "--queue-num" && flag != "--delay-ms" && flag != "--jitter-ms" &&
        flag != "--loss-percent" && flag != "--seed") {
      std::fprintf(stderr, "nfq_delayer: unknown argument '%s' (%s)\n", argv[i], kUsage);
      return 2;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "nfq_delayer: '%s' needs a value (%s)\n", argv[i], kUsage);
        return 2;
      }
      value = argv[++i];
    }
    bool ok = true;
    const char* want = "";
    if (flag == "--queue-num") {
      ok = parse_long(value, 0, 65535, &opt->queue);
      want = "a queue number 0..65535";
    } else if (flag == "--delay-ms") {
      ok = parse_long(value, 0, kMaxDelayMs, &opt->delay_ms);
      want = "milliseconds 0..3600000";
    } else if (flag == "--jitter-ms") {
      ok = parse_long(value, 0, kMaxDelayMs, &opt->jitter_ms);
      want = "milliseconds 0..3600000";
    } else if (flag == "--loss-percent") {
      char* end = nullptr;
      errno = 0;
      double v = value.empty() ? -1 : std::strtod(value.c_str(), &end);
      ok = errno == 0 && end != nullptr && *end == '\0' && std::isfinite(v) && v >= 0 && v <= 100;
      if (ok) opt->loss_percent = v;
      want = "a percentage 0..100";
    } else {  // --seed
      char* end = nullptr;
      errno = 0;
      unsigned long long v = std::strtoull(value.c_str(), &end, 10);
      ok = !value.empty() && value[0] != '-' && errno == 0 && *end == '\0';
      if (ok) opt->seed = v;
      want = "an unsigned integer";
    }
    if (!ok) {
      std::fprintf(stderr, "nfq_delayer: bad value '%s' for %s (want %s)\n", value.c_str(),
                   flag.c_str(), want);
      return 2;
    }
  }
  if (opt->queue < 0 || opt->delay_ms < 0) {
    std::fprintf(stderr, "nfq_delayer: missing %s (%s)\n",
                 opt->queue < 0 ? "--queue-num" : "--delay-ms", kUsage);
    return 2;
  }
  return 0;
}

// nfq_handle_packet() callback: decide drop or hold; holds keep arrival order.
int on_packet(nfq_q_handle* qh, nfgenmsg* /*msg*/, nfq_data* nfa, void* data) {
  auto* st = static_cast<State*>(data);
  nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (ph == nullptr) return 0;
  uint32_t id = ntohl(ph->packet_id);
  ++st->packets;
  if (st->opt.loss_percent > 0 &&
      std::uniform_real_distribution<double>(0, 100)(st->rng) < st->opt.loss_percent) {
    ++st->dropped;
    if (nfq_set_verdict(qh, id, NF_DROP, 0, nullptr) < 0) ++st->verdict_errors;
    return 0;
  }
  int64_t release = now_ns() + st->opt.delay_ms * 1000000;
  if (st->opt.jitter_ms > 0) {
    release += std::uniform_int_distribution<int64_t>(0, st->opt.jitter_ms * 1000000)(st->rng);
  }
  if (release < st->last_release_ns) release = st->last_release_ns;
  st->last_release_ns = release;
  st->held.push_back({id, release});
  return 0;
}

// Accepts every held packet due by `now` (all of them when now < 0) with one
// batch verdict: the kernel accepts each queued packet with id <= the last.
void release_due(nfq_q_handle* qh, State* st, int64_t now) {
  bool any = false;
  uint32_t last = 0;
  while (!st->held.empty() && (now < 0 || st->held.front().release_ns <= now)) {
    last = st->held.front().id;
    st->held.pop_front();
    any = true;
  }
  if (any && nfq_set_verdict_batch(qh, last, NF_ACCEPT) < 0) ++st->verdict_errors;
}

// The kernel's line for queue `queue` in /proc/net/netfilter/nfnetlink_queue
// (this namespace's queues); false if the queue is not bound.
bool queue_stats(long queue, uint64_t* kernel_drops) {
  FILE* f = std::fopen("/proc/net/netfilter/nfnetlink_queue", "r");
  if (f == nullptr) return false;
  bool found = false;
  long num = 0;
  unsigned long long portid = 0, total = 0, mode = 0, range = 0, qdrop = 0, udrop = 0;
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "%ld %llu %llu %llu %llu %llu %llu", &num, &portid, &total, &mode, &range,
                    &qdrop, &udrop) == 7 &&
        num == queue) {
      found = true;
      if (kernel_drops != nullptr) *kernel_drops = qdrop + udrop;  // queue full, socket full
    }
  }
  std::fclose(f);
  return found;
}

const char* bind_hint(int err, long queue) {
  switch (err) {
    case EPERM:  // the kernel's answer both without CAP_NET_ADMIN and for a taken queue
    case EACCES:
      if (queue >= 0 && queue_stats(queue, nullptr)) {
        return " (the queue is busy: another program has bound it)";
      }
      return " (needs root / CAP_NET_ADMIN in this network namespace)";
    case EBUSY:
    case EEXIST:
      return " (another program has bound this queue)";
    case EPROTONOSUPPORT:
    case EAFNOSUPPORT:
    case EOPNOTSUPP:
    case ENOENT:
    case EINVAL:
      return " (is the nfnetlink_queue kernel module available?)";
    default:
      return "";
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (int rc = parse_args(argc, argv, &opt); rc != 0) return rc;
  signal(SIGPIPE, SIG_IGN);  // a caller that closed our stdout must not kill us

  // SIGTERM/SIGINT arrive through a signalfd polled with the queue socket.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  if (sigprocmask(SIG_BLOCK, &stop_signals, nullptr) != 0) {
    std::fprintf(stderr, "nfq_delayer: sigprocmask: %s\n", std::strerror(errno));
    return 1;
  }
  int sig_fd = signalfd(-1, &stop_signals, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sig_fd < 0) {
    std::fprintf(stderr, "nfq_delayer: signalfd: %s\n", std::strerror(errno));
    return 1;
  }

  State st;
  st.opt = opt;
  st.rng.seed(opt.seed);

  errno = 0;
  nfq_handle* h = nfq_open();
  if (h == nullptr) {
    int err = errno;
    std::fprintf(stderr, "nfq_delayer: cannot open an nfnetlink socket: %s%s\n",
                 err != 0 ? std::strerror(err) : "unknown error", bind_hint(err, -1));
    return 1;
  }
  int fd = nfq_fd(h);
  // The binding calls below wait for the kernel's answer: bound that wait.
  timeval rcv_timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv_timeout, sizeof rcv_timeout);
  nfnl_rcvbufsiz(nfq_nfnlh(h), kSocketBufferBytes);  // SO_RCVBUFFORCE as root

  errno = 0;
  nfq_q_handle* qh = nfq_create_queue(h, static_cast<uint16_t>(opt.queue), &on_packet, &st);
  if (qh == nullptr) {
    int err = errno;
    std::fprintf(stderr, "nfq_delayer: cannot bind queue %ld: %s%s\n", opt.queue,
                 err != 0 ? std::strerror(err) : "unknown error", bind_hint(err, opt.queue));
    nfq_close(h);
    return 1;
  }
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
    std::fprintf(stderr, "nfq_delayer: cannot set copy mode on queue %ld: %s\n", opt.queue,
                 std::strerror(errno));
    nfq_destroy_queue(qh);
    nfq_close(h);
    return 1;
  }
  if (nfq_set_queue_maxlen(qh, kQueueMaxLen) < 0) {
    std::fprintf(stderr, "nfq_delayer: cannot set queue %ld length: %s\n", opt.queue,
                 std::strerror(errno));
    nfq_destroy_queue(qh);
    nfq_close(h);
    return 1;
  }
  // Unsegmented GSO packets: fewer, larger messages. Old kernels refuse; fine.
  nfq_set_queue_flags(qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);

  std::printf("nfq_delayer: ready queue %ld\n", opt.queue);
  std::fflush(stdout);

  static char buf[1 << 16];
  uint64_t socket_errors = 0;
  int exit_code = 0;
  bool stop = false;
  while (!stop) {
    int64_t now = now_ns();
    release_due(qh, &st, now);
    int64_t wait_ns = st.held.empty() ? kIdleWaitNs : st.held.front().release_ns - now;
    if (wait_ns < 0) wait_ns = 0;
    if (wait_ns > kIdleWaitNs) wait_ns = kIdleWaitNs;
    timespec timeout{static_cast<time_t>(wait_ns / 1000000000),
                     static_cast<long>(wait_ns % 1000000000)};
    pollfd fds[2] = {{fd, POLLIN, 0}, {sig_fd, POLLIN, 0}};
    int n = ppoll(fds, 2, &timeout, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "nfq_delayer: ppoll: %s\n", std::strerror(errno));
      exit_code = 1;
      break;
    }
    if (fds[1].revents != 0) {
      signalfd_siginfo si{};
      while (read(sig_fd, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) stop = true;
    }
    if (fds[0].revents & POLLNVAL) {
      std::fprintf(stderr, "nfq_delayer: queue socket closed\n");
      exit_code = 1;
      break;
    }
    if (fds[0].revents == 0) continue;  // POLLERR (ENOBUFS) is read and counted below
    for (int i = 0; i < kMaxMessagesPerRound; ++i) {
      ssize_t len = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (len < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR) continue;
        if (errno == ENOBUFS) {  // the kernel dropped messages (counted in /proc)
          ++socket_errors;
          continue;
        }
        std::fprintf(stderr, "nfq_delayer: recv: %s\n", std::strerror(errno));
        exit_code = 1;
        stop = true;
        break;
      }
      nfq_handle_packet(h, buf, static_cast<int>(len));
    }
  }

  release_due(qh, &st, -1);  // accept everything still held
  uint64_t drops = 0;
  queue_stats(opt.queue, &drops);
  nfq_destroy_queue(qh);
  nfq_close(h);
  if (drops > 0 || st.verdict_errors > 0 || socket_errors > 0) {
    std::fprintf(stderr,
                 "nfq_delayer: warning: queue %ld: kernel dropped %" PRIu64
                 " packets (queue full or socket overflow), %" PRIu64 " verdicts failed, %" PRIu64
                 " socket overruns\n",
                 opt.queue, drops, st.verdict_errors, socket_errors);
  }
  std::fprintf(stderr,
               "nfq_delayer: queue %ld: %" PRIu64 " packets, delayed %ld ms, dropped %" PRIu64 "\n",
               opt.queue, st.packets, opt.delay_ms, st.dropped);
  return exit_code;
}
