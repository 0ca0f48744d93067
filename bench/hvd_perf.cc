// hvd-perf: an nccl-tests-style sweep of hvd collectives. Run it under hvdrun:
//   hvdrun -np 2 build/bin/hvd_perf --ops allreduce,allgather --min-bytes 4K --max-bytes 256M
// For each op and size, rank 0 prints the median time of one op (the slowest
// rank's), the algorithm bandwidth (size / time), the bus bandwidth (algbw
// times the op's factor, as nccl-tests defines it) and the number of wrong
// elements of a checked run. "size" is the allreduce/broadcast buffer, the
// allgather output, the reducescatter input and the alltoall buffer.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "perf_common.h"

namespace {

using hvd::bench::check;

struct Options {
  std::vector<std::string> ops = {"allreduce", "allgather", "broadcast", "alltoall",
                                  "reducescatter"};
  long long min_bytes = 4 << 10;
  long long max_bytes = 256LL << 20;
  int factor = 4;
  int iters = 10;
  int warmup = 2;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "hvd_perf: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--ops") {
      o.ops.clear();
      std::stringstream ss(value());
      for (std::string op; std::getline(ss, op, ',');) o.ops.push_back(op);
    } else if (a == "--min-bytes") o.min_bytes = hvd::bench::parse_size(value());
    else if (a == "--max-bytes") o.max_bytes = hvd::bench::parse_size(value());
    else if (a == "--factor") o.factor = std::atoi(value().c_str());
    else if (a == "--iters") o.iters = std::atoi(value().c_str());
    else if (a == "--warmup") o.warmup = std::atoi(value().c_str());
    else {
      std::fprintf(stderr,
                   "usage: hvd_perf [--ops a,b] [--min-bytes 4K] [--max-bytes 256M] [--factor 4] "
                   "[--iters N] [--warmup N]\nhvd_perf: unknown argument '%s'\n",
                   a.c_str());
      std::exit(2);
    }
  }
  if (o.factor < 2 || o.iters < 1 || o.warmup < 0 || o.min_bytes > o.max_bytes) {
    std::fprintf(stderr, "hvd_perf: bad sweep parameters\n");
    std::exit(2);
  }
  return o;
}

// Buffers and the descriptor of one op over `count` float32 elements;
// prepare() fills them (outside the timed region), run() enqueues and waits.
struct OpRunner {
  int rank = 0;
  int size = 1;
  std::string op;
  int64_t count = 0;
  int64_t per_rank = 0;
  std::vector<float> in, out;
  std::vector<int64_t> shape;
  hvd_op d = hvd_op_defaults(HVD_OPTYPE_ALLREDUCE);

  void prepare(const std::string& name, int64_t n, int root) {
    op = name;
    count = n;
    per_rank = n / size;
    d = hvd_op_defaults(HVD_OPTYPE_ALLREDUCE);  // the op type is set below
    d.name = op.c_str();  // named, as training tensors are: the response cache applies
    d.dtype = HVD_FLOAT32;
    d.reduce_op = HVD_OP_SUM;
    d.ndim = 1;
    d.root_rank = root;
    int64_t elements = op == "allgather" ? per_rank : count;
    in.assign(static_cast<size_t>(elements), float(rank + 1));
    shape = {elements};
    d.shape = shape.data();
    d.input = in.data();
    if (op == "allreduce") d.op_type = HVD_OPTYPE_ALLREDUCE;
    else if (op == "broadcast") d.op_type = HVD_OPTYPE_BROADCAST;
    else if (op == "allgather") d.op_type = HVD_OPTYPE_ALLGATHER;
    else if (op == "alltoall") d.op_type = HVD_OPTYPE_ALLTOALL;
    else if (op == "reducescatter") d.op_type = HVD_OPTYPE_REDUCESCATTER;
    else {
      std::fprintf(stderr, "hvd_perf: unknown op '%s'\n", op.c_str());
      std::exit(2);
    }
    if (op == "allreduce" || op == "broadcast") d.output = in.data();
  }

  // Runs the prepared op once; with `verify`, returns the wrong elements of
  // its result (the buffers must be freshly prepared).
  int64_t run(bool verify) {
    int64_t handle = 0;
    check(hvd_enqueue(&d, &handle), op.c_str());
    check(hvd_wait(handle, 0), op.c_str());
    int64_t wrong = verify ? count_wrong(handle) : 0;
    check(hvd_release(handle), "release");
    return wrong;
  }

  int64_t count_wrong(int64_t handle) {
    const float sum = float(size) * float(size + 1) / 2;
    int64_t wrong = 0;
    if (op == "allreduce" || op == "broadcast") {
      const float expected = op == "allreduce" ? sum : float(d.root_rank + 1);
      for (float v : in) wrong += v != expected;
      return wrong;
    }
    int64_t out_shape[4];
    int32_t ndim = 0;
    check(hvd_handle_output_shape(handle, out_shape, 4, &ndim), "output shape");
    int64_t n = ndim > 0 ? out_shape[0] : 0;
    out.assign(static_cast<size_t>(n), 0.f);
    check(hvd_handle_copy_output(handle, out.data(), n * 4), "copy output");
    for (int64_t i = 0; i < n; ++i) {
      float expected = op == "reducescatter" ? sum : float(i / per_rank + 1);
      wrong += out[static_cast<size_t>(i)] != expected;
    }
    return wrong;
  }
};

double bus_factor(const std::string& op, int n) {
  if (op == "allreduce") return 2.0 * (n - 1) / n;
  if (op == "broadcast") return 1.0;
  return double(n - 1) / n;  // allgather, alltoall, reducescatter
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  check(hvd_init(), "init");
  OpRunner runner;
  runner.rank = hvd_rank();
  runner.size = hvd_size();
  if (runner.rank == 0) {
    std::printf("# hvd-perf: %d ranks, float32, median of %d iterations after %d warm-up\n",
                runner.size, o.iters, o.warmup);
    std::printf("%-14s %12s %12s %12s %12s %12s %6s\n", "op", "size(B)", "count", "time(us)",
                "algbw(GB/s)", "busbw(GB/s)", "wrong");
  }
  for (const auto& op : o.ops) {
    for (long long bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
      int64_t count = bytes / 4;
      count -= count % runner.size;  // divisible among ranks
      if (count < runner.size) count = runner.size;
      runner.prepare(op, count, 0);
      for (int i = 0; i < o.warmup; ++i) runner.run(false);
      std::vector<double> times;
      for (int i = 0; i < o.iters; ++i) {
        double t0 = hvd::bench::now_us();
        runner.run(false);
        times.push_back(hvd::bench::now_us() - t0);
      }
      double t = hvd::bench::max_over_ranks(hvd::bench::median(times));
      runner.prepare(op, count, runner.size - 1);
      double wrong = double(runner.run(true));
      check(hvd_allreduce(&wrong, 1, HVD_FLOAT64, HVD_OP_SUM), "allreduce(wrong)");
      double algbw = double(count) * 4 / t / 1e3;  // bytes/us = MB/s; /1e3 = GB/s
      if (runner.rank == 0) {
        std::printf("%-14s %12lld %12lld %12.1f %12.3f %12.3f %6.0f\n", op.c_str(),
                    static_cast<long long>(count * 4), static_cast<long long>(count), t, algbw,
                    algbw * bus_factor(op, runner.size), wrong);
        std::fflush(stdout);
      }
    }
  }
  check(hvd_shutdown(), "shutdown");
  return 0;
}
