// Runs the host discovery script (host_discovery.h) of an elastic job
// every `interval` on a thread of its own, each run within `timeout`, and
// pushes each result onto the job session's queue as a HostsDiscovered event
// (an empty list is a valid answer: no host is usable now). The first run
// comes one interval after the start (the job's first hosts came from the
// run at start). stop() (and the destructor) ends the thread; a run in
// progress is waited for (at most `timeout`, then the script is killed).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "launcher/job_events.h"

namespace hvd::launcher::elastic {

class DiscoveryPoller {
 public:
  DiscoveryPoller(std::string script, int default_slots, std::chrono::milliseconds interval,
                  std::chrono::milliseconds timeout, EventQueue& queue);
  ~DiscoveryPoller();
  DiscoveryPoller(const DiscoveryPoller&) = delete;
  DiscoveryPoller& operator=(const DiscoveryPoller&) = delete;

  void stop();

 private:
  void loop();

  const std::string script_;
  const int default_slots_;
  const std::chrono::milliseconds interval_;
  const std::chrono::milliseconds timeout_;
  EventQueue& queue_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace hvd::launcher::elastic
