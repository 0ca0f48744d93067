// Bandwidth of the nccl plugin's device work (plugin ABI version 4) on a real
// GPU, beside a device memcpy of the same bytes measured in the same run:
//
//   build/bin/gpu_device_work [--tensors 161] [--mib 98] [--iters 20]
//
// pack:   device_copy_on_device of N tensors (ResNet-50-like sizes adding up
//         to the total) into one fusion buffer, one call, as the engine packs
//         (no per-entry classification inside the timed region); pack
//         (classified): device_copy, which classifies each entry first;
// memcpy: one cudaMemcpyAsync device-to-device of the total (the ceiling);
// scale:  device_scale of the fused float32 buffer by 0.5 (read + write).
// Prints GB/s (bytes moved once per direction) and pack/memcpy and
// scale/memcpy ratios. Exits 77 saying why where no CUDA device is usable.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "transports/plugin/known_plugins.h"
#include "transports/plugin/plugin_loader.h"

namespace {

using hvd::transports::plugin::LoadedPlugin;

double seconds_of(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  return ms / 1e3;
}

template <typename Body>
double median_seconds(int iters, cudaStream_t stream, Body body) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  body();  // warm-up
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    cudaEventRecord(a, stream);
    body();
    cudaEventRecord(b, stream);
    cudaEventSynchronize(b);
    t.push_back(seconds_of(a, b));
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int tensors = 161;
  size_t mib = 98;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--tensors") tensors = std::atoi(argv[i + 1]);
    else if (flag == "--mib") mib = std::strtoul(argv[i + 1], nullptr, 10);
    else if (flag == "--iters") iters = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "gpu_device_work: unknown flag '%s'\n", argv[i]);
      return 2;
    }
  }
  std::shared_ptr<LoadedPlugin> plugin;
  std::string why = "libhvd_nccl.so not found";
  for (const auto& dir : hvd::transports::plugin::plugin_directories()) {
    auto loaded = LoadedPlugin::load((dir / "libhvd_nccl.so").string());
    if (loaded.is_ok()) {
      plugin = loaded.value();
      break;
    }
    why = loaded.status().message();
  }
  if (plugin == nullptr) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  if (auto here = plugin->can_run(); !here.available) {
    std::printf("SKIP: the nccl plugin cannot run here: %s\n", here.reason.c_str());
    return 77;
  }
  const hvd_transport_plugin_t& api = plugin->api();
  hvd_plugin_status status{};
  void* context = nullptr;
  if (api.device_open(0, 60000, &context, &status) != HVD_OK) {
    std::fprintf(stderr, "device_open: %s\n", status.message);
    return 1;
  }
  const size_t total = mib << 20;
  void* src = nullptr;
  void* fused = nullptr;
  api.device_alloc(context, total, 0, &src, &status);
  api.device_alloc(context, total, 0, &fused, &status);
  cudaMemset(src, 1, total);
  // Sizes like ResNet-50's gradients: a few large, many small (geometric).
  std::vector<size_t> sizes(static_cast<size_t>(tensors));
  double weight_sum = 0;
  for (int i = 0; i < tensors; ++i) weight_sum += 1.0 / (1 + i % 40);
  size_t used = 0;
  for (int i = 0; i < tensors; ++i) {
    sizes[static_cast<size_t>(i)] =
        static_cast<size_t>(total / weight_sum / (1 + i % 40)) / 4 * 4;
    used += sizes[static_cast<size_t>(i)];
  }
  std::vector<hvd_plugin_copy> copies;
  size_t offset = 0;
  for (size_t s : sizes) {
    copies.push_back({static_cast<char*>(fused) + offset, static_cast<char*>(src) + offset, s});
    offset += s;
  }
  cudaStream_t stream = nullptr;
  const double pack = median_seconds(iters, stream, [&] {
    api.device_copy_on_device(context, copies.data(), copies.size(), stream, &status);
  });
  const double classified = median_seconds(iters, stream, [&] {
    api.device_copy(context, copies.data(), copies.size(), stream, &status);
  });
  const double memcpy_s = median_seconds(iters, stream, [&] {
    cudaMemcpyAsync(fused, src, used, cudaMemcpyDeviceToDevice, stream);
  });
  const double scale = median_seconds(iters, stream, [&] {
    api.device_scale(context, fused, used / 4, HVD_FLOAT32, 1, 0.5, stream, &status);
  });
  const auto gbs = [&](double s) { return static_cast<double>(used) / s / 1e9; };
  std::printf("gpu_device_work: %d tensors, %.1f MiB, median of %d\n", tensors,
              static_cast<double>(used) / (1 << 20), iters);
  std::printf("  pack (copy_on_device)  %8.1f GB/s  = %.2fx memcpy\n", gbs(pack), memcpy_s / pack);
  std::printf("  pack (device_copy)     %8.1f GB/s  = %.2fx memcpy (classifies each entry)\n",
              gbs(classified), memcpy_s / classified);
  std::printf("  memcpy (reference)     %8.1f GB/s\n", gbs(memcpy_s));
  std::printf("  scale (device_scale)   %8.1f GB/s  = %.2fx memcpy\n", gbs(scale),
              memcpy_s / scale);
  api.device_free(context, src, 0);
  api.device_free(context, fused, 0);
  api.device_close(context);
  return 0;
}
