// The timeline file, in the Chrome trace event format ("JSON array format"):
//
//   [
//   {"name":"process_name","ph":"M","pid":R,"args":{"name":"hvd rank R"}},
//   {"name":"thread_name","ph":"M","pid":R,"tid":0,"args":{"name":"engine"}},
//   {"name":"thread_sort_index","ph":"M","pid":R,"tid":0,"args":{"sort_index":0}},
//   {"name":"thread_name","ph":"M","pid":R,"tid":1,"args":{"name":"grad_w"}},
//   {"name":"thread_sort_index","ph":"M","pid":R,"tid":1,"args":{"sort_index":1}},
//   {"name":"NEGOTIATE","ph":"B","ts":120,"pid":R,"tid":1},
//   {"name":"NEGOTIATE","ph":"E","ts":870,"pid":R,"tid":1},
//   {"name":"CYCLE","ph":"i","s":"t","ts":1001,"pid":R,"tid":0},
//   ...
//   ]
//
// One process (pid = the rank), one row (tid) per tensor: where Horovod gives
// each tensor its own pid, we keep one pid per rank so that the timelines of
// several ranks can be loaded side by side, and name the rows with
// "thread_name" metadata. Row 0 is the engine's own ("CYCLE" marks as
// thread-scoped instant events); tensors get rows 1, 2, ... in order of first
// appearance, each announced by its metadata just before its first event and
// kept in that order by "thread_sort_index". "ts" is whole microseconds since
// the timeline was opened (times before that are written as 0). Strings are
// JSON-escaped; bytes that are not valid UTF-8 become U+FFFD.
//
// Events are separated by ",\n" written *before* each one, so every flush
// leaves a file ending in "}" — an unterminated array that Perfetto and
// chrome://tracing accept after a crash. The destructor closes it with "\n]\n".
//
// Threads: any thread records (append under a mutex, no formatting, no I/O).
// The writer thread wakes every kFlushPeriod or when kWakeEvents are waiting,
// swaps the buffer out, formats it, writes it (one fwrite per batch) and
// flushes. Row numbering and the output buffer belong to the writer thread.
#include "runtime/engine/timeline.h"

#include <atomic>
#include <cerrno>
#include <charconv>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

namespace hvd::runtime::engine {

namespace {

using namespace std::chrono_literals;

constexpr auto kFlushPeriod = 100ms;
// The writer is woken early when this many events are waiting.
constexpr std::size_t kWakeEvents = 4096;

enum class Kind : std::uint8_t { kBegin, kEnd, kMark };

struct Event {
  Kind kind;
  Timeline::Clock::time_point when;
  std::string tensor;  // empty for marks
  std::string phase;   // the event's name
};

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;  // 24 bytes hold any int64
  out.append(buf, end);
}

// Length of the valid UTF-8 sequence starting at s[i] (s[i] >= 0x80), or 0.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // no overlong forms
    if (c == 0xED) hi = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // no overlong forms
    if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  }
  return n;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence_length(s, i);
      if (n == 0) {
        out += "\\ufffd";
        ++i;
      } else {
        out.append(s.substr(i, n));
        i += n;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

}  // namespace

struct Timeline::Impl {
  Impl(std::string p, int r, std::FILE* f) : path(std::move(p)), rank(r), file(f) {}

  const std::string path;
  const int rank;
  const Clock::time_point start = Clock::now();
  std::FILE* const file;

  std::mutex mu;
  std::condition_variable wake;
  std::vector<Event> pending;  // guarded by mu
  bool stopping = false;       // guarded by mu
  // Set by the writer when the file cannot be written: recording then drops
  // events instead of buffering them forever.
  std::atomic<bool> failed{false};
  std::thread writer;

  // Writer thread only (and open(), before the writer starts).
  std::unordered_map<std::string, std::int64_t> rows;  // tensor -> tid
  std::string out;

  void record(Kind kind, std::string_view tensor, std::string_view phase, Clock::time_point when) {
    if (failed.load(std::memory_order_relaxed)) return;
    bool wake_writer = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      pending.push_back(Event{kind, when, std::string(tensor), std::string(phase)});
      wake_writer = pending.size() == kWakeEvents;
    }
    if (wake_writer) wake.notify_one();
  }

  // "{"name":NAME,"ph":PH" — the common start of every event.
  void start_event(std::string_view name, std::string_view ph) {
    out += ",\n{\"name\":";
    append_json_string(out, name);
    out += ",\"ph\":\"";
    out += ph;
    out += '"';
  }

  void pid_tid(std::int64_t tid) {
    out += ",\"pid\":";
    append_int(out, rank);
    out += ",\"tid\":";
    append_int(out, tid);
  }

  void row_metadata(std::int64_t tid, std::string_view name) {
    start_event("thread_name", "M");
    pid_tid(tid);
    out += ",\"args\":{\"name\":";
    append_json_string(out, name);
    out += "}}";
    start_event("thread_sort_index", "M");
    pid_tid(tid);
    out += ",\"args\":{\"sort_index\":";
    append_int(out, tid);
    out += "}}";
  }

  // "[" and the process and engine-row metadata (written by open()).
  void header() {
    out += "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":";
    append_int(out, rank);
    out += ",\"args\":{\"name\":";
    append_json_string(out, "hvd rank " + std::to_string(rank));
    out += "}}";
    row_metadata(0, "engine");
  }

  std::int64_t row_of(const std::string& tensor) {
    auto [it, inserted] = rows.try_emplace(tensor, static_cast<std::int64_t>(rows.size()) + 1);
    if (inserted) row_metadata(it->second, tensor);
    return it->second;
  }

  void format(const Event& e) {
    const std::int64_t tid = e.kind == Kind::kMark ? 0 : row_of(e.tensor);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(e.when - start).count();
    switch (e.kind) {
      case Kind::kBegin: start_event(e.phase, "B"); break;
      case Kind::kEnd: start_event(e.phase, "E"); break;
      case Kind::kMark: start_event(e.phase, "i"); out += ",\"s\":\"t\""; break;
    }
    out += ",\"ts\":";
    append_int(out, us < 0 ? 0 : us);
    pid_tid(tid);
    out += '}';
  }

  // Writes and flushes `out`; on failure logs once and stops recording.
  void write_out() {
    if (out.empty() || failed.load(std::memory_order_relaxed)) {
      out.clear();
      return;
    }
    errno = 0;
    const bool ok =
        std::fwrite(out.data(), 1, out.size(), file) == out.size() && std::fflush(file) == 0;
    out.clear();
    if (!ok) {
      const int err = errno;
      failed.store(true, std::memory_order_relaxed);
      spdlog::warn("timeline: cannot write '{}': {}; no further events are recorded", path,
                   err ? std::system_category().message(err) : std::string("write error"));
    }
  }

  void run() {
    std::vector<Event> batch;
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      wake.wait_for(lock, kFlushPeriod,
                    [&] { return stopping || pending.size() >= kWakeEvents; });
      const bool last = stopping;
      // The emptied batch goes back as the next buffer, keeping its capacity.
      batch.clear();
      batch.swap(pending);
      lock.unlock();
      for (const Event& e : batch) format(e);
      if (last) out += "\n]\n";
      write_out();
      if (last) return;
      lock.lock();
    }
  }
};

common::Result<std::unique_ptr<Timeline>> Timeline::open(const std::string& path, int rank) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) {
    const int err = errno;
    return common::invalid_argument("cannot open timeline file '" + path +
                                    "': " + std::system_category().message(err));
  }
  auto impl = std::make_unique<Impl>(path, rank, file);
  impl->header();
  impl->write_out();
  if (impl->failed.load()) {
    std::fclose(file);
    return common::invalid_argument("cannot write timeline file '" + path + "'");
  }
  try {
    impl->writer = std::thread([p = impl.get()] { p->run(); });
  } catch (const std::system_error& e) {
    std::fclose(file);
    return common::internal_error("cannot start the timeline writer for '" + path +
                                  "': " + e.what());
  }
  return std::unique_ptr<Timeline>(new Timeline(std::move(impl)));
}

Timeline::Timeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Timeline::~Timeline() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->wake.notify_one();
  impl_->writer.join();
  if (std::fclose(impl_->file) != 0 && !impl_->failed.load()) {
    spdlog::warn("timeline: closing '{}' failed: {}", impl_->path,
                 std::system_category().message(errno));
  }
}

void Timeline::begin(std::string_view tensor, std::string_view phase, Clock::time_point when) {
  impl_->record(Kind::kBegin, tensor, phase, when);
}

void Timeline::end(std::string_view tensor, std::string_view phase, Clock::time_point when) {
  impl_->record(Kind::kEnd, tensor, phase, when);
}

void Timeline::mark(std::string_view what, Clock::time_point when) {
  impl_->record(Kind::kMark, {}, what, when);
}

const std::string& Timeline::path() const { return impl_->path; }

}  // namespace hvd::runtime::engine
