// An environment for tests: a map behind a getenv-shaped lookup.
#pragma once

#include <map>
#include <string>

#include "runtime/discovery/world.h"

namespace hvd::runtime::testing {

using Env = std::map<std::string, std::string>;

inline EnvLookup lookup_in(const Env& env) {
  return [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace hvd::runtime::testing
