#include "runtime/discovery/launcher_env.h"

#include <charconv>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "common/worker_env_names.h"
#include "runtime/discovery/job_token.h"
#include "runtime/discovery/slurm_hostlist.h"

namespace hvd::runtime {

namespace {

using common::invalid_argument;
using common::Result;
using common::Status;
namespace env = common::env;

std::string describe(const char* name, const char* value) {
  return std::string(name) + "='" + value + "'";
}

// The launcher's variables, read with error messages that name them.
class Vars {
 public:
  Vars(const EnvLookup& lookup, const NodeAddrQuery& node_addr)
      : lookup_(lookup), node_addr_(node_addr) {}

  const NodeAddrQuery& node_addr() const { return node_addr_; }

  const char* get(const char* name) const { return lookup_(name); }

  // The name of the first of `names` that is set, or nullptr.
  const char* first_set(std::initializer_list<const char*> names) const {
    for (const char* name : names) {
      if (get(name) != nullptr) return name;
    }
    return nullptr;
  }

  // A whole number in [min, max]; nullopt when unset.
  Result<std::optional<int64_t>> integer(const char* name, int64_t min, int64_t max) const {
    const char* text = get(name);
    if (text == nullptr) return std::optional<int64_t>();
    std::string_view view(text);
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(view.data(), view.data() + view.size(), value);
    if (view.empty() || ec != std::errc() || ptr != view.data() + view.size()) {
      return invalid_argument(describe(name, text) + " is not a whole number");
    }
    if (value < min || value > max) {
      return invalid_argument(describe(name, text) + " is not in [" + std::to_string(min) + ", " +
                              std::to_string(max) + "]");
    }
    return std::optional<int64_t>(value);
  }

  // A rank and a size that are set together (rank in [0, size)); nullopt
  // when neither is set.
  Result<std::optional<std::pair<int, int>>> rank_and_size(const char* rank_name,
                                                           const char* size_name) const {
    using Pair = std::optional<std::pair<int, int>>;
    auto size = integer(size_name, 1, INT32_MAX);
    if (!size.is_ok()) return size.status();
    auto rank = integer(rank_name, 0, INT32_MAX);
    if (!rank.is_ok()) return rank.status();
    if (rank->has_value() != size->has_value()) {
      const char* set = rank->has_value() ? rank_name : size_name;
      const char* unset = rank->has_value() ? size_name : rank_name;
      return invalid_argument(describe(set, get(set)) + " is set but " + unset + " is not");
    }
    if (!rank->has_value()) return Pair();
    if (**rank >= **size) {
      return invalid_argument(describe(rank_name, get(rank_name)) + " is not in [0, " + size_name +
                              "=" + std::to_string(**size) + ")");
    }
    return Pair(std::pair<int, int>(static_cast<int>(**rank), static_cast<int>(**size)));
  }

 private:
  const EnvLookup& lookup_;
  const NodeAddrQuery& node_addr_;
};

struct HostChoice {
  std::string host;
  std::string origin;  // for messages
};

// What one launcher's variables say; the rendezvous address and the token
// are settled by finish(), which applies the HVD_* overrides first.
struct Detected {
  LauncherWorld world;
  // The launcher's idea of the rendezvous host and port; called only when
  // no override is set. An error explains what to set.
  std::function<Result<HostChoice>()> host;
  std::function<Result<int>()> port;
  // Where that host is reached, when that differs from its name (a Slurm
  // node's address); applied after the token is derived from the name.
  std::function<HostChoice(const HostChoice&)> address;
  std::string token_material;  // the launcher's job identifiers
};

uint64_t fnv1a(std::string_view text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

Status local_size_fits(const Vars& vars, const char* local_name, int local_size,
                       const char* size_name, int size) {
  if (local_size <= size) return Status::ok();
  return invalid_argument(describe(local_name, vars.get(local_name)) + " exceeds " + size_name +
                          "=" + std::to_string(size));
}

// ---- torchrun (and anything that sets its variables: Kubernetes operators) ----

Result<std::optional<Detected>> torchrun(const Vars& vars) {
  auto global = vars.rank_and_size("RANK", "WORLD_SIZE");
  if (!global.is_ok()) return global.status();
  if (!global->has_value()) return std::optional<Detected>();
  Detected d;
  LauncherWorld& w = d.world;
  w.launcher = "torchrun";
  std::tie(w.rank, w.size) = **global;
  // Without LOCAL_RANK/LOCAL_WORLD_SIZE (a Kubernetes PyTorchJob): one process per host.
  auto local = vars.rank_and_size("LOCAL_RANK", "LOCAL_WORLD_SIZE");
  if (!local.is_ok()) return local.status();
  if (local->has_value()) std::tie(w.local_rank, w.local_size) = **local;
  HVD_RETURN_IF_ERROR(local_size_fits(vars, "LOCAL_WORLD_SIZE", w.local_size, "WORLD_SIZE", w.size));

  auto groups = vars.integer("GROUP_WORLD_SIZE", 1, w.size);
  if (!groups.is_ok()) return groups.status();
  if (groups->has_value()) {
    w.cross_size = static_cast<int>(**groups);
  } else if (w.size % w.local_size != 0) {
    return invalid_argument(describe("WORLD_SIZE", vars.get("WORLD_SIZE")) +
                            " is not a multiple of " +
                            describe("LOCAL_WORLD_SIZE", vars.get("LOCAL_WORLD_SIZE")));
  } else {
    w.cross_size = w.size / w.local_size;
  }
  if (static_cast<int64_t>(w.cross_size) * w.local_size != w.size) {
    return invalid_argument(describe("GROUP_WORLD_SIZE", vars.get("GROUP_WORLD_SIZE")) +
                            " nodes of LOCAL_WORLD_SIZE=" + std::to_string(w.local_size) +
                            " processes do not make WORLD_SIZE=" + std::to_string(w.size));
  }
  auto group = vars.integer("GROUP_RANK", 0, w.cross_size - 1);
  if (!group.is_ok()) return group.status();
  w.cross_rank = group->has_value() ? static_cast<int>(**group) : w.rank / w.local_size;

  const char* run_id = vars.get("TORCHELASTIC_RUN_ID");
  w.job_id = std::string("torchrun-") + (run_id != nullptr ? run_id : "none");
  const char* master_addr = vars.get("MASTER_ADDR");
  const char* master_port = vars.get("MASTER_PORT");
  d.token_material = std::string("torchrun|") + (run_id ? run_id : "") + "|" +
                     (master_addr ? master_addr : "") + ":" + (master_port ? master_port : "");
  const bool one_host = w.local_size == w.size;
  d.host = [master_addr, one_host]() -> Result<HostChoice> {
    if (master_addr != nullptr && *master_addr != '\0') {
      return HostChoice{master_addr, "MASTER_ADDR"};
    }
    if (one_host) return HostChoice{"127.0.0.1", "every rank is on this host"};
    return invalid_argument(std::string("MASTER_ADDR is not set: set it (or ") +
                            kRendezvousHostVar + ") to the host of rank 0");
  };
  d.port = [&vars]() -> Result<int> {
    // MASTER_PORT is torchrun's own store; the rendezvous takes the next port.
    auto port = vars.integer("MASTER_PORT", 1, 65534);
    if (!port.is_ok()) return port.status();
    if (!port->has_value()) {
      return invalid_argument(std::string("MASTER_PORT is not set: the rendezvous listens on "
                                          "MASTER_PORT+1 (or set ") + kRendezvousPortVar + ")");
    }
    return static_cast<int>(**port) + 1;
  };
  return std::optional<Detected>(std::move(d));
}

// ---- Open MPI (mpirun, prterun) ----

Result<std::optional<Detected>> openmpi(const Vars& vars) {
  auto global = vars.rank_and_size("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE");
  if (!global.is_ok()) return global.status();
  if (!global->has_value()) return std::optional<Detected>();
  Detected d;
  LauncherWorld& w = d.world;
  w.launcher = "openmpi";
  std::tie(w.rank, w.size) = **global;
  auto local = vars.rank_and_size("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!local.is_ok()) return local.status();
  if (!local->has_value()) {
    return invalid_argument(describe("OMPI_COMM_WORLD_RANK", vars.get("OMPI_COMM_WORLD_RANK")) +
                            " is set but OMPI_COMM_WORLD_LOCAL_RANK and "
                            "OMPI_COMM_WORLD_LOCAL_SIZE are not");
  }
  std::tie(w.local_rank, w.local_size) = **local;
  HVD_RETURN_IF_ERROR(local_size_fits(vars, "OMPI_COMM_WORLD_LOCAL_SIZE", w.local_size,
                                      "OMPI_COMM_WORLD_SIZE", w.size));
  const bool one_host = w.local_size == w.size;
  if (!one_host) {
    // Provisional (right for mpirun's default, host by host, mapping); the
    // rendezvous round settles it from every rank's local rank.
    w.cross_size = (w.size + w.local_size - 1) / w.local_size;
    w.cross_rank = w.rank / w.local_size;
  }

  const char* jobid = vars.get("OMPI_MCA_ess_base_jobid");
  std::string job = jobid != nullptr ? jobid : "0";
  w.job_id = "openmpi-" + job;
  d.token_material = "openmpi|" + job;
  const char* master_addr = vars.get("MASTER_ADDR");
  const int local_size = w.local_size, size = w.size;
  d.host = [master_addr, one_host, local_size, size]() -> Result<HostChoice> {
    if (master_addr != nullptr && *master_addr != '\0') {
      return HostChoice{master_addr, "MASTER_ADDR"};
    }
    if (one_host) return HostChoice{"127.0.0.1", "every rank is on this host"};
    return invalid_argument(
        std::string("the ranks span several hosts (OMPI_COMM_WORLD_LOCAL_SIZE=") +
        std::to_string(local_size) + " of OMPI_COMM_WORLD_SIZE=" + std::to_string(size) +
        "): set " + kRendezvousHostVar + " to the host of rank 0 (mpirun -x " +
        kRendezvousHostVar + "=<host>)");
  };
  d.port = [&vars, job]() -> Result<int> {
    auto port = vars.integer("MASTER_PORT", 1, 65535);
    if (!port.is_ok()) return port.status();
    if (port->has_value()) return static_cast<int>(**port);
    return kForeignPortBase + static_cast<int>(fnv1a(job) % kForeignPortRange);
  };
  return std::optional<Detected>(std::move(d));
}

// ---- Slurm (srun) ----

// The tasks on each node of the step.
Result<std::vector<int>> slurm_tasks_per_node(const Vars& vars, int size) {
  const char* nodes_name = vars.first_set({"SLURM_STEP_NUM_NODES", "SLURM_NNODES",
                                           "SLURM_JOB_NUM_NODES"});
  std::optional<int64_t> nodes;
  if (nodes_name != nullptr) {
    auto n = vars.integer(nodes_name, 1, INT32_MAX);
    if (!n.is_ok()) return n.status();
    nodes = *n;
  }
  if (const char* name = vars.first_set({"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})) {
    auto tasks = expand_slurm_tasks_per_node(vars.get(name), name);
    if (!tasks.is_ok()) return tasks.status();
    int64_t sum = 0;
    for (int t : tasks.value()) sum += t;
    if (sum != size) {
      return invalid_argument(describe(name, vars.get(name)) + " adds up to " +
                              std::to_string(sum) + " tasks but SLURM_NTASKS=" +
                              std::to_string(size));
    }
    if (nodes && *nodes != static_cast<int64_t>(tasks->size())) {
      return invalid_argument(describe(name, vars.get(name)) + " lists " +
                              std::to_string(tasks->size()) + " nodes but " +
                              describe(nodes_name, vars.get(nodes_name)));
    }
    return tasks;
  }
  const int64_t n = nodes.value_or(1);
  if (n > size || size % n != 0) {
    return invalid_argument(std::string("SLURM_TASKS_PER_NODE is not set and SLURM_NTASKS=") +
                            std::to_string(size) + " does not divide evenly over " +
                            describe(nodes_name, vars.get(nodes_name)));
  }
  return std::vector<int>(static_cast<size_t>(n), static_cast<int>(size / n));
}

// Rank 0's node: the first of the step's nodes (its name; origin: the list's
// variable). 127.0.0.1 when the whole step is on this node.
Result<HostChoice> slurm_first_host(const Vars& vars, bool one_host) {
  const char* name = vars.first_set({"SLURM_STEP_NODELIST", "SLURM_NODELIST",
                                     "SLURM_JOB_NODELIST"});
  if (name == nullptr && !one_host) {
    return invalid_argument(std::string("none of SLURM_STEP_NODELIST, SLURM_NODELIST and "
                                        "SLURM_JOB_NODELIST is set: set ") +
                            kRendezvousHostVar + " to the host of rank 0");
  }
  if (name != nullptr) {
    auto hosts = expand_slurm_hostlist(vars.get(name), name);
    if (!hosts.is_ok()) return hosts.status();
    if (!one_host) return HostChoice{hosts->front(), name};
  }
  return HostChoice{"127.0.0.1", "every task of the step is on this node"};
}

Result<std::optional<Detected>> slurm(const Vars& vars) {
  if (vars.get("SLURM_PROCID") == nullptr) return std::optional<Detected>();
  auto global = vars.rank_and_size("SLURM_PROCID", "SLURM_NTASKS");
  if (!global.is_ok()) return global.status();
  Detected d;
  LauncherWorld& w = d.world;
  w.launcher = "slurm";
  std::tie(w.rank, w.size) = **global;
  auto tasks = slurm_tasks_per_node(vars, w.size);
  if (!tasks.is_ok()) return tasks.status();
  const int nodes = static_cast<int>(tasks->size());

  auto node = vars.integer("SLURM_NODEID", 0, nodes - 1);
  if (!node.is_ok()) return node.status();
  if (!node->has_value() && nodes > 1) {
    return invalid_argument("SLURM_NODEID is not set (the step has " + std::to_string(nodes) +
                            " nodes)");
  }
  const int my_node = static_cast<int>(node->value_or(0));
  w.local_size = tasks.value()[my_node];
  auto local = vars.integer("SLURM_LOCALID", 0, w.local_size - 1);
  if (!local.is_ok()) return local.status();
  if (!local->has_value() && nodes > 1) {
    return invalid_argument("SLURM_LOCALID is not set (the step has " + std::to_string(nodes) +
                            " nodes)");
  }
  w.local_rank = static_cast<int>(local->value_or(w.rank));
  // Horovod's definition: among the nodes that have a task with this local
  // rank, this node's index (nodes in the step's order).
  w.cross_size = 0;
  w.cross_rank = 0;
  for (int n = 0; n < nodes; ++n) {
    if (tasks.value()[n] <= w.local_rank) continue;
    ++w.cross_size;
    if (n < my_node) ++w.cross_rank;
  }

  auto job = vars.integer("SLURM_JOB_ID", 0, INT64_MAX / 64);
  if (!job.is_ok()) return job.status();
  auto step = vars.integer("SLURM_STEP_ID", 0, INT64_MAX / 64);
  if (!step.is_ok()) return step.status();
  const std::string job_step = std::to_string(job->value_or(0)) + "." +
                               std::to_string(step->value_or(0));
  w.job_id = "slurm-" + job_step;
  d.token_material = "slurm|" + job_step;
  if (const char* node = vars.get("SLURMD_NODENAME"); node != nullptr) w.host = node;
  const bool one_host = w.local_size == w.size;
  d.host = [&vars, one_host] { return slurm_first_host(vars, one_host); };
  if (!one_host) {
    d.address = [&vars](const HostChoice& node) -> HostChoice {
      auto found = choose_slurm_node_address(node.host, node.origin,
                                             vars.get("SLURM_NODE_ALIASES"), vars.node_addr());
      return {std::move(found.host), std::move(found.origin)};
    };
  }
  const int64_t seed = job->value_or(0) * 31 + step->value_or(0);
  d.port = [seed]() -> Result<int> {
    return kForeignPortBase + static_cast<int>(seed % kForeignPortRange);
  };
  return std::optional<Detected>(std::move(d));
}

// "host:port" or "[v6]:port".
Status parse_address(const char* text, std::string* host, int* port) {
  std::string_view view(text);
  size_t colon = view.rfind(':');
  std::string_view h = colon == std::string_view::npos ? view : view.substr(0, colon);
  std::string_view p = colon == std::string_view::npos ? "" : view.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  int value = 0;
  auto [ptr, ec] = std::from_chars(p.data(), p.data() + p.size(), value);
  if (h.empty() || p.empty() || ec != std::errc() || ptr != p.data() + p.size() || value < 1 ||
      value > 65535) {
    return invalid_argument(describe(env::kRendezvousAddr, text) + " is not host:port");
  }
  *host = std::string(h);
  *port = value;
  return Status::ok();
}

// The HVD_* overrides, then the launcher's defaults.
Result<LauncherWorld> finish(const Vars& vars, Detected d) {
  LauncherWorld w = std::move(d.world);
  if (const char* id = vars.get(env::kJobId); id != nullptr && *id != '\0') w.job_id = id;
  if (w.size == 1) return w;  // nobody to meet

  std::optional<HostChoice> launchers_host;  // not overridden
  if (const char* addr = vars.get(env::kRendezvousAddr)) {
    HVD_RETURN_IF_ERROR(parse_address(addr, &w.rendezvous_host, &w.rendezvous_port));
    w.rendezvous_origin = env::kRendezvousAddr;
  } else {
    if (const char* host = vars.get(kRendezvousHostVar)) {
      if (*host == '\0') return invalid_argument(std::string(kRendezvousHostVar) + " is empty");
      w.rendezvous_host = host;
      w.rendezvous_origin = kRendezvousHostVar;
    } else {
      auto host_default = d.host();
      if (!host_default.is_ok()) return host_default.status();
      launchers_host = std::move(host_default).value();
      w.rendezvous_host = launchers_host->host;
      w.rendezvous_origin = launchers_host->origin;
    }
    auto port = vars.integer(kRendezvousPortVar, 1, 65535);
    if (!port.is_ok()) return port.status();
    if (port->has_value()) {
      w.rendezvous_port = static_cast<int>(**port);
    } else {
      auto port_default = d.port();
      if (!port_default.is_ok()) return port_default.status();
      w.rendezvous_port = port_default.value();
    }
  }

  if (const char* token = vars.get(env::kJobToken)) {
    if (*token == '\0') return invalid_argument(std::string(env::kJobToken) + " is empty");
    w.job_token = token;
  } else {
    w.job_token = derive_job_token(d.token_material + "@" + w.rendezvous_addr());
    w.token_derived = true;
  }
  if (launchers_host && d.address) {
    HostChoice reached = d.address(*launchers_host);
    w.rendezvous_host = std::move(reached.host);
    w.rendezvous_origin = std::move(reached.origin);
  }
  return w;
}

}  // namespace

std::string LauncherWorld::rendezvous_addr() const {
  if (rendezvous_host.empty()) return "";
  if (rendezvous_host.find(':') != std::string::npos) {
    return "[" + rendezvous_host + "]:" + std::to_string(rendezvous_port);
  }
  return rendezvous_host + ":" + std::to_string(rendezvous_port);
}

Result<std::optional<LauncherWorld>> detect_launcher(const EnvLookup& lookup,
                                                    const NodeAddrQuery& node_addr) {
  Vars vars(lookup, node_addr);
  for (auto detect : {torchrun, openmpi, slurm}) {
    auto detected = detect(vars);
    if (!detected.is_ok()) return detected.status();
    if (!detected->has_value()) continue;
    auto world = finish(vars, std::move(**detected));
    if (!world.is_ok()) return world.status();
    return std::optional<LauncherWorld>(std::move(world).value());
  }
  return std::optional<LauncherWorld>();
}

}  // namespace hvd::runtime
