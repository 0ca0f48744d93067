// ElasticMachine's watch over the processes that are not in a round yet
// (process_watch.h; docs/elastic.md, "Liveness before the round"): starting
// workers (a promoted spare among them) and hot spares. One that its agent
// saw stopped for the heartbeat timeout, or that has not reached hvd.init()
// --start-timeout after its start, is given up: a worker is killed (its exit
// then gives its slot to the next spare or a fresh process, as for any
// failed worker), a spare is killed and another one started.
#include <map>

#include "launcher/elastic/elastic_machine.h"

namespace hvd::launcher::elastic {

void ElasticMachine::worker_arrived(int slot) {
  if (starting(slot)) watch_.arrived(process_of(slot));
}

void ElasticMachine::process_state(int process, bool stopped, Clock::time_point now) {
  watch_.state(process, stopped, now);
}

void ElasticMachine::watch_starters(Clock::time_point now) {
  // The first workers need not arrive: the first round's start timeout ends
  // a job whose first workers do not all come.
  std::map<int, bool> watched;  // process -> must arrive
  for (const Worker& w : workers_) {
    if (w.phase == Phase::kStarting) watched[w.process] = !w.initial;
  }
  for (int spare : spares_.live_ids()) watched[spare] = true;
  watch_.keep_only(watched, now);
}

void ElasticMachine::give_up_overdue(Actions& out, Clock::time_point now) {
  watch_starters(now);
  for (const ProcessWatch::Overdue& late : watch_.overdue(now)) {
    const std::string why =
        late.stopped ? "has been stopped (state T in /proc) for " +
                           std::to_string(late.limit.count()) + " s (--heartbeat-timeout-seconds)"
                     : "has not reached hvd.init() within " + std::to_string(late.limit.count()) +
                           " s (--start-timeout) of its start";
    if (const int slot = slot_of_process(late.process); slot >= 0) {
      const Worker& w = workers_[static_cast<size_t>(slot)];
      const std::string who =
          "rank " + std::to_string(slot) + " on host " + w.host +
          (late.process != slot ? " (promoted spare " + std::to_string(late.process) + ")"
                                : w.initial ? "" : " (a replacement)");
      out.push_back(SlotLost{slot});
      out.push_back(StopWorker{slot});
      out.push_back(Say{who + " " + why + (late.stopped ? " before joining a round" : "") +
                        "; giving it up: killing it to replace it"});
    } else if (spares_.is_spare_id(late.process) && spares_.gone(late.process)) {
      out.push_back(StopSpare{late.process});
      spare_failed("hot spare " + std::to_string(late.process) + " on host " +
                       spares_.host_of(late.process) + " " + why + "; giving it up",
                   ": killing it to start another", out, now);
    }
  }
}

}  // namespace hvd::launcher::elastic
