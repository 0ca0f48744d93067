// Workers started by a foreign launcher (torchrun, Open MPI's mpirun, Slurm's
// srun) instead of hvdrun: their launcher's variables read into who they are
// and where the job's rendezvous is (rank 0 hosts it). Pure: everything comes
// through the EnvLookup. Malformed or inconsistent values are an error naming
// the variable and its value; the rules are in docs/environment.md.
#pragma once

#include <optional>
#include <string>

#include "common/placement.h"
#include "common/status.h"
#include "runtime/discovery/slurm_node_address.h"
#include "runtime/discovery/world.h"

namespace hvd::runtime {

// Overrides that apply to every foreign launcher (besides HVD_RENDEZVOUS_ADDR,
// HVD_JOB_TOKEN, HVD_JOB_ID, HVD_BIND_ADDRESS and HVD_HOSTNAME of the hvdrun
// contract in common/worker_env_names.h).
inline constexpr char kRendezvousHostVar[] = "HVD_RENDEZVOUS_HOST";
inline constexpr char kRendezvousPortVar[] = "HVD_RENDEZVOUS_PORT";

// The first port of the range Slurm and Open MPI jobs pick theirs from.
inline constexpr int kForeignPortBase = 29472;
inline constexpr int kForeignPortRange = 2000;

// What the launcher's variables say of where this process sits; the
// rendezvous round computes the world's cross ranks from every rank's local
// rank and replaces these (Open MPI tells a process nothing about its host's
// index: a guess). The host is the launcher's name for this node (Slurm:
// SLURMD_NODENAME); empty when it gives none.
struct LauncherWorld : common::Placement {
  std::string launcher;  // "torchrun", "openmpi" or "slurm"
  // Empty (and port 0, no token) when size == 1: a world of one needs no rendezvous.
  std::string rendezvous_host;
  int rendezvous_port = 0;
  // Where rendezvous_host came from, for messages ("MASTER_ADDR", "the
  // NodeAddr of Slurm node n1, the first of SLURM_STEP_NODELIST").
  std::string rendezvous_origin;
  std::string job_token;       // secret when it came from HVD_JOB_TOKEN: never logged
  bool token_derived = false;  // true: derived from the job's identifiers (runtime/job_token.h)
  std::string job_id;

  std::string rendezvous_addr() const;  // "host:port" ("[v6]:port"), "" without a rendezvous
};

// nullopt when none of the launchers' variables is set. Precedence, innermost
// launcher first: torchrun (RANK/WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_*),
// Slurm (SLURM_PROCID) - `srun torchrun ...` and `mpirun` inside an sbatch
// script leave Slurm's variables in the workers' environment.
// A Slurm step on several nodes reaches rank 0's node at its address
// (slurm_node_address.h): `node_addr` asks Slurm for it when
// SLURM_NODE_ALIASES does not say (none asked when empty). The derived
// token depends on the node's name, not on the address found.
common::Result<std::optional<LauncherWorld>> detect_launcher(const EnvLookup& lookup,
                                                             const NodeAddrQuery& node_addr = {});

}  // namespace hvd::runtime
