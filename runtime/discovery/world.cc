#include "runtime/discovery/world.h"

#include <unistd.h>

#include <charconv>
#include <climits>

#include "common/worker_env_names.h"
#include "runtime/discovery/launcher_env.h"
#include "runtime/discovery/local_address.h"

namespace hvd::runtime {

namespace {

namespace env = common::env;
using common::invalid_argument;

std::string describe(const char* name, const char* value) {
  return std::string(name) + "='" + value + "'";
}

// An integer variable; `present` is false when it is unset.
struct IntVar {
  bool present = false;
  int value = 0;
};

Result<IntVar> read_int(const EnvLookup& lookup, const char* name) {
  const char* text = lookup(name);
  if (text == nullptr) return IntVar{};
  std::string_view view(text);
  int value = 0;
  auto [ptr, ec] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (view.empty() || ec != std::errc() || ptr != view.data() + view.size()) {
    return invalid_argument(describe(name, text) + " is not a whole number");
  }
  return IntVar{true, value};
}

// Reads a rank/size pair that must be set together; leaves *rank and *size
// as they are when neither is set.
Status read_pair(const EnvLookup& lookup, const char* rank_name, const char* size_name,
                 int* rank, int* size) {
  auto r = read_int(lookup, rank_name);
  if (!r.is_ok()) return r.status();
  auto s = read_int(lookup, size_name);
  if (!s.is_ok()) return s.status();
  if (r->present != s->present) {
    const char* set = r->present ? rank_name : size_name;
    const char* unset = r->present ? size_name : rank_name;
    return invalid_argument(describe(set, lookup(set)) + " is set but " + unset + " is not");
  }
  if (!r->present) return Status::ok();
  if (s->value < 1) {
    return invalid_argument(describe(size_name, lookup(size_name)) + " must be at least 1");
  }
  if (r->value < 0 || r->value >= s->value) {
    return invalid_argument(describe(rank_name, lookup(rank_name)) + " is not in [0, " +
                            size_name + "=" + std::to_string(s->value) + ")");
  }
  *rank = r->value;
  *size = s->value;
  return Status::ok();
}

std::string local_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

// A worker that a foreign launcher started.
Result<WorldInfo> from_launcher(const LauncherWorld& launched, const EnvLookup& lookup) {
  WorldInfo world;
  static_cast<common::Placement&>(world) = launched;
  world.launcher = launched.launcher;
  world.rendezvous_addr = launched.rendezvous_addr();
  world.rendezvous_host = launched.rendezvous_host;
  world.rendezvous_port = launched.rendezvous_port;
  world.rendezvous_origin = launched.rendezvous_origin;
  world.job_token = launched.job_token;
  world.token_derived = launched.token_derived;
  world.job_id = launched.job_id;
  const char* host = lookup(env::kHostname);
  world.host = (host != nullptr && *host != '\0') ? host
               : !launched.host.empty()           ? launched.host
                                                  : local_hostname();
  if (const char* bind = lookup(env::kBindAddress); bind != nullptr && *bind != '\0') {
    world.bind_address = bind;
  } else if (world.local_size < world.size) {
    // Other hosts must reach this one: the address the kernel routes toward
    // the rendezvous host from.
    auto address = local_address_toward(world.rendezvous_host);
    if (!address.is_ok()) return address.status();
    world.bind_address = std::move(address).value();
  }
  return world;
}

// A hot spare (HVD_SPARE) has no slot yet: it reads as rank 0 of the job's
// slots until hvdrun promotes it (runtime.cc).
Result<int> read_spare(const EnvLookup& lookup) {
  auto spare = read_int(lookup, env::kSpare);
  if (!spare.is_ok()) return spare.status();
  if (!spare->present) return -1;
  if (spare->value < 0) {
    return invalid_argument(describe(env::kSpare, lookup(env::kSpare)) + " must be 0 or more");
  }
  const char* elastic = lookup(env::kElastic);
  if (elastic == nullptr || std::string(elastic) != "1" || lookup(env::kRank) != nullptr) {
    return invalid_argument(describe(env::kSpare, lookup(env::kSpare)) +
                            " needs an elastic job (HVD_ELASTIC=1) and no HVD_RANK");
  }
  return spare->value;
}

}  // namespace

Result<WorldInfo> read_world(const EnvLookup& raw_lookup, const NodeAddrQuery& node_addr) {
  auto spare = read_spare(raw_lookup);
  if (!spare.is_ok()) return spare.status();
  const EnvLookup lookup = *spare < 0 ? raw_lookup : EnvLookup([&](const char* name) {
    return std::string_view(name) == env::kRank ? "0" : raw_lookup(name);
  });
  WorldInfo world;
  world.spare = *spare;
  bool launched = lookup(env::kRank) != nullptr || lookup(env::kSize) != nullptr;
  if (!launched) {
    auto foreign = detect_launcher(lookup, node_addr);
    if (!foreign.is_ok()) return foreign.status();
    if (foreign->has_value()) return from_launcher(**foreign, lookup);
  }
  HVD_RETURN_IF_ERROR(read_pair(lookup, env::kRank, env::kSize, &world.rank, &world.size));
  world.local_rank = world.rank;
  world.local_size = world.size;
  HVD_RETURN_IF_ERROR(
      read_pair(lookup, env::kLocalRank, env::kLocalSize, &world.local_rank, &world.local_size));
  HVD_RETURN_IF_ERROR(
      read_pair(lookup, env::kCrossRank, env::kCrossSize, &world.cross_rank, &world.cross_size));
  if (world.local_size > world.size) {
    return invalid_argument(describe(env::kLocalSize, lookup(env::kLocalSize)) + " exceeds " +
                            env::kSize + "=" + std::to_string(world.size));
  }
  if (world.cross_size > world.size) {
    return invalid_argument(describe(env::kCrossSize, lookup(env::kCrossSize)) + " exceeds " +
                            env::kSize + "=" + std::to_string(world.size));
  }

  if (const char* addr = lookup(env::kRendezvousAddr)) world.rendezvous_addr = addr;
  if (const char* token = lookup(env::kJobToken)) world.job_token = token;
  if (const char* id = lookup(env::kJobId)) world.job_id = id;
  if (const char* bind = lookup(env::kBindAddress); bind != nullptr && *bind != '\0') {
    world.bind_address = bind;
  }
  const char* host = lookup(env::kHostname);
  world.host = (host != nullptr && *host != '\0') ? host : local_hostname();
  auto flag = [&](const char* name) {
    const char* v = lookup(name);
    return v != nullptr && std::string(v) == "1";
  };
  world.elastic = flag(env::kElastic);
  world.replacement = flag(env::kReplacement);

  if (!launched) {
    if (world.has_rendezvous()) {
      return invalid_argument(describe(env::kRendezvousAddr, world.rendezvous_addr.c_str()) +
                              " is set but " + env::kRank + " and " + env::kSize + " are not");
    }
    return world;  // a world of one
  }
  if (!world.has_rendezvous() && world.size > 1) {
    return invalid_argument(std::string(env::kRendezvousAddr) + " is not set (" + env::kSize +
                            "=" + std::to_string(world.size) + " needs the job's rendezvous)");
  }
  if (world.has_rendezvous() && world.job_token.empty()) {
    return invalid_argument(std::string(env::kJobToken) +
                            (lookup(env::kJobToken) == nullptr ? " is not set" : " is empty") +
                            " (the rendezvous at " + world.rendezvous_addr + " requires it)");
  }
  return world;
}

}  // namespace hvd::runtime
