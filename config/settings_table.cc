#include "config/settings_table.h"

#include <array>

namespace hvd::config {

namespace {

// Keep config/hvd.yaml in step: a unit test checks that it lists every key
// below with its default.
constexpr std::array kSettings = {
    SettingSpec{"log_level", "HVD_LOG_LEVEL", "HOROVOD_LOG_LEVEL", SettingType::kLogLevel,
                "warning", "Log level of hvdrun and the workers' runtime"},
    SettingSpec{"start_timeout", "HVD_START_TIMEOUT", "HOROVOD_START_TIMEOUT",
                SettingType::kPositiveInt, "30",
                "Seconds the rendezvous waits, from the first rank's init, for every rank"},
    SettingSpec{"transport_timeout", "HVD_TRANSPORT_TIMEOUT_SECONDS",
                "HOROVOD_GLOO_TIMEOUT_SECONDS", SettingType::kPositiveInt, "30",
                "Seconds a transport connect or collective may block before it fails"},
    // The transports' names come from the transport table
    // (transports/table/transport_table.h): hvdrun's --help appends the
    // choices to these three (setting_choices), and a unit test checks that
    // their defaults are the table's.
    SettingSpec{"cpu_transport", "HVD_CPU_TRANSPORT", "", SettingType::kString, "auto",
                "Transport for CPU tensors"},
    SettingSpec{"gpu_transport", "HVD_GPU_TRANSPORT", "", SettingType::kString, "auto",
                "Transport for CUDA tensors (ops with a device)"},
    SettingSpec{"gpu_staging_plugin", "HVD_GPU_STAGING_PLUGIN", "", SettingType::kString, "nccl",
                "CUDA transport plugin whose device functions stage CUDA tensors when "
                "gpu_transport stages them through host memory (copies, pinned memory; it "
                "needs no communicator)"},
    SettingSpec{"gpu_staging_chunk", "HVD_GPU_STAGING_CHUNK", "", SettingType::kByteSize,
                "4194304",
                "Bytes of a staged allreduce copied to host memory, reduced and copied back "
                "per step; the next chunk's copy to the host overlaps the CPU collective"},
    SettingSpec{"device_batches_in_flight", "HVD_DEVICE_BATCHES_IN_FLIGHT", "",
                SettingType::kPositiveInt, "4",
                "Device (CUDA) batches launched on the device and not yet complete, at most, "
                "per process set; the engine negotiates and launches the next batches while "
                "they run"},
    SettingSpec{"hierarchical_allreduce", "HVD_HIERARCHICAL_ALLREDUCE",
                "HOROVOD_HIERARCHICAL_ALLREDUCE", SettingType::kBool, "false",
                "Device (CUDA) allreduce in three steps when a process set spans hosts of equal "
                "rank counts: reduce-scatter within each host on the GPU transport, allreduce "
                "across hosts on gloo through pinned host memory, allgather within each host; "
                "else the flat GPU transport (docs/gpu.md)"},
    SettingSpec{"transport_plugins", "HVD_TRANSPORT_PLUGINS", "", SettingType::kOptionalText, "",
                "Extra transport plugins, comma-separated NAME:DEVICE:LIBRARY entries (DEVICE "
                "cpu or cuda; LIBRARY a path or a file name looked for beside libhvd.so); "
                "loaded when first used"},
    SettingSpec{"cycle_time_ms", "HVD_CYCLE_TIME_MS", "HOROVOD_CYCLE_TIME", SettingType::kNumber,
                "1", "Longest batching window of the engine, in milliseconds: ops enqueued "
                "together are negotiated together (no latency floor: a lone op starts at once)"},
    SettingSpec{"fusion_threshold", "HVD_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD",
                SettingType::kByteSize, "67108864",
                "Bytes of tensors fused into one transport call (0 disables fusion)"},
    SettingSpec{"autotune", "HVD_AUTOTUNE", "HOROVOD_AUTOTUNE", SettingType::kBool, "false",
                "Tune fusion_threshold, cycle_time_ms and the shm transport's chunk size online "
                "from measured throughput, then keep the best (docs/autotune.md)"},
    SettingSpec{"autotune_log_file", "HVD_AUTOTUNE_LOG", "HOROVOD_AUTOTUNE_LOG",
                SettingType::kOptionalText, "",
                "CSV file where rank 0 logs every autotune trial and the settled parameters "
                "(empty: none)"},
    SettingSpec{"autotune_warmup_samples", "HVD_AUTOTUNE_WARMUP_SAMPLES",
                "HOROVOD_AUTOTUNE_WARMUP_SAMPLES", SettingType::kCount, "3",
                "Autotune: samples measured and discarded before the first trial"},
    SettingSpec{"autotune_steps_per_sample", "HVD_AUTOTUNE_STEPS_PER_SAMPLE",
                "HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", SettingType::kPositiveInt, "10",
                "Autotune: engine cycles that moved data per sample (idle cycles do not count)"},
    SettingSpec{"autotune_max_samples", "HVD_AUTOTUNE_MAX_SAMPLES",
                "HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", SettingType::kPositiveInt, "60",
                "Autotune: most samples scored (warm-up excluded) before it settles"},
    SettingSpec{"cache_capacity", "HVD_CACHE_CAPACITY", "HOROVOD_CACHE_CAPACITY",
                SettingType::kCount, "1024",
                "Negotiations remembered by the response cache (0 disables it)"},
    SettingSpec{"timeline_filename", "HVD_TIMELINE", "HOROVOD_TIMELINE", SettingType::kOptionalText,
                "", "Chrome-trace timeline written by rank 0 (empty: none)"},
    SettingSpec{"stall_check_warning_time_seconds", "HVD_STALL_CHECK_TIME_SECONDS",
                "HOROVOD_STALL_CHECK_TIME_SECONDS", SettingType::kCount, "60",
                "Seconds before a tensor that some ranks have not submitted is reported (0: never)"},
    SettingSpec{"stall_check_shutdown_time_seconds", "HVD_STALL_SHUTDOWN_TIME_SECONDS",
                "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", SettingType::kCount, "0",
                "Seconds after which stalled tensors fail with an error (0: never)"},
    SettingSpec{"stall_check_no_progress_seconds", "HVD_STALL_CHECK_NO_PROGRESS_SECONDS", "",
                SettingType::kCount, "10",
                "Seconds every rank of a process set may be blocked waiting with no op able to "
                "run before its pending ops fail on every rank (0: never)"},
    SettingSpec{"heartbeat_timeout_seconds", "HVD_HEARTBEAT_TIMEOUT_SECONDS", "",
                SettingType::kCount, "5",
                "Seconds without a heartbeat from a joined worker (its process stopped, its host "
                "hung) before hvdrun declares it dead and ends the job naming it (0: never)"},
    SettingSpec{"heartbeat_hung_multiple", "HVD_HEARTBEAT_HUNG_MULTIPLE", "",
                SettingType::kPositiveInt, "10",
                "A worker whose heartbeats are late while its agent sees its process running is "
                "declared dead only after this many heartbeat timeouts (the hung limit)"},
    SettingSpec{"elastic_timeout", "HVD_ELASTIC_TIMEOUT", "HOROVOD_ELASTIC_TIMEOUT",
                SettingType::kPositiveInt, "600",
                "Elastic jobs: seconds the job may have fewer workers than --min-np before it "
                "fails; also how long a worker waits for a rendezvous round"},
    SettingSpec{"spares", "HVD_SPARES", "", SettingType::kCount, "0",
                "Elastic jobs: hot spares, workers that wait in hvd.init() to replace a failed "
                "one at once (spread over the hosts; not counted toward --max-np)"},
    SettingSpec{"on_state_loss", "HVD_ON_STATE_LOSS", "", SettingType::kString, "restart",
                "Elastic jobs: when every worker holding the last commit of the state died, "
                "restart (say so in a warning and go on from the last commit a survivor "
                "holds, or the start) or fail (end the job, exit code 1)"},
    SettingSpec{"discovery_interval", "HVD_DISCOVERY_INTERVAL", "", SettingType::kNumber, "1",
                "Elastic jobs: seconds between two runs of the host discovery script"},
    SettingSpec{"discovery_timeout", "HVD_DISCOVERY_TIMEOUT", "", SettingType::kPositiveInt,
                "10", "Elastic jobs: seconds one run of the host discovery script may take"},
    SettingSpec{"terminate_grace", "HVD_TERMINATE_GRACE_SECONDS", "", SettingType::kPositiveInt,
                "5", "Seconds between SIGTERM and SIGKILL when workers are terminated"},
    SettingSpec{"metrics_port", "HVD_METRICS_PORT", "", SettingType::kCount, "0",
                "TCP port of hvdrun's Prometheus /metrics and live job page (0: off); workers "
                "then send their op counters on their heartbeat once a second (docs/metrics.md)"},
    SettingSpec{"metrics_address", "HVD_METRICS_ADDRESS", "", SettingType::kString, "127.0.0.1",
                "Address the metrics port binds (0.0.0.0: every interface)"},
};

}  // namespace

std::span<const SettingSpec> all_settings() { return kSettings; }

const SettingSpec* find_setting(std::string_view key) {
  for (const auto& s : kSettings) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

}  // namespace hvd::config
