// horovodrun's flags (horovod 0.28's `horovodrun --help`) that hvdrun has
// no flag of its own for, so that a copied horovodrun line works: each is
//  - accepted with the same meaning (a setting: --fusion-threshold-mb N is
//    fusion_threshold N MiB, --gloo-timeout-seconds is transport_timeout,
//    --no-stall-check turns the stall inspector off, ...);
//  - accepted and ignored with a one-line note where it cannot matter
//    (--gloo: hvd always runs without MPI; --disable-cache: hvd keeps no
//    cache between runs; ...);
//  - or refused with the reason (--mpi, --jsrun and mpirun's options: hvd
//    runs without MPI).
// Flags hvdrun spells the same way (--num-proc, --hosts, --min-np, ...) or
// as aliases of its own (--min-num-proc, --slots, -p, ...) are declared
// where hvdrun's flags are. docs/launcher.md lists every horovodrun flag.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/settings.h"

namespace hvd::launcher {

class HorovodrunFlags {
 public:
  // horovodrun's other name for the flag of setting `setting_key`, as
  // CLI11's ",--name" to append to hvdrun's; "" when it has none.
  static std::string alias_of(std::string_view setting_key);
  // Declares the flags on `app` (in their own help group).
  void add_to(CLI::App& app);
  // After parsing: the refused flag given first, as a usage error; else
  // the accepted ones applied to `settings` (after the settings of hvdrun's
  // own flags: theirs win when both are given) and one note per ignored
  // flag given, appended to `notes`.
  common::Status apply(config::Settings& settings, std::vector<std::string>& notes) const;

 private:
  struct Flag {
    CLI::Option* option = nullptr;
    std::string value;  // options with a value
    bool set = false;   // bare flags
  };
  Flag& flag(const std::string& name) { return flags_[name]; }
  bool given(const std::string& name) const;
  const std::string& value(const std::string& name) const { return flags_.at(name).value; }

  std::map<std::string, Flag> flags_;
};

}  // namespace hvd::launcher
