// Who this worker is: the environment contract (common/worker_env_names.h) read
// into a WorldInfo. Without HVD_RANK and HVD_SIZE, a foreign launcher's
// variables (torchrun, Open MPI, Slurm: runtime/discovery/launcher_env.h) say it, and
// rank 0 hosts the rendezvous; with none of them the worker is a world of
// one with no rendezvous. Anything malformed or inconsistent is an error
// naming the variable and its value (the job token's value is never shown).
#pragma once

#include <functional>
#include <string>

#include "common/placement.h"
#include "common/status.h"
#include "runtime/discovery/slurm_node_address.h"

namespace hvd::runtime {

using common::Result;
using common::Status;

// getenv-shaped: nullptr when the variable is unset.
using EnvLookup = std::function<const char*(const char*)>;

// Where this worker sits (its host: HVD_HOSTNAME, else its foreign
// launcher's name for the node, else gethostname(); the defaults: a world of
// one), and how it reaches the rest of the job.
struct WorldInfo : common::Placement {
  std::string rendezvous_addr;  // host:port; empty when there is no rendezvous
  std::string job_token;        // secret: never logged, never in a message
  std::string job_id;
  std::string bind_address = "127.0.0.1";
  bool elastic = false;      // HVD_ELASTIC=1: rank is the slot; the round gives the world
  bool replacement = false;  // HVD_REPLACEMENT=1: new to the job's rounds
  int spare = -1;            // HVD_SPARE: a hot spare's id; rank 0 until it is promoted
  // Set when a foreign launcher started the worker ("torchrun", "openmpi",
  // "slurm"); empty under hvdrun. Rank 0 then hosts the rendezvous at
  // rendezvous_host:rendezvous_port (runtime/foreign_job.h).
  std::string launcher;
  std::string rendezvous_host;
  int rendezvous_port = 0;
  std::string rendezvous_origin;  // where rendezvous_host came from, for messages
  bool token_derived = false;     // not from HVD_JOB_TOKEN (runtime/job_token.h)

  bool foreign() const { return !launcher.empty(); }

  bool has_rendezvous() const { return !rendezvous_addr.empty(); }
};

// `node_addr`: how a Slurm step on several nodes asks Slurm for rank 0's
// node's address (query_slurm_node_addr; none asked when empty).
Result<WorldInfo> read_world(const EnvLookup& lookup, const NodeAddrQuery& node_addr = {});

}  // namespace hvd::runtime
