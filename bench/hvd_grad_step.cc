// One data-parallel gradient step, as DistributedOptimizer issues it: every
// gradient tensor of a model is enqueued as an asynchronous allreduce
// (Average), in backward order, then all are waited for. The tensor shapes
// come from a file (one tensor per line, dimensions separated by spaces;
// bench/resnet50_step.py writes torchvision's resnet50). Rank 0 prints the
// median step time of the slowest rank:
//   hvdrun -np 2 build/bin/hvd_grad_step --shapes resnet50.shapes --steps 20
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "perf_common.h"

namespace {

using hvd::bench::check;

std::vector<std::vector<int64_t>> read_shapes(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "hvd_grad_step: cannot read '%s'\n", path.c_str());
    std::exit(2);
  }
  std::vector<std::vector<int64_t>> shapes;
  for (std::string line; std::getline(in, line);) {
    std::istringstream ss(line);
    std::vector<int64_t> dims;
    for (int64_t d; ss >> d;) dims.push_back(d);
    if (!dims.empty()) shapes.push_back(dims);
  }
  return shapes;
}

}  // namespace

int main(int argc, char** argv) {
  std::string shapes_path;
  int steps = 20, warmup = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--shapes") shapes_path = argv[i + 1];
    else if (a == "--steps") steps = std::atoi(argv[i + 1]);
    else if (a == "--warmup") warmup = std::atoi(argv[i + 1]);
  }
  if (shapes_path.empty() || steps < 1) {
    std::fprintf(stderr, "usage: hvd_grad_step --shapes FILE [--steps N] [--warmup N]\n");
    return 2;
  }
  auto shapes = read_shapes(shapes_path);
  check(hvd_init(), "init");
  std::vector<std::vector<float>> grads;
  std::vector<std::string> names;
  int64_t total = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : shapes[i]) n *= d;
    grads.emplace_back(static_cast<size_t>(n), 1.0f);
    names.push_back("grad." + std::to_string(i));
    total += n * 4;
  }
  std::vector<int64_t> handles(shapes.size());
  auto step = [&] {
    for (size_t k = shapes.size(); k-- > 0;) {  // backward order: last layer first
      hvd_op d = hvd_op_defaults(HVD_OPTYPE_ALLREDUCE);
      d.name = names[k].c_str();
      d.input = grads[k].data();
      d.output = grads[k].data();
      d.shape = shapes[k].data();
      d.ndim = static_cast<int32_t>(shapes[k].size());
      d.dtype = HVD_FLOAT32;
      d.reduce_op = HVD_OP_AVERAGE;
      check(hvd_enqueue(&d, &handles[k]), "enqueue");
    }
    for (int64_t h : handles) {
      check(hvd_wait(h, 0), "wait");
      check(hvd_release(h), "release");
    }
  };
  for (int i = 0; i < warmup; ++i) step();
  std::vector<double> times;
  for (int i = 0; i < steps; ++i) {
    double t0 = hvd::bench::now_us();
    step();
    times.push_back(hvd::bench::now_us() - t0);
  }
  double t = hvd::bench::max_over_ranks(hvd::bench::median(times));
  if (hvd_rank() == 0) {
    std::printf("hvd_grad_step: %zu tensors, %.1f MB, %d ranks: median step %.2f ms\n",
                shapes.size(), double(total) / 1e6, hvd_size(), t / 1e3);
  }
  check(hvd_shutdown(), "shutdown");
  return 0;
}
