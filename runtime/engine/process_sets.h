// The process sets a runtime knows: id -> members (global ranks, ascending),
// this process's rank in the set, and, on members, the set's engine. Id 0 is
// the global set. Thread-safe: user threads look sets up on every enqueue
// while hvd_add/remove_process_set change the table.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/engine/set_engine.h"

namespace hvd::runtime::engine {

struct ProcessSet {
  int32_t id = 0;
  std::vector<int> ranks;             // global ranks, ascending
  int rank = -1;                      // this process's rank in the set; -1: not a member
  std::shared_ptr<SetEngine> engine;  // members only

  int size() const { return static_cast<int>(ranks.size()); }
};

class ProcessSetTable {
 public:
  // false once take_all() closed the table (the runtime is shutting down).
  bool add(std::shared_ptr<const ProcessSet> set);
  std::shared_ptr<const ProcessSet> find(int32_t id) const;
  // Takes the set out of the table (null when there is none).
  std::shared_ptr<const ProcessSet> remove(int32_t id);
  // Every set, by ascending id.
  std::vector<std::shared_ptr<const ProcessSet>> all() const;
  // Empties and closes the table, returning what it held (by ascending id).
  std::vector<std::shared_ptr<const ProcessSet>> take_all();

 private:
  mutable std::mutex mu_;
  std::map<int32_t, std::shared_ptr<const ProcessSet>> sets_;
  bool closed_ = false;
};

}  // namespace hvd::runtime::engine
