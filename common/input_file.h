// Reading what a user points hvdrun or hvd-agent at (secret and key files,
// hostfiles, config files, the secret line on stdin) so that no input can
// hang or exhaust them:
//  - files are opened with O_NONBLOCK, so a FIFO without a writer does not
//    block open(); a kind of file that is not allowed is refused at once;
//  - every wait for data has a deadline (a regular file never waits);
//  - at most `max_bytes` are read;
//  - while waiting, a pending SIGINT, SIGTERM or SIGHUP (both programs block
//    these for their signal thread, which does not run yet at this point)
//    is delivered at once: the program ends as if it had not blocked them.
// Errors name the file (escaped) and never its contents.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include "common/status.h"

namespace hvd::common {

struct InputRules {
  std::string what;  // "secret file", "--tls-key file", "hostfile": starts every message
  size_t max_bytes = 1 << 20;
  // Pipes and FIFOs (--hostfile <(cmd)) are read until EOF within this long.
  std::chrono::milliseconds timeout{30'000};
  bool allow_pipe = false;  // else only regular files
  // A secret or a private key: mode without group/other bits and owned by
  // this user or root (as ssh requires of its keys). Implies regular files
  // and real_file.
  bool private_file = false;
  // Refuses files of the kernel's own filesystems (proc, sysfs, /dev,
  // debugfs, cgroup, ...; pseudo_filesystem() below): their contents are
  // made up by the kernel on each read (/proc/self/environ is the reader's
  // own environment), never a secret or a certificate someone wrote.
  bool real_file = false;
};

// The whole file under `rules`. kNotFound when it cannot be opened or read;
// kInvalidArgument for a kind, mode, owner or size the rules refuse;
// kTimeout when a pipe gives no EOF within the timeout.
Result<std::string> read_input_file(const std::string& path, const InputRules& rules);

// One line from `fd` (without its '\n'), read a byte at a time so that
// nothing after it is consumed; EOF ends the line too. kTimeout when no
// full line arrives within `timeout`; kInvalidArgument beyond `max_bytes`.
// `what` names the input in messages ("the secret on stdin").
Result<std::string> read_line_within(int fd, const std::string& what,
                                     std::chrono::milliseconds timeout, size_t max_bytes);

// "0644"
std::string octal_mode(mode_t mode);

// The name of the kernel pseudo filesystem that the open file `fd` is on
// ("proc", "sysfs", "/dev", ...), or "" for any other filesystem. Told by
// fstatfs()'s f_type, not by the path: a bind mount or a symlink of /proc
// elsewhere is recognised too. /dev (devtmpfs, or a tmpfs in containers)
// reports tmpfs's f_type; it is told apart from other tmpfs mounts by what
// /proc/self/mountinfo says of the file's device.
std::string pseudo_filesystem(int fd);

}  // namespace hvd::common
