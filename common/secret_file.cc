#include "common/secret_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace hvd::common {

namespace {

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

Result<std::string> read_secret_file(const std::string& path) {
  const std::string where = "secret file '" + path + "'";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return not_found("cannot open " + where + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return not_found("cannot stat " + where + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(where + " is not a regular file");
  }
  if ((st.st_mode & 077) != 0) {
    ::close(fd);
    return invalid_argument(where + " has mode " + octal_mode(st.st_mode) +
                            ": others can read it; run chmod 600 on it");
  }
  std::string secret;
  char buffer[4096];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return not_found("cannot read " + where + ": " + std::strerror(err));
    }
    if (n == 0) break;
    secret.append(buffer, static_cast<size_t>(n));
    if (secret.size() > 64 * 1024) {
      ::close(fd);
      return invalid_argument(where + " is larger than 64 KiB");
    }
  }
  ::close(fd);
  return check_secret(std::move(secret), where);
}

Result<std::string> check_secret(std::string secret, const std::string& where) {
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r' ||
                             secret.back() == ' ' || secret.back() == '\t')) {
    secret.pop_back();
  }
  if (secret.size() < kMinSecretBytes) {
    return invalid_argument(where + " holds " + std::to_string(secret.size()) +
                            " bytes; a secret needs at least " + std::to_string(kMinSecretBytes) +
                            " (e.g. head -c 32 /dev/urandom | base64 > FILE)");
  }
  return secret;
}

}  // namespace hvd::common
