#include "launcher/signal_watcher.h"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

#include "common/logging.h"
#include "common/stop_signals.h"

namespace hvd::launcher {

void SignalWatcher::block_termination_signals() { common::block_stop_signals(); }

SignalWatcher::SignalWatcher(std::function<void(int)> on_signal)
    : on_signal_(std::move(on_signal)), thread_([this] { run(); }) {}

SignalWatcher::~SignalWatcher() {
  stop_ = true;
  thread_.join();
}

void SignalWatcher::run() {
  // The mask is inherited from main(); block again in case a caller forgot.
  common::block_stop_signals();
  const sigset_t set = common::stop_signals();
  // A timed wait, so the destructor can stop the thread without sending a signal.
  const timespec poll_interval{0, 100 * 1000 * 1000};
  while (!stop_) {
    int signo = sigtimedwait(&set, nullptr, &poll_interval);
    if (signo < 0) {
      if (errno != EAGAIN && errno != EINTR) spdlog::warn("sigtimedwait failed: errno {}", errno);
      continue;
    }
    try {
      on_signal_(signo);
    } catch (const std::exception& e) {
      spdlog::error("signal handler failed: {}", e.what());
    }
  }
}

std::string signal_name(int signo) {
  switch (signo) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return "signal " + std::to_string(signo);
  }
}

}  // namespace hvd::launcher
