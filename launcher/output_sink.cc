#include "launcher/output_sink.h"

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace hvd::launcher {

namespace {
// Each line after `prefix` and before a newline, in one write, flushed.
void write_lines(std::FILE* f, std::string_view prefix, std::span<const std::string> lines) {
  size_t size = 0;
  for (const auto& line : lines) size += prefix.size() + line.size() + 1;
  std::string text;
  text.reserve(size);
  for (const auto& line : lines) {
    text.append(prefix);
    text.append(line);
    text.push_back('\n');
  }
  std::fwrite(text.data(), 1, text.size(), f);
  std::fflush(f);
}
}  // namespace

OutputSink::OutputSink(std::FILE* out, std::FILE* err) : out_(out), err_(err) {}

OutputSink::~OutputSink() { close(); }

common::Status OutputSink::open_log_dir(const std::string& dir, int np) {
  namespace fs = std::filesystem;
  for (int rank = 0; rank < np; ++rank) {
    fs::path rank_dir = fs::path(dir) / ("rank." + std::to_string(rank));
    std::error_code ec;
    fs::create_directories(rank_dir, ec);
    if (ec) {
      return common::unavailable("--output-filename: cannot create '" + rank_dir.string() +
                                 "': " + ec.message());
    }
    RankFiles files;
    for (auto [name, slot] : {std::pair{"stdout", &files.out}, std::pair{"stderr", &files.err}}) {
      fs::path path = rank_dir / name;
      *slot = std::fopen(path.c_str(), "wb");
      if (*slot == nullptr) {
        std::string why = std::strerror(errno);
        if (files.out != nullptr) std::fclose(files.out);
        return common::unavailable("--output-filename: cannot write '" + path.string() +
                                   "': " + why);
      }
    }
    files_[rank] = files;
  }
  return common::Status::ok();
}

void OutputSink::write(int rank, bool is_stderr, std::span<const std::string> lines) {
  std::string prefix = "[" + std::to_string(rank) + "]" + (is_stderr ? "<stderr>:" : "<stdout>:");
  if (timestamps_) {
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char stamp[64];
    const size_t n = std::strftime(stamp, sizeof(stamp), "%a %b %d %H:%M:%S %Y", &local);
    prefix.insert(0, stamp, n);
  }
  write_lines(is_stderr ? err_ : out_, prefix, lines);
  auto it = files_.find(rank);
  if (it != files_.end()) write_lines(is_stderr ? it->second.err : it->second.out, "", lines);
}

void OutputSink::close() {
  for (auto& [rank, files] : files_) {
    if (files.out != nullptr) std::fclose(files.out);
    if (files.err != nullptr) std::fclose(files.err);
  }
  files_.clear();
}

}  // namespace hvd::launcher
