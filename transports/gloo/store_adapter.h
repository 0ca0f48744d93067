// gloo's rendezvous::Store over hvd's common::Store: gloo publishes and
// finds its TCP addresses through the job's rendezvous key-value store.
// Keys get the world's prefix ("round3/cpu/" + "1"). gloo expects the store
// to throw, so failures become ::gloo::IoException carrying the Status
// message; the Status itself is kept for the transport to report.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/store.h"

namespace hvd::transports::gloo {

class StoreAdapter final : public ::gloo::rendezvous::Store {
 public:
  // `timeout` bounds every get and every wait that comes without one.
  StoreAdapter(common::Store& store, std::string prefix, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  // The Status of the first failed store call (OK when none failed).
  const common::Status& first_error() const { return first_error_; }

 private:
  std::vector<std::string> prefixed(const std::vector<std::string>& keys) const;
  [[noreturn]] void fail(const common::Status& status);

  common::Store& store_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  common::Status first_error_;
};

}  // namespace hvd::transports::gloo
