#include "launcher/horovodrun_flags.h"

#include <charconv>
#include <cstdint>
#include <string>

namespace hvd::launcher {

namespace {

constexpr const char* kGroup = "horovodrun's flags (accepted for copied command lines)";

// A horovodrun flag hvdrun ignores or refuses: its CLI11 names
// ("-i,--ssh-identity-file"), its value's name ("" for a bare flag), and
// why it cannot matter (ignored) or what to do instead (refused).
struct Compat {
  const char* name;
  const char* value;
  const char* why;
  // The name in messages: the long one.
  std::string shown() const {
    const std::string names = name;
    return names.substr(names.rfind(',') + 1);
  }
};

constexpr Compat kIgnored[] = {
    {"--gloo", "", "hvd always runs without MPI (gloo, shm and NCCL)"},
    {"--disable-cache", "", "hvd keeps no cache of host checks between runs"},
    {"--log-without-timestamp", "", "hvd's log lines keep their timestamps"},
    {"--log-hide-timestamp", "", "hvd's log lines keep their timestamps"},
    {"--timeline-mark-cycles", "", "hvd's timeline always marks cycles"},
    {"--hierarchical-allgather", "", "hvd's allgather is flat"},
    {"--no-hierarchical-allgather", "", "hvd's allgather is flat"},
    {"--num-nccl-streams", "N", "hvd runs NCCL on one communication stream per device"},
    {"--thread-affinity", "N", "hvd does not pin its threads"},
    {"--autotune-gaussian-process-noise", "X",
     "hvd's autotune measures a grid, with no Gaussian process"},
};

constexpr Compat kRefused[] = {
    {"--mpi", "", "hvd runs without MPI: drop it (collectives run on gloo, shm and NCCL)"},
    {"--jsrun", "", "hvd runs without MPI or jsrun: start the job with hvdrun, or under srun"},
    {"--mpi-args", "ARGS", "it passes options to mpirun, which hvd does not use"},
    {"--mpi-threads-disable", "", "it configures MPI, which hvd does not use"},
    {"--binding-args", "ARGS", "it passes binding options to mpirun, which hvd does not use"},
    {"--tcp", "", "it tells mpirun to use TCP; hvd's CPU transports need no such flag"},
    {"-i,--ssh-identity-file", "FILE", "give it to ssh instead: --ssh-command 'ssh -i FILE'"},
};

}  // namespace

std::string HorovodrunFlags::alias_of(std::string_view setting_key) {
  return setting_key == "autotune_max_samples" ? ",--autotune-bayes-opt-max-samples" : "";
}

void HorovodrunFlags::add_to(CLI::App& app) {
  auto add = [&](const std::string& name, const std::string& value_name,
                 const std::string& help) {
    Flag& f = flag(name);
    f.option = value_name.empty() ? app.add_flag(name, f.set, help)
                                  : app.add_option(name, f.value, help)->type_name(value_name);
    f.option->group(kGroup);
  };
  add("--fusion-threshold-mb", "MB", "horovodrun's: --fusion-threshold in MiB");
  add("--gloo-timeout-seconds", "N", "horovodrun's: --transport-timeout");
  add("--no-stall-check", "", "horovodrun's: stall checks off (their times 0)");
  add("--no-hierarchical-allreduce", "", "horovodrun's: --hierarchical-allreduce=false");
  for (const Compat& i : kIgnored) add(i.name, i.value, std::string("ignored: ") + i.why);
  for (const Compat& r : kRefused) add(r.name, r.value, std::string("refused: ") + r.why);
}

bool HorovodrunFlags::given(const std::string& name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second.option != nullptr && it->second.option->count() > 0;
}

common::Status HorovodrunFlags::apply(config::Settings& settings,
                                      std::vector<std::string>& notes) const {
  for (const Compat& r : kRefused) {
    if (given(r.name)) {
      return common::invalid_argument(r.shown() + " is a horovodrun flag hvdrun refuses: " +
                                      r.why);
    }
  }
  if (given("--fusion-threshold-mb")) {
    const std::string& text = value("--fusion-threshold-mb");
    int64_t mb = -1;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), mb);
    if (ec != std::errc() || end != text.data() + text.size() || mb < 0 ||
        mb > (int64_t{1} << 40)) {
      return common::invalid_argument("--fusion-threshold-mb '" + text +
                                      "': not a number of MiB (0 or more)");
    }
    HVD_RETURN_IF_ERROR(settings.set("fusion_threshold", std::to_string(mb << 20),
                                     "--fusion-threshold-mb"));
  }
  if (given("--gloo-timeout-seconds")) {
    HVD_RETURN_IF_ERROR(settings.set("transport_timeout", value("--gloo-timeout-seconds"),
                                     "--gloo-timeout-seconds"));
  }
  if (given("--no-stall-check")) {
    HVD_RETURN_IF_ERROR(settings.set("stall_check_warning_time_seconds", "0", "--no-stall-check"));
    HVD_RETURN_IF_ERROR(
        settings.set("stall_check_shutdown_time_seconds", "0", "--no-stall-check"));
  }
  if (given("--no-hierarchical-allreduce")) {
    HVD_RETURN_IF_ERROR(
        settings.set("hierarchical_allreduce", "false", "--no-hierarchical-allreduce"));
  }
  for (const Compat& i : kIgnored) {
    if (given(i.name)) notes.push_back(i.shown() + ": ignored: " + i.why);
  }
  return common::Status::ok();
}

}  // namespace hvd::launcher
