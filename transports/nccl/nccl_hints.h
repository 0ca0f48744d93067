// What to do about an NCCL failure users meet often, appended to its
// message. Plain C++ (no CUDA): unit-tested on machines without a GPU.
#pragma once

#include <string>

namespace hvd::transports::nccl {

// NCCL refuses two ranks of one host on one GPU ("Duplicate GPU detected"):
// the message gets what to do instead. Other messages come back unchanged.
inline std::string with_hint(const std::string& message) {
  if (message.find("Duplicate GPU") == std::string::npos) return message;
  return message +
         ". Ranks of one host cannot share a GPU over NCCL: start at most one rank per GPU "
         "(torch.cuda.set_device(hvd.local_rank())), or set HVD_GPU_TRANSPORT=gloo to stage "
         "CUDA tensors through host memory (ranks may then share a GPU)";
}

}  // namespace hvd::transports::nccl
