// Text from outside (a hostfile, a discovery script's output, a config file)
// goes into one-line error messages escaped: control bytes, DEL and bytes
// above 0x7e become \xNN, so that no input can move the cursor, retitle the
// terminal or split a message into several lines.
#pragma once

#include <string>
#include <string_view>

namespace hvd::common {

// `text` with every byte outside 0x20..0x7e written as \xNN (two lowercase
// hex digits) and every backslash as \\ (so that the escape is unambiguous).
std::string printable(std::string_view text);

}  // namespace hvd::common
