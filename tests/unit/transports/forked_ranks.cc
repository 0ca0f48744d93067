#include "forked_ranks.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "file_store.h"
#include "transports/table/transport_table.h"

namespace hvd::transports::testing {

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void run_child(const ForkedOptions& options, const std::string& directory, int rank,
                            const std::function<void(int, std::unique_ptr<Transport>&, Problems&)>& body) {
  Problems problems;
  try {
    FileStore store(directory);
    TransportContext context;
    context.rank = rank;
    context.size = options.size;
    context.store = &store;
    context.key_prefix = options.key_prefix;
    context.timeout = options.timeout;
    auto transport = builtin_registry().create(options.transport, context);
    if (!transport.is_ok()) {
      problems.push_back("create: " + transport.status().to_string());
    } else {
      body(rank, transport.value(), problems);
    }
  } catch (const std::exception& e) {
    problems.push_back(std::string("exception: ") + e.what());
  }
  std::ofstream out(directory + "/problems." + std::to_string(rank));
  for (const auto& p : problems) out << p << "\n";
  out << "done\n";
  out.close();
  std::_Exit(0);
}

}  // namespace

ForkedRun run_forked(const ForkedOptions& given,
                     const std::function<void(int, std::unique_ptr<Transport>&, Problems&)>& body) {
  static std::atomic<int> runs{0};
  ForkedOptions options = given;
  if (options.key_prefix.empty()) {
    options.key_prefix = "forked-" + std::to_string(getpid()) + "-" + std::to_string(runs++) + "/";
  }
  std::string directory = (std::filesystem::temp_directory_path() /
                           ("hvd-forked-" + std::to_string(getpid()) + "-" + std::to_string(runs++)))
                              .string();
  std::filesystem::create_directories(directory);
  std::vector<pid_t> pids;
  std::cout.flush();  // or the children print what is buffered again
  std::fflush(nullptr);
  for (int rank = 0; rank < options.size; ++rank) {
    pid_t pid = fork();
    if (pid == 0) run_child(options, directory, rank, body);
    pids.push_back(pid);
  }
  ForkedRun run;
  run.problems.resize(static_cast<size_t>(options.size));
  run.signals.assign(static_cast<size_t>(options.size), 0);
  std::vector<bool> done(static_cast<size_t>(options.size), false);
  auto deadline = Clock::now() + std::chrono::seconds(120);  // for all of them
  size_t remaining = pids.size();
  while (remaining > 0) {
    for (size_t r = 0; r < pids.size(); ++r) {
      int status = 0;
      if (done[r] || waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      done[r] = true;
      --remaining;
      if (WIFSIGNALED(status)) run.signals[r] = WTERMSIG(status);
      // Once one rank is done the rest get `deadline` more.
      deadline = std::min(deadline, Clock::now() + options.deadline);
    }
    if (remaining > 0 && Clock::now() >= deadline) {
      for (size_t r = 0; r < pids.size(); ++r) {
        if (!done[r]) kill(pids[r], SIGKILL);
      }
      deadline = Clock::now() + std::chrono::seconds(120);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (size_t r = 0; r < pids.size(); ++r) {
    std::ifstream in(directory + "/problems." + std::to_string(r));
    std::string line;
    bool finished = false;
    while (std::getline(in, line)) {
      if (line == "done") finished = true;
      else run.problems[r].push_back(line);
    }
    if (!finished) run.problems[r].push_back("killed by signal " + std::to_string(run.signals[r]));
  }
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
  return run;
}

std::vector<std::string> shm_files(const std::string& fragment) {
  std::vector<std::string> names;
  std::error_code error;
  for (std::filesystem::directory_iterator it("/dev/shm", error), end; !error && it != end; it.increment(error)) {
    std::string name = it->path().filename().string();
    if (name.rfind("hvd-" + fragment, 0) == 0) names.push_back(name);
  }
  return names;
}

}  // namespace hvd::transports::testing
