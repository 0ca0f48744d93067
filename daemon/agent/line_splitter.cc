#include "daemon/agent/line_splitter.h"

#include <algorithm>

namespace hvd::daemon {

void LineSplitter::feed(std::string_view data, const Emit& emit) {
  while (!data.empty()) {
    const size_t room = kMaxLine - pending_.size();
    const size_t newline = data.substr(0, room).find('\n');
    if (newline == 0 && pending_.empty() && just_split_) {
      // The newline that ends a line already handed out in full pieces.
      just_split_ = false;
      data.remove_prefix(1);
      continue;
    }
    just_split_ = false;
    if (newline != std::string_view::npos) {
      pending_.append(data.substr(0, newline));
      data.remove_prefix(newline + 1);
      emit(std::move(pending_));
      pending_.clear();
      continue;
    }
    const size_t take = std::min(room, data.size());
    pending_.append(data.substr(0, take));
    data.remove_prefix(take);
    if (pending_.size() == kMaxLine) {
      emit(std::move(pending_));
      pending_.clear();
      just_split_ = true;
    }
  }
}

void LineSplitter::finish(const Emit& emit) {
  just_split_ = false;
  if (pending_.empty()) return;
  emit(std::move(pending_));
  pending_.clear();
}

}  // namespace hvd::daemon
