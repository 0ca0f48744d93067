// A Store over files in a directory, for ranks in forked processes (the
// daemon's KvStore lives in one process). One file per key, written to a
// temporary name and renamed, so readers see whole values.
#pragma once

#include <string>
#include <vector>

#include "common/store.h"

namespace hvd::transports::testing {

class FileStore final : public common::Store {
 public:
  explicit FileStore(std::string directory) : directory_(std::move(directory)) {}

  common::Status set(const std::string& key, const std::string& value) override;
  common::Result<std::vector<std::string>> get(const std::vector<std::string>& keys,
                                               std::chrono::milliseconds timeout) override;
  common::Result<int64_t> add(const std::string& key, int64_t delta) override;
  common::Result<bool> check(const std::vector<std::string>& keys) override;
  common::Result<bool> remove(const std::string& key) override;

 private:
  std::string path(const std::string& key) const;

  std::string directory_;
};

}  // namespace hvd::transports::testing
