// The smallest hvd program: every rank contributes rank + 1, and all of them
// get the sum back; then a broadcast and an allgather.
//
//   hvdrun -np 4 build/bin/allreduce_demo
#include <hvd/hvd.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

std::string join(const std::vector<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : " ") + std::to_string(v);
  return out;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach hvdrun as they are printed
  bool ok = true;
  int rank = -1;
  try {
    hvd::init();
    rank = hvd::rank();
    const int size = hvd::size();
    std::printf("rank %d/%d local %d/%d cross %d/%d\n", rank, size, hvd::local_rank(),
                hvd::local_size(), hvd::cross_rank(), hvd::cross_size());

    std::vector<double> values(8, rank + 1.0);
    hvd::allreduce<double>(values, hvd::ReduceOp::kSum);
    const double expected = size * (size + 1) / 2.0;
    bool sum_ok = true;
    for (double v : values) sum_ok = sum_ok && v == expected;
    std::printf("[allreduce_demo] rank %d: sum = %g (expected %g) %s\n", rank, values[0], expected,
                sum_ok ? "OK" : "MISMATCH");
    ok = ok && sum_ok;

    const int root = size - 1;
    std::vector<int> message(4, 0);
    if (rank == root) message = {42, 43, 44, 45};
    hvd::broadcast<int>(message, root);
    bool bcast_ok = message == std::vector<int>{42, 43, 44, 45};
    std::printf("[allreduce_demo] rank %d: broadcast from rank %d = %s %s\n", rank, root,
                join(message).c_str(), bcast_ok ? "OK" : "MISMATCH");
    ok = ok && bcast_ok;

    // Rank r contributes r + 1 copies of r: the gather is 0 1 1 2 2 2 ...
    std::vector<int> mine(static_cast<size_t>(rank + 1), rank);
    std::vector<int> gathered = hvd::allgather<int>(mine);
    std::vector<int> expected_gather;
    for (int r = 0; r < size; ++r) expected_gather.insert(expected_gather.end(), static_cast<size_t>(r + 1), r);
    bool gather_ok = gathered == expected_gather;
    // Up to 16 ranks the line shows the values; beyond, their count (the
    // gather of N ranks has N(N+1)/2 values: 2 MB of text per rank at 1024).
    const std::string shown = size <= 16 ? join(gathered)
                                         : std::to_string(gathered.size()) + " values";
    std::printf("[allreduce_demo] rank %d: allgather = %s %s\n", rank, shown.c_str(),
                gather_ok ? "OK" : "MISMATCH");
    ok = ok && gather_ok;

    hvd::barrier();
    hvd::shutdown();
  } catch (const hvd::Error& e) {
    std::fprintf(stderr, "[allreduce_demo] rank %d: %s\n", rank, e.what());
    return 1;
  }
  return ok ? 0 : 1;
}
