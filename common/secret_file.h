// Reading a shared secret (the hvd-agent secret) from a file. The file must
// be a regular file that only its owner can read (mode 0600 or 0400, like ssh
// keys): anything looser is refused, because whoever reads the secret can run
// commands on every agent that trusts it. Errors name the path and the mode,
// never the contents.
#pragma once

#include <string>

#include "common/status.h"

namespace hvd::common {

// The minimum secret length in bytes (after trailing whitespace is dropped).
inline constexpr size_t kMinSecretBytes = 16;

// The file's contents without trailing whitespace/newlines.
// kInvalidArgument: not a regular file, group/other permission bits set,
// empty or shorter than kMinSecretBytes; kNotFound: cannot be opened.
Result<std::string> read_secret_file(const std::string& path);

// `text` without trailing whitespace/newlines; kInvalidArgument naming
// `where` (never the contents) when shorter than kMinSecretBytes.
Result<std::string> check_secret(std::string text, const std::string& where);

}  // namespace hvd::common
