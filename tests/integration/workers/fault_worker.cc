// Integration worker for failure handling: ranks that exit, get killed,
// never initialize, leave grandchildren behind or probe the rendezvous
// without credentials. Usage (all flags optional, combinable):
//
//   fault_worker [--exit-rank R [--exit-code C]] [--kill-rank R]
//                [--no-init-rank R] [--grandchild] [--sleep S]
//                [--probe-unauthenticated] [--probe-rights]
//                [--flood-concurrent worker|none]
//
// First line: "fault_worker: rank R pid P pgid G". Without a behaviour flag
// the worker initializes, passes a barrier, shuts down and exits 0.
// --probe-rights (2 ranks; test_faults.py): after hvd_init rank 0 sets a key
// of its round with its own credential (HVD_JOB_TOKEN); rank 1, with its
// own, tries to overwrite and delete it, to send heartbeats for slot 0 and
// then floods the store with 20 Set calls of 15 MiB, printing "rights: ..."
// lines with what the service answered; rank 0 then checks that its key is
// intact. Exit 0 when both ranks got through.
// --flood-concurrent (2 ranks; test_faults.py): after hvd_init rank 1 sends
// 20 Set calls of 15 MiB at once (20 threads, one channel) with its own
// credential ("worker") or with none ("none"), printing "flood start",
// "flood refused N of 20" with the codes it got, then "flood done".
// Unknown or malformed flags: usage message, exit 2.
#include <grpcpp/grpcpp.h>
#include <hvd/c_api.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "hvd/v1/rendezvous.grpc.pb.h"

namespace {

constexpr char kUsage[] =
    "usage: fault_worker [--exit-rank R [--exit-code C]] [--kill-rank R] [--no-init-rank R]\n"
    "                    [--grandchild] [--sleep S] [--probe-unauthenticated]\n"
    "                    [--probe-rights] [--flood-concurrent worker|none]\n";

struct Options {
  int exit_rank = -1;
  int exit_code = 1;
  int kill_rank = -1;
  int no_init_rank = -1;
  bool grandchild = false;
  double sleep_seconds = -1;
  bool probe = false;
  bool probe_rights = false;
  std::string flood;  // --flood-concurrent: "worker" or "none"
};

bool parse_number(const char* text, double* out) {
  if (text == nullptr) return false;
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0';
}

bool parse_int(const char* text, int* out) {
  double value = 0;
  if (!parse_number(text, &value) || value != static_cast<int>(value)) return false;
  *out = static_cast<int>(value);
  return true;
}

// False (after printing why) on anything unexpected.
bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--grandchild") {
      o->grandchild = true;
      continue;
    }
    if (flag == "--probe-unauthenticated") {
      o->probe = true;
      continue;
    }
    if (flag == "--probe-rights") {
      o->probe_rights = true;
      continue;
    }
    if (flag == "--flood-concurrent") {
      const char* value = i + 1 < argc ? argv[++i] : "";
      o->flood = value;
      if (o->flood != "worker" && o->flood != "none") {
        std::fprintf(stderr, "fault_worker: --flood-concurrent needs worker or none, got '%s'\n%s",
                     value, kUsage);
        return false;
      }
      continue;
    }
    int* int_target = flag == "--exit-rank"      ? &o->exit_rank
                      : flag == "--exit-code"    ? &o->exit_code
                      : flag == "--kill-rank"    ? &o->kill_rank
                      : flag == "--no-init-rank" ? &o->no_init_rank
                                                 : nullptr;
    if (int_target == nullptr && flag != "--sleep") {
      std::fprintf(stderr, "fault_worker: unknown flag '%s'\n%s", flag.c_str(), kUsage);
      return false;
    }
    const char* value = i + 1 < argc ? argv[++i] : nullptr;
    bool ok = int_target != nullptr
                  ? parse_int(value, int_target)
                  : parse_number(value, &o->sleep_seconds) && o->sleep_seconds >= 0;
    if (!ok) {
      std::fprintf(stderr, "fault_worker: %s needs a number, got '%s'\n%s", flag.c_str(),
                   value != nullptr ? value : "", kUsage);
      return false;
    }
  }
  return true;
}

void sleep_for(double seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// A child in this process group that outlives us unless someone kills the group.
void spawn_grandchild(int rank) {
  pid_t pid = fork();
  if (pid == 0) {
    execlp("sleep", "sleep", "600", static_cast<char*>(nullptr));
    _exit(127);
  }
  if (pid < 0) {
    std::perror("fault_worker: fork");
    std::exit(1);
  }
  std::printf("fault_worker: rank %d grandchild %d\n", rank, static_cast<int>(pid));
}

const char* grpc_code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    default: return "UNKNOWN";
  }
}

// Rendezvous.Check with no token at all. True when it was refused.
bool probe_unauthenticated() {
  const char* addr = std::getenv("HVD_RENDEZVOUS_ADDR");
  if (addr == nullptr) {
    std::printf("fault_worker: HVD_RENDEZVOUS_ADDR is not set, nothing to probe\n");
    return false;
  }
  auto stub = hvd::v1::Rendezvous::NewStub(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  context.set_wait_for_ready(true);
  hvd::v1::CheckRequest request;
  request.add_keys("probe");
  hvd::v1::CheckReply reply;
  grpc::Status status = stub->Check(&context, request, &reply);
  if (status.ok()) {
    std::printf("fault_worker: unauthenticated call accepted\n");
    return false;
  }
  std::printf("fault_worker: unauthenticated call refused: %s\n", grpc_code_name(status.error_code()));
  return status.error_code() == grpc::StatusCode::UNAUTHENTICATED;
}

// The Rendezvous service as this worker: its own credential (HVD_JOB_TOKEN).
class RendezvousAs {
 public:
  // `with_credential` false: calls without any "authorization" metadata.
  explicit RendezvousAs(bool with_credential = true) {
    const char* addr = std::getenv("HVD_RENDEZVOUS_ADDR");
    const char* token = std::getenv("HVD_JOB_TOKEN");
    credential_ = token != nullptr && with_credential ? token : "";
    grpc::ChannelArguments args;
    args.SetMaxSendMessageSize(-1);
    stub_ = hvd::v1::Rendezvous::NewStub(grpc::CreateCustomChannel(
        addr != nullptr ? addr : "", grpc::InsecureChannelCredentials(), args));
  }

  // "OK" or "CODE: message".
  std::string set(const std::string& key, const std::string& value) {
    hvd::v1::SetRequest request;
    request.set_key(key);
    request.set_value(value);
    hvd::v1::SetReply reply;
    return outcome(stub_->Set(context().get(), request, &reply));
  }
  std::string remove(const std::string& key) {
    hvd::v1::DeleteRequest request;
    request.set_key(key);
    hvd::v1::DeleteReply reply;
    return outcome(stub_->Delete(context().get(), request, &reply));
  }
  std::string get(const std::string& key) {
    hvd::v1::GetRequest request;
    request.add_keys(key);
    request.set_timeout_ms(5000);
    hvd::v1::GetReply reply;
    grpc::Status status = stub_->Get(context().get(), request, &reply);
    return status.ok() && reply.values_size() == 1 ? reply.values(0) : outcome(status);
  }
  std::string heartbeat(int rank, bool leaving) {
    hvd::v1::HeartbeatRequest request;
    request.set_rank(rank);
    request.set_leaving(leaving);
    hvd::v1::HeartbeatReply reply;
    return outcome(stub_->Heartbeat(context().get(), request, &reply));
  }

 private:
  std::unique_ptr<grpc::ClientContext> context() const {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!credential_.empty()) context->AddMetadata("authorization", "Bearer " + credential_);
    return context;
  }
  static std::string outcome(const grpc::Status& status) {
    if (status.ok()) return "OK";
    return std::string(grpc_code_name(status.error_code())) + ": " + status.error_message();
  }

  std::string credential_;
  std::unique_ptr<hvd::v1::Rendezvous::Stub> stub_;
};

void say(const char* what, const std::string& answer) {
  std::printf("fault_worker: rights: %s: %s\n", what, answer.c_str());
}

// --probe-rights, between hvd_init and the final barrier. False when a
// collective failed.
bool probe_rights(int rank) {
  constexpr char kKey[] = "round0/fault_worker/0";
  RendezvousAs rendezvous;
  if (rank == 0) say("rank 0 set", rendezvous.set(kKey, "rank 0's value"));
  if (hvd_barrier() != HVD_OK) return false;  // rank 0's key is there
  if (rank == 1) {
    say("set of rank 0's key", rendezvous.set(kKey, "forged"));
    say("delete of rank 0's key", rendezvous.remove(kKey));
    say("job key", rendezvous.set("hvd/finished", "2"));
    say("heartbeat for slot 0", rendezvous.heartbeat(0, false));
    say("leaving for slot 0", rendezvous.heartbeat(0, true));
    say("own heartbeat", rendezvous.heartbeat(1, false));
    std::printf("fault_worker: rights: flood start\n");
    sleep_for(1.0);  // the test notes hvdrun's memory now
    const std::string value(15 << 20, 'f');
    int refused = 0;
    std::string first;
    std::string last;
    for (int i = 0; i < 20; ++i) {
      last = rendezvous.set("round0/flood/" + std::to_string(i), value);
      if (last != "OK") ++refused;
      if (first.empty() && last != "OK") first = last;
    }
    std::printf("fault_worker: rights: flood refused %d of 20\n", refused);
    say("first refusal", first);
    say("last refusal", last);
    std::printf("fault_worker: rights: flood done\n");
    sleep_for(1.5);  // and its peak now
  }
  if (hvd_barrier() != HVD_OK) return false;
  if (rank == 0) say("rank 0's key", rendezvous.get(kKey));
  return true;
}

// --flood-concurrent, between hvd_init and the final barrier.
bool flood_concurrent(int rank, const std::string& mode) {
  if (rank == 1) {
    RendezvousAs rendezvous(mode == "worker");
    std::printf("fault_worker: rights: flood start\n");
    sleep_for(1.0);  // the test notes hvdrun's memory now
    const std::string value(15 << 20, 'f');
    std::vector<std::string> outcomes(20);
    std::vector<std::thread> threads;
    for (int i = 0; i < 20; ++i) {
      threads.emplace_back([&, i] {
        outcomes[i] = rendezvous.set("round0/flood/" + std::to_string(i), value);
      });
    }
    for (auto& t : threads) t.join();
    std::map<std::string, int> codes;
    int refused = 0;
    for (const auto& o : outcomes) {
      if (o != "OK") ++refused;
      ++codes[o.substr(0, o.find(':'))];
    }
    std::string said;
    for (const auto& [code, n] : codes) said += " " + code + " x" + std::to_string(n);
    std::printf("fault_worker: rights: flood refused %d of 20:%s\n", refused, said.c_str());
    std::printf("fault_worker: rights: flood done\n");
    sleep_for(1.5);  // and its peak now
  }
  return hvd_barrier() == HVD_OK;
}

// Allreduces until one fails (a peer went away), then exits 1.
[[noreturn]] void allreduce_forever(int rank, int kill_after) {
  for (int i = 0;; ++i) {
    if (i == kill_after) raise(SIGKILL);
    double v = rank;
    if (hvd_allreduce(&v, 1, HVD_FLOAT64, HVD_OP_SUM) != HVD_OK) {
      std::fprintf(stderr, "fault_worker: rank %d: allreduce failed: %s\n", rank, hvd_last_error());
      std::exit(1);
    }
    sleep_for(0.01);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  const char* rank_env = std::getenv("HVD_RANK");
  const int rank = rank_env != nullptr ? std::atoi(rank_env) : 0;
  std::printf("fault_worker: rank %d pid %d pgid %d\n", rank, static_cast<int>(getpid()),
              static_cast<int>(getpgrp()));

  if (o.grandchild) spawn_grandchild(rank);
  bool probe_refused = true;
  if (o.probe && rank == 0) probe_refused = probe_unauthenticated();
  if (rank == o.no_init_rank) {
    sleep_for(600);
    return 0;
  }
  if (hvd_init() != HVD_OK) {
    std::fprintf(stderr, "fault_worker: rank %d: init failed: %s\n", rank, hvd_last_error());
    return 1;
  }
  if (o.exit_rank >= 0 || o.kill_rank >= 0) {
    if (rank == o.exit_rank) {
      sleep_for(0.5);
      std::exit(o.exit_code);
    }
    allreduce_forever(rank, rank == o.kill_rank ? 3 : -1);
  }
  if (o.sleep_seconds >= 0) {
    sleep_for(o.sleep_seconds);
    return 0;
  }
  if (!o.flood.empty() && !flood_concurrent(rank, o.flood)) {
    std::fprintf(stderr, "fault_worker: rank %d: %s\n", rank, hvd_last_error());
    return 1;
  }
  if (o.probe_rights && !probe_rights(rank)) {
    std::fprintf(stderr, "fault_worker: rank %d: %s\n", rank, hvd_last_error());
    return 1;
  }
  if (hvd_barrier() != HVD_OK || hvd_shutdown() != HVD_OK) {
    std::fprintf(stderr, "fault_worker: rank %d: %s\n", rank, hvd_last_error());
    return 1;
  }
  return probe_refused ? 0 : 1;
}
