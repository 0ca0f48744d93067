#include "runtime/fault_point.h"

#include <signal.h>
#include <unistd.h>

#include <charconv>

#include "common/logging.h"

namespace hvd::runtime {

namespace {

constexpr std::string_view kVariable = "HVD_TEST_FAULT";

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == sep) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

bool parse_int(std::string_view text, int64_t& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && ptr == text.data() + text.size() && out >= 0;
}

common::Status bad(std::string_view token, std::string_view why) {
  return common::invalid_argument(std::string(kVariable) + ": '" + std::string(token) + "' " +
                                  std::string(why));
}

}  // namespace

common::Result<FaultPoints> FaultPoints::parse(std::string_view spec) {
  FaultPoints points;
  if (spec.empty()) return points;
  for (std::string_view item : split(spec, ',')) {
    std::vector<std::string_view> fields = split(item, ':');
    if (fields.size() < 2) return bad(item, "is not <point>:<action>[:round=N][:slot=S][:key=K]");
    Fault fault;
    fault.point = std::string(fields[0]);
    fault.action = std::string(fields[1]);
    if (fault.point != "joined" && fault.point != "keys" && fault.point != "connected" &&
        fault.point != "heartbeat") {
      return bad(fields[0], "is not a fault point (joined, keys, connected, heartbeat)");
    }
    int64_t pause = 0;
    if (fault.point == "heartbeat") {
      if (fault.action.rfind("pause=", 0) != 0 ||
          !parse_int(std::string_view(fault.action).substr(6), pause) || pause <= 0) {
        return bad(fields[1], "is not the heartbeat's action (pause=S, S > 0 seconds)");
      }
      fault.pause = static_cast<int>(pause);
    } else if (fault.action != "kill" && fault.action != "stop" && fault.action != "exit") {
      return bad(fields[1], "is not a fault action (kill, stop, exit)");
    }
    for (size_t i = 2; i < fields.size(); ++i) {
      std::string_view f = fields[i];
      int64_t value = 0;
      if (f.rfind("round=", 0) == 0 && parse_int(f.substr(6), value)) {
        fault.round = value;
      } else if (f.rfind("slot=", 0) == 0 && parse_int(f.substr(5), value)) {
        fault.slot = static_cast<int>(value);
      } else if (f.rfind("key=", 0) == 0 && f.size() > 4 && fault.point == "keys") {
        fault.key = "/" + std::string(f.substr(4));
      } else {
        return bad(f, fault.point == "keys" ? "is not round=N, slot=S or key=K"
                                            : "is not round=N or slot=S");
      }
    }
    points.faults_.push_back(std::move(fault));
  }
  return points;
}

int FaultPoints::heartbeat_pause(int64_t round, int slot) const {
  for (const Fault& f : faults_) {
    if (f.point == "heartbeat" && (f.round < 0 || f.round == round) &&
        (f.slot < 0 || f.slot == slot)) {
      return f.pause;
    }
  }
  return 0;
}

void FaultPoints::reach(std::string_view point, int64_t round, int slot,
                        std::string_view key) const {
  for (const Fault& f : faults_) {
    if (f.point != point || f.point == "heartbeat" || (f.round >= 0 && f.round != round) || (f.slot >= 0 && f.slot != slot) ||
        (!f.key.empty() && !key.ends_with(f.key))) {
      continue;
    }
    spdlog::warn("{}: {} at '{}' (round {}, slot {}{}{})", kVariable, f.action, f.point, round,
                 slot, key.empty() ? "" : ", key ", key);
    spdlog::default_logger()->flush();
    if (f.action == "kill") ::kill(::getpid(), SIGKILL);
    if (f.action == "stop") ::kill(::getpid(), SIGSTOP);
    if (f.action == "exit") ::_exit(3);
  }
}

}  // namespace hvd::runtime
