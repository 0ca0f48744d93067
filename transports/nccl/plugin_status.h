// Small helpers the nccl plugin's files share: filling an
// hvd_plugin_status, and the pause between two polls of a CUDA event or an
// NCCL communicator (a few yields, then short sleeps: the work waited for
// takes tens of microseconds or more, and the framework needs the cores).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "transports/plugin/transport_plugin.h"

namespace hvd::transports::nccl {

inline int32_t report(hvd_plugin_status* status, int32_t code, const std::string& message) {
  status->code = code;
  std::snprintf(status->message, sizeof(status->message), "%s", message.c_str());
  return code;
}

inline void poll_pause(int round) {
  if (round < 64) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(round < 1024 ? 20 : 200));
  }
}

}  // namespace hvd::transports::nccl
