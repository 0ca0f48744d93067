#include <catch2/catch.hpp>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/input_file.h"
#include "common/secret_file.h"
#include "tests/unit/support/untrusted_input.h"

using hvd::common::read_secret_file;
using hvd::common::StatusCode;

namespace {

constexpr char kSecret[] = "s3cr3t-value-0123456789abcdef";

// A private temporary directory, removed at the end of the test.
struct TempDir {
  TempDir() {
    char tmpl[] = "/tmp/hvd-secret-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  // Writes `text` to a file with `mode`; returns its path.
  std::string file(const std::string& name, const std::string& text, mode_t mode) const {
    const std::string p = path + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    REQUIRE(::chmod(p.c_str(), mode) == 0);
    return p;
  }
  std::string path;
};

// The error of reading `path`; its message never holds the secret.
hvd::common::Status error_of(const std::string& path, const std::string& content = kSecret) {
  auto result = read_secret_file(path);
  REQUIRE_FALSE(result.is_ok());
  CHECK_THAT(result.status().message(), !Catch::Contains(content));
  CHECK_THAT(result.status().message(), Catch::Contains(path));
  return result.status();
}

}  // namespace

TEST_CASE("read_secret_file reads a 0600 file without its trailing newline") {
  TempDir dir;
  auto secret = read_secret_file(dir.file("secret", std::string(kSecret) + "\n", 0600));
  REQUIRE(secret.is_ok());
  CHECK(*secret == kSecret);
  // CRLF and trailing blanks go as well; inner ones stay.
  auto crlf = read_secret_file(dir.file("crlf", "with inner blank 0123\r\n \t\n", 0600));
  REQUIRE(crlf.is_ok());
  CHECK(*crlf == "with inner blank 0123");
  // 0400 is fine too.
  auto read_only = read_secret_file(dir.file("ro", kSecret, 0400));
  REQUIRE(read_only.is_ok());
  CHECK(*read_only == kSecret);
}

TEST_CASE("read_secret_file refuses a file others can read, naming its mode") {
  TempDir dir;
  for (mode_t mode : {0644, 0640, 0604, 0660, 0602}) {
    char octal[8];
    std::snprintf(octal, sizeof(octal), "%04o", mode);
    INFO("mode " << octal);
    auto status = error_of(dir.file(std::string("secret-") + octal, kSecret, mode));
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains(std::string("mode ") + octal));
    CHECK_THAT(status.message(), Catch::Contains("chmod 600"));
  }
}

TEST_CASE("read_secret_file refuses missing files, directories and short secrets") {
  TempDir dir;
  SECTION("missing") {
    auto status = error_of(dir.path + "/absent");
    CHECK(status.code() == StatusCode::kNotFound);
  }
  SECTION("a directory") {
    const std::string sub = dir.path + "/sub";
    REQUIRE(::mkdir(sub.c_str(), 0700) == 0);
    auto status = error_of(sub);
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains("not a regular file"));
  }
  SECTION("shorter than the minimum, after trimming") {
    const std::string short_secret = "tiny-secret-15b";  // 15 bytes
    REQUIRE(short_secret.size() < hvd::common::kMinSecretBytes);
    auto status = error_of(dir.file("short", short_secret + "\n\n", 0600), short_secret);
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains("15 bytes"));
  }
  SECTION("empty") {
    auto status = error_of(dir.file("empty", "", 0600), "\n");
    CHECK(status.code() == StatusCode::kInvalidArgument);
  }
  SECTION("too large") {
    const std::string big(70 * 1024, 'x');
    auto status = error_of(dir.file("big", big, 0600), std::string(32, 'x'));
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK_THAT(status.message(), Catch::Contains("64 KiB"));
  }
  SECTION("exactly the minimum is enough") {
    const std::string sixteen = "0123456789abcdef";
    REQUIRE(sixteen.size() == hvd::common::kMinSecretBytes);
    auto secret = read_secret_file(dir.file("sixteen", sixteen, 0600));
    REQUIRE(secret.is_ok());
    CHECK(*secret == sixteen);
  }
}

TEST_CASE("read_secret_file follows a symlink to a private file but checks the target") {
  TempDir dir;
  const std::string target = dir.file("target", kSecret, 0644);
  const std::string link = dir.path + "/link";
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  // The link's own mode (0777) does not matter; the target's does.
  auto status = error_of(link);
  CHECK_THAT(status.message(), Catch::Contains("mode 0644"));
  REQUIRE(::chmod(target.c_str(), 0600) == 0);
  auto secret = read_secret_file(link);
  REQUIRE(secret.is_ok());
  CHECK(*secret == kSecret);
}

// Issue 21: a FIFO must not hang the reader (it blocked in open() waiting
// for a writer, with hvdrun's and hvd-agent's stop signals blocked).
TEST_CASE("read_secret_file refuses a FIFO at once instead of waiting for a writer") {
  TempDir dir;
  const std::string fifo = dir.path + "/fifo";
  auto result = hvd::test::read_fifo_within_3s(fifo, [&] { return read_secret_file(fifo); });
  REQUIRE_FALSE(result.is_ok());
  CHECK(result.status().code() == StatusCode::kInvalidArgument);
  CHECK_THAT(result.status().message(), Catch::Contains("not a regular file"));
}

// Issue 29: /proc/self/environ is a 0400 file of this user with plenty of
// different bytes, and was accepted: the secret was then the agent's own,
// guessable environment.
TEST_CASE("read_secret_file refuses files of the kernel's pseudo filesystems") {
  TempDir dir;
  SECTION("/proc/self/environ") {
    auto status = error_of("/proc/self/environ", "PATH=");
    CHECK(status.code() == StatusCode::kInvalidArgument);
    CHECK(status.message() ==
          "secret file '/proc/self/environ' is on the kernel's proc filesystem, not on disk: what "
          "it holds is the kernel's (an environment, a setting), not a secret or key someone "
          "made; use a regular file on disk");
  }
  SECTION("through a symlink: the filesystem counts, not the path") {
    const std::string link = dir.path + "/innocent";
    REQUIRE(::symlink("/proc/self/environ", link.c_str()) == 0);
    auto status = error_of(link, "PATH=");
    CHECK_THAT(status.message(), Catch::Contains("kernel's proc filesystem"));
  }
  SECTION("a character device") {
    auto status = error_of("/dev/zero", std::string(16, '\0'));
    CHECK_THAT(status.message(), Catch::Contains("not a regular file (a character device)"));
  }
}

TEST_CASE("pseudo_filesystem tells the kernel's filesystems by f_type") {
  auto on = [](const char* path) {
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    std::string name = hvd::common::pseudo_filesystem(fd);
    ::close(fd);
    return name;
  };
  CHECK(on("/proc/self/status") == "proc");
  CHECK(on("/sys/kernel") == "sysfs");
  CHECK(on("/dev/null") == "/dev");
  TempDir dir;  // /tmp: a disk or a tmpfs, never a pseudo filesystem
  CHECK(on(dir.file("plain", kSecret, 0600).c_str()).empty());
}

TEST_CASE("read_secret_file refuses weak secrets: blanks and few distinct bytes") {
  TempDir dir;
  // 15 blanks and "x": 16 bytes, but 1 that is not blank.
  auto padded = error_of(dir.file("padded", std::string(15, ' ') + "x", 0600),
                         std::string(15, ' ') + "x");
  CHECK(padded.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(padded.message(), Catch::Contains("not blank"));
  // Blanks inside count as nothing either.
  auto spaced = error_of(dir.file("spaced", "a b c d e f g h i j k l m n o", 0600), "a b c");
  CHECK_THAT(spaced.message(), Catch::Contains("not blank"));
  // Long but the same few bytes again and again.
  auto repeated = error_of(dir.file("repeated", std::string(40, 'a'), 0600), "aaaa");
  CHECK_THAT(repeated.message(), Catch::Contains("different"));
  auto cycle = error_of(dir.file("cycle", "abababababababababab", 0600), "abab");
  CHECK_THAT(cycle.message(), Catch::Contains("different"));
  // What the docs suggest passes: 32 random bytes as base64 or hex.
  auto good = read_secret_file(dir.file("good", "q8Jx0lA3vV9mZb1r2T6yWcP4sN7kE5dH\n", 0600));
  CHECK(good.is_ok());
}

TEST_CASE("read_secret_file refuses a secret file owned by another user") {
  if (::geteuid() != 0) {
    WARN("not root: cannot make a file owned by another user; skipped");
    return;
  }
  TempDir dir;
  const std::string path = dir.file("foreign", kSecret, 0600);
  REQUIRE(::chown(path.c_str(), 65534, 65534) == 0);
  auto status = error_of(path);
  CHECK(status.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(status.message(), Catch::Contains("owned by uid 65534"));
  // Owned by root (here: this user) is fine.
  REQUIRE(::chown(path.c_str(), 0, 0) == 0);
  CHECK(read_secret_file(path).is_ok());
}
