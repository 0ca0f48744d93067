#include "daemon/agent/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <map>
#include <set>
#include <system_error>
#include <thread>

#include "common/child_process.h"
#include "daemon/agent/containment.h"
#include "daemon/agent/group_reaper.h"
#include "daemon/agent/job_cgroup.h"
#include "daemon/agent/line_splitter.h"
#include "daemon/agent/proc_state.h"
#include "daemon/agent/process_groups.h"

namespace hvd::daemon {

using common::UniqueFd;
using common::above_stdio;
using common::resolve_command;
using common::start_child;

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kSpawnAnswer{30'000};  // for the thread to fork
constexpr milliseconds kAfterKill{2'000};     // for SIGKILLed groups to vanish
constexpr milliseconds kReapWait{1'000};      // for the thread to reap them
constexpr size_t kReadChunk = 64 * 1024;
// After a process exited, what its pipes hold then is read, up to this (a
// pipe holds 64 KiB unless its writer grew it, to 1 MiB without privileges).
constexpr size_t kDrainLimit = 16 * 1024 * 1024;

struct Child {
  int rank = 0;
  pid_t pid = -1;
  pid_t wait_pid = -1;  // its keeper, or pid (common::StartedChild)
  UniqueFd pidfd;
  UniqueFd pipes[2];  // stdout, stderr
  LineSplitter lines[2];
  bool reaped = false;
  bool stopped = false;  // as last reported (kState)
};

struct SpawnRequest {
  ProcessSpec spec;
  std::string path;
  std::promise<Result<int64_t>> result;
};

// Wakes the thread polling the eventfd `fd`.
void poke(int fd) {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd, &one, sizeof(one));
}

Status stopping_error() {
  return {common::StatusCode::kCancelled, "the process supervisor is shutting down"};
}

}  // namespace

struct Supervisor::Impl {
  Impl(EventSink s, OutputRoom room);

  void run();
  void loop();
  void take_requests(bool stopping);
  void start(SpawnRequest& request);
  // Reads once, or (drain) what the pipe holds now.
  void read_pipe(Child& child, int stream, bool drain);
  bool output_room();
  bool try_reap(Child& child);
  void sample_states();
  void emit_output(const Child& child, int stream, std::string line);
  void emit(const ProcessEvent& event);
  void kill_all_groups();
  void prune_groups();
  void wake_thread();

  EventSink sink;
  OutputRoom room;
  // eventfd: requests are waiting, stop, or room for output; shared with
  // the output wakers, which may outlive this.
  std::shared_ptr<UniqueFd> wake;
  UniqueFd devnull;  // stdin of every child
  std::thread thread;

  mutable std::mutex mu;
  std::condition_variable reaped_cv;
  std::deque<std::shared_ptr<SpawnRequest>> requests;
  bool stopping = false;
  bool dead = false;          // the thread has ended
  std::vector<pid_t> groups;  // spawned process groups that may still have members
  std::map<int, pid_t> rank_groups;  // the latest process group of each rank
  std::set<pid_t> unreaped;
  GroupReaper reaper;  // kills the groups' orphans when this process dies
  // The job's cgroup (containment.h); without one, every worker has a keeper.
  // After the reaper: destroyed (killed, removed) while the reaper runs.
  std::unique_ptr<JobCgroup> cgroup;

  // Owned by the supervisor thread.
  std::vector<std::unique_ptr<Child>> children;
  std::vector<char> buffer = std::vector<char>(kReadChunk);
  Clock::time_point next_sample{};
};

Supervisor::Impl::Impl(EventSink s, OutputRoom r) : sink(std::move(s)), room(std::move(r)) {
  wake = std::make_shared<UniqueFd>(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake->valid()) throw std::system_error(errno, std::generic_category(), "eventfd");
  devnull = above_stdio(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devnull.valid()) throw std::system_error(errno, std::generic_category(), "/dev/null");
  cgroup = make_job_cgroup(current_containment());
  if (cgroup) reaper.set_cgroup(cgroup->path());
}

void Supervisor::Impl::run() {
  try {
    loop();
  } catch (const std::exception& e) {
    spdlog::error("process supervisor thread failed: {}", e.what());
  } catch (...) {
    spdlog::error("process supervisor thread failed with an unknown exception");
  }
  std::deque<std::shared_ptr<SpawnRequest>> left;
  {
    std::lock_guard lock(mu);
    dead = true;
    left.swap(requests);
  }
  for (auto& request : left) request->result.set_value(stopping_error());
  reaped_cv.notify_all();
}

void Supervisor::Impl::loop() {
  bool stop_seen = false;
  Clock::time_point stop_deadline;
  std::vector<pollfd> fds;
  std::vector<std::pair<Child*, int>> owners;  // stream 0/1, 2 = pidfd, -1 = wake
  for (;;) {
    bool stop = false;
    {
      std::lock_guard lock(mu);
      stop = stopping;
    }
    if (stop && !stop_seen) {
      // Also catches a child forked while the destructor was signalling.
      stop_seen = true;
      stop_deadline = Clock::now() + kAfterKill + kReapWait;
      kill_all_groups();
    }
    if (stop && children.empty()) return;
    if (stop && Clock::now() >= stop_deadline) {
      spdlog::warn("process supervisor: {} process(es) not reaped at shutdown", children.size());
      return;
    }

    fds.clear();
    owners.clear();
    fds.push_back({wake->get(), POLLIN, 0});
    owners.emplace_back(nullptr, -1);
    bool without_pidfd = false;
    // Without room for output the pipes wait (the processes block once
    // they are full); output_waker() ends the poll when there is room.
    const bool reading = output_room();
    for (auto& child : children) {
      for (int s : {0, 1}) {
        if (!reading || !child->pipes[s].valid()) continue;
        fds.push_back({child->pipes[s].get(), POLLIN, 0});
        owners.emplace_back(child.get(), s);
      }
      if (child->pidfd.valid()) {
        fds.push_back({child->pidfd.get(), POLLIN, 0});
        owners.emplace_back(child.get(), 2);
      } else {
        without_pidfd = true;
      }
    }
    const int timeout_ms =
        (stop || without_pidfd) ? 50 : static_cast<int>(Supervisor::kStateSample.count());
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      throw std::system_error(errno, std::generic_category(), "poll");
    }

    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto [child, what] = owners[i];
      if (what == -1) {
        uint64_t count = 0;
        [[maybe_unused]] ssize_t n = ::read(wake->get(), &count, sizeof(count));
      } else if (what == 2) {
        try_reap(*child);
      } else if (child->pipes[what].valid() && output_room()) {
        read_pipe(*child, what, false);
      }
    }
    for (auto& child : children) {
      if (!child->reaped && !child->pidfd.valid()) try_reap(*child);
    }
    std::erase_if(children, [](const auto& c) { return c->reaped; });
    if (!stop && Clock::now() >= next_sample) {
      next_sample = Clock::now() + Supervisor::kStateSample;
      sample_states();
    }
    take_requests(stop);
  }
}

void Supervisor::Impl::take_requests(bool stop) {
  std::deque<std::shared_ptr<SpawnRequest>> batch;
  {
    std::lock_guard lock(mu);
    batch.swap(requests);
  }
  for (auto& request : batch) {
    if (stop) {
      request->result.set_value(stopping_error());
      continue;
    }
    try {
      start(*request);
    } catch (const std::exception& e) {
      request->result.set_value(common::internal_error(std::string("cannot start: ") + e.what()));
    }
  }
}

void Supervisor::Impl::start(SpawnRequest& request) {
  common::StartOptions contained;
  contained.cgroup_procs_fd = cgroup ? cgroup->procs_fd() : -1;
  contained.keeper = !cgroup;
  auto started = start_child(request.spec, request.path, devnull.get(), contained);
  if (!started.is_ok()) {
    spdlog::info("cannot start rank {}: {}", request.spec.rank, started.status().message());
    request.result.set_value(started.status());
    return;
  }
  auto child = std::make_unique<Child>();
  child->rank = request.spec.rank;
  child->pid = started->pid;
  child->wait_pid = started->wait_pid;
  child->pidfd = std::move(started->pidfd);
  child->pipes[0] = std::move(started->stdout_fd);
  child->pipes[1] = std::move(started->stderr_fd);
  {
    std::lock_guard lock(mu);
    groups.push_back(child->pid);
    rank_groups[child->rank] = child->pid;
    unreaped.insert(child->pid);
  }
  reaper.add(child->pid);
  const pid_t pid = child->pid;
  children.push_back(std::move(child));
  spdlog::debug("started rank {} as pid {}: {}", request.spec.rank, pid, request.spec.argv.front());
  request.result.set_value(static_cast<int64_t>(pid));
}

bool Supervisor::Impl::output_room() { return !room || room(); }

void Supervisor::Impl::read_pipe(Child& child, int stream, bool drain) {
  auto emit_line = [&](std::string line) { emit_output(child, stream, std::move(line)); };
  UniqueFd& fd = child.pipes[stream];
  // Draining reads what the pipe holds now, not what children of the
  // process that keep it open write on.
  size_t limit = 1;
  if (drain) {
    int held = 0;
    limit = ::ioctl(fd.get(), FIONREAD, &held) == 0
                ? std::min(static_cast<size_t>(std::max(held, 0)), kDrainLimit)
                : kDrainLimit;
  }
  size_t total = 0;
  while (fd.valid()) {
    const ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n > 0) {
      child.lines[stream].feed(std::string_view(buffer.data(), static_cast<size_t>(n)), emit_line);
      total += static_cast<size_t>(n);
      if (total >= limit) return;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0) spdlog::warn("reading the output of pid {}: {}", child.pid, std::strerror(errno));
    child.lines[stream].finish(emit_line);  // end of file
    fd.reset();
  }
}

bool Supervisor::Impl::try_reap(Child& child) {
  int status = 0;
  pid_t r = 0;
  do {
    r = ::waitpid(child.wait_pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return false;

  ProcessEvent event;
  event.kind = ProcessEvent::Kind::kExit;
  event.rank = child.rank;
  event.pid = child.pid;
  if (r < 0) {
    spdlog::error("cannot reap pid {} (rank {}): {}", child.pid, child.rank, std::strerror(errno));
    event.exit_code = 255;
  } else if (WIFSIGNALED(status)) {
    event.signal = WTERMSIG(status);
  } else {
    event.exit_code = WEXITSTATUS(status);
  }
  // Whatever the process wrote is in the pipes now. Children of it may keep
  // them open and write on: that is not waited for.
  for (int s : {0, 1}) {
    read_pipe(child, s, true);
    if (child.pipes[s].valid()) {
      child.lines[s].finish([&](std::string line) { emit_output(child, s, std::move(line)); });
      child.pipes[s].reset();
    }
  }
  spdlog::debug("rank {} (pid {}) ended: exit code {}, signal {}", child.rank, child.pid,
                event.exit_code, event.signal);
  child.pidfd.reset();
  child.reaped = true;
  {
    std::lock_guard lock(mu);
    unreaped.erase(child.pid);
  }
  emit(event);  // after the count drops, so that running() agrees with the events
  reaped_cv.notify_all();
  prune_groups();
  return true;
}

void Supervisor::Impl::sample_states() {
  for (auto& child : children) {
    const ProcState state = read_proc_state(child->pid);
    if (state == ProcState::kGone) continue;  // its exit comes once it is reaped
    const bool stopped = state == ProcState::kStopped;
    if (stopped == child->stopped) continue;
    child->stopped = stopped;
    spdlog::debug("rank {} (pid {}) is {}", child->rank, child->pid, proc_state_name(state));
    ProcessEvent event;
    event.kind = ProcessEvent::Kind::kState;
    event.rank = child->rank;
    event.pid = child->pid;
    event.stopped = stopped;
    emit(event);
  }
}

void Supervisor::Impl::emit_output(const Child& child, int stream, std::string line) {
  ProcessEvent event;
  event.kind = ProcessEvent::Kind::kOutput;
  event.rank = child.rank;
  event.pid = child.pid;
  event.is_stderr = stream == 1;
  event.text = std::move(line);
  emit(event);
}

void Supervisor::Impl::emit(const ProcessEvent& event) {
  try {
    sink(event);
  } catch (const std::exception& e) {
    spdlog::error("process event handler failed: {}", e.what());
  } catch (...) {
    spdlog::error("process event handler failed with an unknown exception");
  }
}

void Supervisor::Impl::kill_all_groups() {
  std::lock_guard lock(mu);
  signal_groups(groups, SIGKILL);
  if (cgroup) cgroup->kill();
}

void Supervisor::Impl::prune_groups() {
  std::vector<pid_t> gone;
  bool none_left = false;
  {
    std::lock_guard lock(mu);
    std::erase_if(groups, [&](pid_t g) {
      const bool dead = unreaped.count(g) == 0 && !group_exists(g);
      if (dead) gone.push_back(g);
      return dead;
    });
    none_left = groups.empty();
  }
  for (pid_t g : gone) reaper.remove(g);
  if (none_left && !cgroup) reaper.stop();  // a cgroup may hold orphans of gone groups
}

void Supervisor::Impl::wake_thread() {
  poke(wake->get());
}

Supervisor::Supervisor(EventSink sink, OutputRoom output_room)
    : impl_(std::make_unique<Impl>(std::move(sink), std::move(output_room))) {
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

Supervisor::~Supervisor() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->kill_all_groups();
  impl_->wake_thread();
  if (impl_->thread.joinable()) impl_->thread.join();
}

Result<int64_t> Supervisor::spawn(const ProcessSpec& spec) {
  auto path = resolve_command(spec);
  if (!path.is_ok()) return path.status();
  auto request = std::make_shared<SpawnRequest>();
  request->spec = spec;
  request->path = std::move(path).value();
  auto answer = request->result.get_future();
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopping || impl_->dead) return stopping_error();
    impl_->requests.push_back(request);
  }
  impl_->wake_thread();
  if (answer.wait_for(kSpawnAnswer) != std::future_status::ready) {
    return common::timeout_error("the process supervisor did not start rank " +
                                 std::to_string(spec.rank) + " within 30 s");
  }
  return answer.get();
}

void Supervisor::signal_all(int sig) {
  std::lock_guard lock(impl_->mu);
  signal_groups(impl_->groups, sig);
}

bool Supervisor::signal_rank(int rank, int sig) {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->rank_groups.find(rank);
  if (it == impl_->rank_groups.end()) return false;
  return signal_groups({it->second}, sig).empty();
}

int Supervisor::terminate_all(std::chrono::milliseconds grace) {
  std::vector<pid_t> targets;
  {
    std::lock_guard lock(impl_->mu);
    targets = impl_->groups;
  }
  const std::vector<pid_t> leaders = targets;
  targets = live_groups(targets);
  int killed = 0;
  if (!targets.empty()) {
    spdlog::debug("terminating {} process group(s), grace {} ms", targets.size(), grace.count());
    signal_groups(targets, SIGTERM);
    signal_groups(targets, SIGCONT);  // a stopped process acts on SIGTERM only once continued
    targets = wait_groups_gone(std::move(targets), grace);
    killed = static_cast<int>(targets.size());
    if (killed > 0) {
      spdlog::info("{} process group(s) still alive {} ms after SIGTERM: sending SIGKILL", killed,
                   grace.count());
      signal_groups(targets, SIGKILL);
      targets = wait_groups_gone(std::move(targets), kAfterKill);
      if (!targets.empty()) {
        spdlog::warn("{} process group(s) survived SIGKILL", targets.size());
      }
    }
  }
  // Let the supervisor thread reap the leaders, so that their exit events are
  // out before this returns.
  {
    std::unique_lock lock(impl_->mu);
    impl_->reaped_cv.wait_for(lock, kReapWait, [&] {
      if (impl_->dead) return true;
      return std::none_of(leaders.begin(), leaders.end(), [&](pid_t pid) {
        return impl_->unreaped.count(pid) != 0 &&
               std::find(targets.begin(), targets.end(), pid) == targets.end();
      });
    });
  }
  // What the workers left outside their groups (setsid, daemons): their
  // keepers ended it with them; a cgroup holds it until now.
  if (impl_->cgroup && !impl_->cgroup->kill_and_wait(kAfterKill)) {
    spdlog::warn("processes of the cgroup {} survived SIGKILL", impl_->cgroup->path());
  }
  impl_->prune_groups();
  return killed;
}

std::function<void()> Supervisor::output_waker() const {
  return [wake = impl_->wake] { poke(wake->get()); };
}

int Supervisor::running() const {
  std::lock_guard lock(impl_->mu);
  return static_cast<int>(impl_->unreaped.size());
}

}  // namespace hvd::daemon
