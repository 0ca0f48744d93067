// What the fuzz targets share: FUZZ_CHECK, an invariant that aborts (a
// crash libFuzzer reports and saves) with the condition and the message;
// one_line_printable, the promise of common/printable.h that input quoted in
// an error message can neither move the cursor nor split the line.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string_view>

#define FUZZ_CHECK(cond, detail)                                                        \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: %.*s\n", __FILE__, __LINE__, \
                   #cond, static_cast<int>(std::string_view(detail).size()),            \
                   std::string_view(detail).data());                                    \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace hvd::fuzz {

// Only bytes 0x20..0x7e.
inline bool one_line_printable(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) return false;
  }
  return true;
}

}  // namespace hvd::fuzz
