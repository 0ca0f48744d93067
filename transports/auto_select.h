// The CPU transport "auto" (the default of HVD_CPU_TRANSPORT): chosen per
// world from where its ranks sit (layout.h), the same on every rank. The
// candidates and their order come from the transport table
// (transports/table/transport_table.h): the first one that fits the world's
// layout is made. With the table's rows:
//  - every rank on one host: shm (ranks on one host never touch TCP);
//  - several hosts with the same number of ranks each, more than one:
//    hierarchical (shm inside each host, gloo across);
//  - otherwise (one rank per host, uneven hosts): gloo.
// The choice is logged at debug level; a transport that then fails to
// connect fails the world (no fallback hides it).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "transports/layout.h"
#include "transports/registry.h"

namespace hvd::transports {

inline constexpr char kAutoTransport[] = "auto";

// Whether a transport serves a world of a layout. `why`: the reason when it
// does not ("every rank of the set is on one host"), what it found when it
// does ("2 hosts of 2 ranks"); empty when it serves any layout.
struct AutoFit {
  bool fits = false;
  std::string why;
};

// One transport "auto" may pick: whether it fits a layout (null: any), and
// how it is made for a world whose layout is known (make_for_layout, or
// when that is null `make`, which learns what it needs itself).
struct AutoCandidate {
  std::string_view name;
  AutoFit (*fits)(const Layout& layout) = nullptr;
  Result<std::unique_ptr<Transport>> (*make_for_layout)(const TransportContext& context,
                                                        const Layout& layout) = nullptr;
  Result<std::unique_ptr<Transport>> (*make)(const TransportContext& context) = nullptr;
};

// Learns the world's layout through the store (exchange_layout), then makes
// the first candidate that fits. Its debug line gives the candidate's `why`,
// or when that is empty the last refusal's ("gloo (rank 0 of 4: each of its
// 4 hosts has one rank: ...)"). kFailedPrecondition when none fits.
Result<std::unique_ptr<Transport>> create_auto(const TransportContext& context,
                                               std::span<const AutoCandidate> candidates);

}  // namespace hvd::transports
