// Secrets: job tokens and agent secrets. Never log or print one.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd::common {

// 32 random bytes from the kernel as 64 hex characters.
Result<std::string> generate_token();

// `bytes` as lower-case hex, two characters a byte.
std::string to_hex(std::span<const unsigned char> bytes);

// Compares in time that depends only on the lengths, not on the contents.
bool tokens_equal(std::string_view a, std::string_view b);

}  // namespace hvd::common
