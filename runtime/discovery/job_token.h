// The rendezvous token of a job that a foreign launcher (srun, torchrun,
// mpirun) started without HVD_JOB_TOKEN: every rank derives the same one
// from what all of them can see (the launcher's job identifiers and the
// rendezvous address). It keeps a rank of another job from joining this one
// by mistake; it is no secret (anyone who can read the job's variables can
// compute it). HVD_JOB_TOKEN, set alike for every rank, makes it one.
#pragma once

#include <string>
#include <string_view>

namespace hvd::runtime {

// "derived-" followed by the SHA-256 of `material` in hex.
std::string derive_job_token(std::string_view material);

}  // namespace hvd::runtime
