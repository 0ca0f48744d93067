// Exact checks of exchanges shared by the transport tests: each byte sent
// from rank src to rank dst is byte(src, dst, k), so a misplaced byte is
// named by its source.
#pragma once

#include <cstdint>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "rank_threads.h"
#include "transports/transport.h"

namespace hvd::transports::testing {

// Bytes from rank src to rank dst.
using Bytes = std::function<int64_t(int src, int dst)>;

inline uint8_t byte(int src, int dst, int64_t k) { return static_cast<uint8_t>(src * 16 + dst + k / 3); }

// An alltoallv of bytes(src, dst) from each rank to each, checked exactly.
inline void check_alltoallv(int rank, Transport& t, Bytes bytes, Problems& p) {
  int size = t.size();
  std::vector<int64_t> send(static_cast<size_t>(size));
  std::vector<int64_t> recv(static_cast<size_t>(size));
  std::vector<uint8_t> in;
  for (int dst = 0; dst < size; ++dst) {
    send[static_cast<size_t>(dst)] = bytes(rank, dst);
    recv[static_cast<size_t>(dst)] = bytes(dst, rank);
    for (int64_t k = 0; k < bytes(rank, dst); ++k) in.push_back(byte(rank, dst, k));
  }
  std::vector<uint8_t> out(static_cast<size_t>(std::accumulate(recv.begin(), recv.end(), int64_t{0})), 0xEE);
  Status s = t.alltoallv({in.data(), in.size()}, send, {out.data(), out.size()}, recv);
  if (!s.is_ok()) {
    p.push_back("alltoallv: " + s.to_string());
    return;
  }
  size_t offset = 0;
  for (int src = 0; src < size; ++src) {
    for (int64_t k = 0; k < bytes(src, rank); ++k) {
      if (out[offset + static_cast<size_t>(k)] != byte(src, rank, k)) {
        p.push_back("alltoallv: byte " + std::to_string(k) + " from rank " + std::to_string(src) +
                    " is " + std::to_string(out[offset + static_cast<size_t>(k)]));
        return;
      }
    }
    offset += static_cast<size_t>(bytes(src, rank));
  }
}

}  // namespace hvd::transports::testing
