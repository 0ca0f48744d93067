// Helpers of the containment tests (containment_test.cc,
// agent_binary_test.cc): the containments to test, and the workers of
// tests/integration/workers/leave_children.sh with what they leave behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/process_spec.h"
#include "daemon/agent/containment.h"

#ifndef HVD_LEAVE_CHILDREN
#error "HVD_LEAVE_CHILDREN must name tests/integration/workers/leave_children.sh"
#endif

namespace hvd::daemon::test {

// The kinds of child leave_children.sh leaves, by the end of their names.
inline constexpr const char* kChildKinds[] = {"group",  "nohup",       "ignores-term",
                                              "setsid", "setsid-tree", "daemon"};

// Subreaper always; cgroup too where this machine allows it (else a WARN
// says why it is not tested).
std::vector<Containment> containments();

// Makes `containment` this process's for the scope.
class ContainmentScope {
 public:
  explicit ContainmentScope(const Containment& containment);
  ~ContainmentScope();

 private:
  Containment saved_;
};

// A token no other test uses ("hvdct<pid>x<n>").
std::string unique_token();

// leave_children.sh TOKEN ACTION as rank `rank` (HVD_RANK).
common::ProcessSpec leave_children(const std::string& token, int rank, const std::string& action);

// Running processes (zombies do not count) named `prefix`...-`kind`
// (any kind when empty).
std::vector<pid_t> left_of_kind(const std::string& prefix, const std::string& kind);

// Checks, one kind at a time, that nothing named `token`... is left within
// `timeout`.
void check_none_left(const std::string& token, std::chrono::milliseconds timeout);

}  // namespace hvd::daemon::test
