#include "file_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

namespace hvd::transports::testing {

namespace {

bool read_file(const std::string& path, std::string& value) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  value = text.str();
  return true;
}

}  // namespace

std::string FileStore::path(const std::string& key) const {
  std::string name;
  for (char c : key) name += c == '/' ? '%' : c;
  return directory_ + "/" + name;
}

common::Status FileStore::set(const std::string& key, const std::string& value) {
  std::string temporary = path(key) + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << value;
    if (!out) return common::unavailable("cannot write " + temporary);
  }
  if (std::rename(temporary.c_str(), path(key).c_str()) != 0) return common::unavailable("cannot rename " + temporary);
  return common::Status::ok();
}

common::Result<std::vector<std::string>> FileStore::get(const std::vector<std::string>& keys,
                                                        std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> values(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    while (!read_file(path(keys[i]), values[i])) {
      if (std::chrono::steady_clock::now() >= deadline) return common::timeout_error("no key " + keys[i]);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return values;
}

common::Result<int64_t> FileStore::add(const std::string& key, int64_t delta) {
  int lock = ::open((directory_ + "/.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock < 0 || flock(lock, LOCK_EX) != 0) return common::unavailable("cannot lock " + directory_);
  std::string value;
  int64_t sum = (read_file(path(key), value) && !value.empty() ? std::stoll(value) : 0) + delta;
  common::Status written = set(key, std::to_string(sum));
  ::close(lock);
  if (!written.is_ok()) return written;
  return sum;
}

common::Result<bool> FileStore::check(const std::vector<std::string>& keys) {
  std::string value;
  for (const auto& key : keys) {
    if (!read_file(path(key), value)) return false;
  }
  return true;
}

common::Result<bool> FileStore::remove(const std::string& key) { return ::unlink(path(key).c_str()) == 0; }

}  // namespace hvd::transports::testing
