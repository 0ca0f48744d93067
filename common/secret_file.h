// Reading a shared secret (the hvd-agent secret) from a file. The file must
// be a regular file (a FIFO or device is refused at once, never waited on)
// that only its owner can read (mode 0600 or 0400, like ssh keys) and that
// this user or root owns: anything else is refused, because whoever reads
// or writes the secret can run commands on every agent that trusts it.
// A secret must not be guessable at a glance either: at least
// kMinSecretBytes bytes that are not blanks, of at least
// kMinSecretDistinctBytes different values. Errors name the path (escaped),
// the mode or the owner, never the contents.
#pragma once

#include <string>

#include "common/status.h"

namespace hvd::common {

// The minimum number of bytes that are not blank (space, tab, CR, LF, VT,
// FF, NUL), after trailing whitespace is dropped.
inline constexpr size_t kMinSecretBytes = 16;
// The minimum number of different byte values: "aaaa...", "abab..." and
// "deadbeefdeadbeef" are refused; 16 random hex digits pass all but about 3
// times in 100,000, 32 random bytes as base64 or hex always.
inline constexpr size_t kMinSecretDistinctBytes = 6;
// The largest secret file.
inline constexpr size_t kMaxSecretBytes = 64 * 1024;

// The file's contents without trailing whitespace/newlines.
// kInvalidArgument: not a regular file, group/other permission bits set,
// owned by another user than this one or root, larger than kMaxSecretBytes,
// or a weak secret (check_secret); kNotFound: cannot be opened.
Result<std::string> read_secret_file(const std::string& path);

// `text` without trailing whitespace/newlines; kInvalidArgument naming
// `where` (never the contents) when it has fewer than kMinSecretBytes bytes
// that are not blank or fewer than kMinSecretDistinctBytes different bytes.
Result<std::string> check_secret(std::string text, const std::string& where);

}  // namespace hvd::common
