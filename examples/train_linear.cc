// Data-parallel training of a linear regression with minibatch SGD: each
// rank holds a shard of the data, gradients are averaged with an allreduce
// every step, and the initial weights come from rank 0 by broadcast. At the
// end every rank must hold the very same weights and the loss must have
// dropped by more than 100x.
//
//   hvdrun -np 4 build/bin/train_linear
#include <hvd/hvd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <vector>

namespace {

constexpr int kFeatures = 8;
constexpr int kSamples = 4096;
constexpr int kBatchPerRank = 32;
constexpr int kEpochs = 10;
// Scaled by the number of ranks, as Horovod recommends (the global batch
// grows with it), and capped to stay stable.
constexpr float kBaseLearningRate = 0.01f;
constexpr float kMaxLearningRate = 0.2f;
constexpr int kParams = kFeatures + 1;  // weights, then the bias

struct Shard {
  std::vector<float> x;  // row-major, kFeatures per sample
  std::vector<float> y;
  size_t samples() const { return y.size(); }
};

// The same synthetic data set on every rank (fixed seed); rank r keeps the
// samples i with i % size == r.
Shard make_shard(int rank, int size) {
  std::mt19937 gen(2024);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> truth(kParams);
  for (auto& w : truth) w = normal(gen);
  Shard shard;
  for (int i = 0; i < kSamples; ++i) {
    float target = truth[kFeatures];
    std::vector<float> row(kFeatures);
    for (int f = 0; f < kFeatures; ++f) {
      row[static_cast<size_t>(f)] = normal(gen);
      target += truth[static_cast<size_t>(f)] * row[static_cast<size_t>(f)];
    }
    target += 0.01f * normal(gen);
    if (i % size != rank) continue;
    shard.x.insert(shard.x.end(), row.begin(), row.end());
    shard.y.push_back(target);
  }
  return shard;
}

float predict(const std::vector<float>& params, const float* row) {
  float out = params[kFeatures];
  for (int f = 0; f < kFeatures; ++f) out += params[static_cast<size_t>(f)] * row[f];
  return out;
}

// Mean squared error over the whole data set (all shards).
double global_loss(const Shard& shard, const std::vector<float>& params) {
  std::vector<double> acc{0.0, static_cast<double>(shard.samples())};
  for (size_t i = 0; i < shard.samples(); ++i) {
    double err = predict(params, &shard.x[i * kFeatures]) - shard.y[i];
    acc[0] += err * err;
  }
  hvd::allreduce<double>(acc, hvd::ReduceOp::kSum);
  return acc[0] / acc[1];
}

// Gradient of the batch's mean squared error, as kParams floats.
std::vector<float> gradient(const Shard& shard, const std::vector<float>& params, size_t first,
                            size_t count) {
  std::vector<float> grad(kParams, 0.0f);
  for (size_t i = first; i < first + count; ++i) {
    const float* row = &shard.x[i * kFeatures];
    float err = predict(params, row) - shard.y[i];
    for (int f = 0; f < kFeatures; ++f) grad[static_cast<size_t>(f)] += 2.0f * err * row[f];
    grad[kFeatures] += 2.0f * err;
  }
  for (auto& g : grad) g /= static_cast<float>(count);
  return grad;
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int rank = -1;
  try {
    hvd::init();
    rank = hvd::rank();
    const int size = hvd::size();
    Shard shard = make_shard(rank, size);

    // Every rank starts from different weights; rank 0's win.
    std::mt19937 init_gen(static_cast<unsigned>(100 + rank));
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> params(kParams);
    for (auto& p : params) p = uniform(init_gen);
    hvd::broadcast<float>(params, 0);

    const float learning_rate = std::min(kBaseLearningRate * static_cast<float>(size), kMaxLearningRate);
    const double initial = global_loss(shard, params);
    if (rank == 0) std::printf("epoch 0 loss %.6g\n", initial);
    // The same number of steps on every rank, whatever its shard size.
    const size_t steps = static_cast<size_t>(kSamples / size / kBatchPerRank);
    double loss = initial;
    for (int epoch = 1; epoch <= kEpochs; ++epoch) {
      for (size_t step = 0; step < steps; ++step) {
        std::vector<float> grad = gradient(shard, params, step * kBatchPerRank, kBatchPerRank);
        hvd::allreduce<float>(grad, hvd::ReduceOp::kAverage);
        for (int p = 0; p < kParams; ++p) {
          params[static_cast<size_t>(p)] -= learning_rate * grad[static_cast<size_t>(p)];
        }
      }
      loss = global_loss(shard, params);
      if (rank == 0) std::printf("epoch %d loss %.6g\n", epoch, loss);
    }

    // Identical weights everywhere: max and min over ranks agree exactly.
    std::vector<float> high = params;
    std::vector<float> low = params;
    hvd::allreduce<float>(high, hvd::ReduceOp::kMax);
    hvd::allreduce<float>(low, hvd::ReduceOp::kMin);
    bool identical = high == low && high == params;
    bool learned = std::isfinite(loss) && loss * 100.0 < initial;
    if (rank == 0 || !identical) {
      std::printf("[train_linear] rank %d: loss %.6g -> %.6g (%.0fx lower), weights %s on %d ranks %s\n",
                  rank, initial, loss, initial / loss, identical ? "identical" : "DIFFERENT", size,
                  identical && learned ? "OK" : "FAILED");
    }
    hvd::shutdown();
    return identical && learned ? 0 : 1;
  } catch (const hvd::Error& e) {
    std::fprintf(stderr, "[train_linear] rank %d: %s\n", rank, e.what());
    return 1;
  }
}
