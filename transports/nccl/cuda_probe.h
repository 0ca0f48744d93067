// Whether CUDA collectives could run on this machine, for the nccl plugin's
// can_run(): the CUDA runtime answers with a device count (an error or 0
// devices: not here, saying why; no driver at all is named as such), and
// NCCL reports its version.
#pragma once

#include <string>

namespace hvd::transports::nccl {

struct CudaProbe {
  bool usable = false;  // at least one CUDA device the runtime can use
  int devices = 0;
  std::string nccl_version;  // "2.28.3"
  std::string reason;        // why not, when !usable
};

CudaProbe probe_cuda();

}  // namespace hvd::transports::nccl
