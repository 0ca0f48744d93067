// The YAML config file (config/settings.h): Settings::apply_config_file,
// reading the input from a memfd through its /proc/self/fd path (the file
// reading itself is common/input_file.h's, not fuzzed here). Checks: a
// refused file changes no setting and its error is one printable line
// naming the file; after an accepted one every value validates and is in
// its stored spelling (setting it again keeps it).
#include <sys/mman.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "config/settings.h"
#include "fuzz_check.h"

using hvd::fuzz::one_line_printable;

namespace {

// The memfd the inputs are written to, and its path.
int input_fd = -1;
std::string input_path;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spdlog::set_level(spdlog::level::off);
  input_fd = memfd_create("hvd-fuzz-config", MFD_CLOEXEC);
  if (input_fd < 0) {
    std::perror("memfd_create");
    std::abort();
  }
  input_path = "/proc/self/fd/" + std::to_string(input_fd);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (ftruncate(input_fd, 0) != 0 ||
      (size > 0 && pwrite(input_fd, data, size, 0) != static_cast<ssize_t>(size))) {
    std::perror("writing the memfd");
    std::abort();
  }
  hvd::config::Settings settings;
  const auto before = settings.to_environment();
  auto status = settings.apply_config_file(input_path);
  if (!status.is_ok()) {
    const std::string& message = status.message();
    FUZZ_CHECK(one_line_printable(message), message);
    FUZZ_CHECK(message.find("config file '" + input_path + "'") != std::string::npos,
               "error without the file name: " + message);
    FUZZ_CHECK(settings.to_environment() == before, "a refused file changed settings: " + message);
    return 0;
  }
  for (const auto& spec : hvd::config::all_settings()) {
    const std::string value = settings.get(spec.key);
    auto valid = hvd::config::validate_setting(spec, value, "fuzz");
    FUZZ_CHECK(valid.is_ok(), std::string(spec.key) + ": " + valid.message());
    auto again = settings.set(spec.key, value, "fuzz");
    FUZZ_CHECK(again.is_ok(), std::string(spec.key) + ": " + again.message());
    FUZZ_CHECK(settings.get(spec.key) == value, std::string(spec.key) + ": '" + value +
                                                    "' is not its stored spelling");
  }
  return 0;
}
