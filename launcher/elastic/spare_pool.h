// The hot spares of an elastic job (hvdrun --spares K; docs/elastic.md),
// bookkeeping for ElasticMachine. A spare is a worker process started
// without a slot: it runs the user's script up to hvd.init() and waits
// there until it is promoted into the slot of a failed worker. Each spare
// has an id, its process's launch rank (from `first_id` = --max-np up,
// never reused), a host and a phase.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hvd::launcher::elastic {

class SparePool {
 public:
  SparePool(int count, int first_id) : count_(count), next_id_(first_id), first_id_(first_id) {}

  int count() const { return count_; }  // spares the job keeps
  bool is_spare_id(int id) const { return id >= first_id_; }
  // Spares alive (starting or waiting), in all and on `host`.
  int live() const;
  int live_on(const std::string& host) const;
  // Ids of the live spares (on `host` when not empty), ascending.
  std::vector<int> live_ids(const std::string& host = "") const;
  // A new spare on `host`: its id.
  int add(const std::string& host);
  // The spare reached hvd.init() and waits there.
  void ready(int id);
  // The spare to promote among those on hosts `eligible` accepts: waiting
  // ones before starting ones, on `preferred` before others; nullopt when
  // there is none.
  std::optional<int> pick(const std::string& preferred,
                          const std::function<bool(const std::string&)>& eligible) const;
  // The spare is now the worker of `slot`.
  void promote(int id, int slot);
  // A live spare's process ended (or its host was lost): true when it was live.
  bool gone(int id);
  // The slot a promoted spare took; nullopt for others.
  std::optional<int> slot_of(int id) const;
  bool waiting(int id) const;
  std::string host_of(int id) const;

 private:
  enum class Phase { kStarting, kWaiting, kPromoted, kGone };
  struct Spare {
    std::string host;
    Phase phase = Phase::kStarting;
    int slot = -1;
  };
  static bool alive(const Spare& s) {
    return s.phase == Phase::kStarting || s.phase == Phase::kWaiting;
  }

  const int count_;
  int next_id_;
  const int first_id_;
  std::map<int, Spare> spares_;
};

}  // namespace hvd::launcher::elastic
