#include "runtime/runtime.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "common/scaled_timeout.h"
#include "daemon/rendezvous/round_keys.h"
#include "runtime/arguments.h"
#include "runtime/device_shrink.h"
#include "runtime/discovery/slurm_node_address.h"
#include "runtime/engine/agreement.h"
#include "runtime/op_request.h"
#include "runtime/rank_stats_report.h"
#include "transports/plugin/known_plugins.h"
#include "transports/table/transport_table.h"

namespace hvd::runtime {

namespace {

// A hot spare asks for its promotion in calls this long (the job may run
// for days; each call has a deadline, and a closed rendezvous ends it).
constexpr std::chrono::milliseconds kPromotionPoll{30'000};
// The longest wait between two attempts to reach the rendezvous service.
constexpr std::chrono::milliseconds kRendezvousReconnectBackoff{1'000};
// An elastic worker waits for its round this much longer than
// --elastic-timeout: hvdrun's verdict on a round that does not form (naming
// who is missing) comes first.
constexpr std::chrono::milliseconds kElasticJoinSlack{15'000};
// How long a failed GPU transport that can shrink waits, unaborted, for the
// membership watch to name the members that left (DeviceRoute): hvdrun
// hears of a dead worker from its agent and tells the survivors within
// about a second; past this the transport is aborted and the next round
// connects anew (slower, never wrong).
constexpr std::chrono::milliseconds kDeviceShrinkGrace{2'000};

std::chrono::milliseconds seconds_setting(const config::Settings& settings, const char* key) {
  return std::chrono::seconds(settings.get_int(key));
}

// The built-in transports and the transport_plugins setting's plugins.
Result<transports::TransportRegistry> make_registry(const config::Settings& settings) {
  auto plugins = transports::plugin::parse_plugin_list(settings.get("transport_plugins"));
  if (!plugins.is_ok()) return plugins.status();
  return transports::registry_with_plugins(plugins.value());
}

// Keeps every byte count and their sum far from int64 overflow.
constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 16;

// A one-dimensional op of `*count` elements whose result overwrites `data`.
hvd_op in_place_op(int32_t type, void* data, const int64_t* count, int32_t dtype) {
  hvd_op op = blank_op(type);
  op.input = data;
  op.output = data;
  op.shape = count;
  op.ndim = 1;
  op.dtype = dtype;
  return op;
}

}  // namespace

Runtime::Runtime(WorldInfo world, config::Settings settings, int64_t first_handle,
                 transports::TransportRegistry registry, GpuTransportChoice gpu)
    : world_(std::move(world)),
      settings_(std::move(settings)),
      registry_(std::move(registry)),
      gpu_(std::move(gpu)),
      handles_(first_handle) {}

Runtime::~Runtime() {
  shutdown();
  spdlog::debug("left the world (round {})", round_);
}

Result<std::unique_ptr<Runtime>> Runtime::init(const EnvLookup& lookup, int64_t first_handle,
                                               int64_t generation) {
  auto world = read_world(lookup, query_slurm_node_addr);
  if (!world.is_ok()) return world.status();
  config::Settings settings;
  HVD_RETURN_IF_ERROR(settings.apply_environment(lookup));
  auto level = common::parse_log_level(settings.get("log_level"));
  if (!level.is_ok()) return level.status();
  std::string prefix = std::to_string(world->rank) + "@" + world->host;
  common::init_logging(prefix, level.value());

  auto registry = make_registry(settings);
  if (!registry.is_ok()) return registry.status();
  const char* faults_spec = lookup("HVD_TEST_FAULT");
  auto faults = FaultPoints::parse(faults_spec ? faults_spec : "");
  if (!faults.is_ok()) return faults.status();
  auto gpu = GpuTransportChoice::parse(settings.get("gpu_transport"), registry.value(),
                                       settings.get("gpu_staging_plugin"),
                                       settings.get_bool("hierarchical_allreduce"),
                                       static_cast<size_t>(settings.get_int("gpu_staging_chunk")));
  if (!gpu.is_ok()) return gpu.status();
  std::unique_ptr<Runtime> runtime(new Runtime(std::move(world).value(), std::move(settings),
                                               first_handle, std::move(registry).value(),
                                               std::move(gpu).value()));
  runtime->faults_ = std::move(faults).value();
  HVD_RETURN_IF_ERROR(runtime->start(generation));
  return runtime;
}

transports::TransportContext Runtime::context_for(const std::string& key_prefix, int rank,
                                                  int size) const {
  transports::TransportContext context;
  context.rank = rank;
  context.size = size;
  context.store = fault_store_ ? static_cast<common::Store*>(fault_store_.get()) : rendezvous_.get();
  context.key_prefix = key_prefix;
  context.bind_address = world_.bind_address;
  context.host = world_.host;
  context.timeout = seconds_setting(settings_, "transport_timeout");
  if (size == world_.size) {
    // The global set: the host layout is known (a process set's is not yet).
    context.local_rank = world_.local_rank;
    context.cross_rank = world_.cross_rank;
    context.cross_size = world_.cross_size;
  }
  return context;
}

Result<std::unique_ptr<transports::Transport>> Runtime::connect(
    const std::string& key_prefix, int rank, int size,
    std::shared_ptr<transports::ConnectAbort> abort) const {
  auto context = context_for(key_prefix, rank, size);
  context.abort = std::move(abort);
  return registry_.create(transports::DeviceKind::kCpu, settings_.get("cpu_transport"), context);
}

void Runtime::members_removed(const Status& why, const std::vector<int>& ranks) {
  {
    std::lock_guard lock(connecting_mu_);
    if (connecting_) {
      connecting_->fire(why);
      return;
    }
  }
  auto global = sets_.find(HVD_GLOBAL_PROCESS_SET);
  if (!ranks.empty() && global && global->engine) {
    auto context = context_for("", world_.rank, world_.size);
    global->engine->shrink_device(why, DeviceShrink::process().request(context, ranks, round_));
  }
  abort(why);
}

std::shared_ptr<engine::SetEngine> Runtime::make_engine(
    int32_t id, const std::vector<int>& ranks, int rank, const std::string& key_prefix,
    std::unique_ptr<transports::Transport> transport) {
  engine::SetEngineOptions o;
  o.process_set_id = id;
  o.rank = rank;
  o.global_ranks = ranks;
  o.cycle_time_ms = settings_.get_double("cycle_time_ms");
  o.fusion_threshold = settings_.get_int("fusion_threshold");
  o.cache_capacity = static_cast<size_t>(settings_.get_int("cache_capacity"));
  o.device_batches_in_flight = static_cast<size_t>(settings_.get_int("device_batches_in_flight"));
  o.device_timeout = seconds_setting(settings_, "transport_timeout");
  o.stall_warning = std::chrono::seconds(settings_.get_int("stall_check_warning_time_seconds"));
  o.stall_shutdown = std::chrono::seconds(settings_.get_int("stall_check_shutdown_time_seconds"));
  o.no_progress = std::chrono::seconds(settings_.get_int("stall_check_no_progress_seconds"));
  if (settings_.get_bool("autotune")) {
    engine::AutotuneOptions tune;
    tune.tuner.warmup_samples = static_cast<int>(settings_.get_int("autotune_warmup_samples"));
    tune.tuner.steps_per_sample = static_cast<int>(settings_.get_int("autotune_steps_per_sample"));
    tune.tuner.search.max_samples = static_cast<int>(settings_.get_int("autotune_max_samples"));
    tune.log_file = settings_.get("autotune_log_file");
    o.autotune = std::move(tune);
  }
  // A set whose transport fails breaks the world: the other sets' calls
  // must end now rather than at their transport timeout.
  o.on_transport_failure = [this, id](const Status& failure) {
    abort(failure.with_context(id == HVD_GLOBAL_PROCESS_SET
                                   ? "the global process set failed"
                                   : "process set " + std::to_string(id) + " failed"));
  };
  // The GPU transport, at the set's first device op (on the engine thread,
  // at the same response on every rank; the engine outlives no Runtime). In
  // an elastic job, the global set's may be the one the survivors of the
  // last round shrank to (runtime/device_shrink.h): every rank asks alike.
  const bool may_shrink = world_.elastic && id == HVD_GLOBAL_PROCESS_SET &&
                          settings_.get("gpu_transport") !=
                              transports::staged_gpu_transport() &&  // staged: never
                          !settings_.get_bool("hierarchical_allreduce");
  if (may_shrink) o.device_shrink_grace = kDeviceShrinkGrace;
  o.connect_device = [this, key_prefix, rank, size = static_cast<int>(ranks.size()),
                      may_shrink](int device) -> Result<transports::DeviceLink> {
    transports::TransportContext context = context_for(key_prefix + "gpu/", rank, size);
    context.device = device;
    if (may_shrink && round_ > 0) {
      auto kept = DeviceShrink::process().reuse(registry_, context);
      if (!kept.is_ok()) return kept.status().with_context("GPU transport of round " +
                                                           std::to_string(round_));
      if (kept->has_value()) return std::move(**kept);
    }
    return gpu_.connect(registry_, context);
  };
  return std::make_shared<engine::SetEngine>(std::move(o), std::move(transport), handles_,
                                             &timeline_);
}

Status Runtime::join() {
  const auto start_timeout = seconds_setting(settings_, "start_timeout");
  // hvdrun's first round waits as long (launcher/first_round.h): the ranks
  // of a host start one after another (common/scaled_timeout.h).
  std::chrono::milliseconds join_timeout = common::scaled_timeout(start_timeout, world_.local_size);
  if (world_.foreign()) {
    auto job = ForeignJob::start(world_);
    if (!job.is_ok()) return job.status();
    foreign_ = std::move(job).value();
    rendezvous_ = std::make_unique<RendezvousClient>(
        world_.rendezvous_addr, world_.job_token, seconds_setting(settings_, "transport_timeout"),
        ForeignJob::kReconnectBackoff);
    auto left = foreign_->reach(*rendezvous_, start_timeout);
    if (!left.is_ok()) return left.status();
    join_timeout = left.value();
  } else {
    // A connection the service closed (overloaded, a keepalive unanswered
    // by a starved worker) is tried again within a second, not after gRPC's
    // backoff of up to 2 minutes, in which no heartbeat could go.
    rendezvous_ = std::make_unique<RendezvousClient>(
        world_.rendezvous_addr, world_.job_token, seconds_setting(settings_, "transport_timeout"),
        kRendezvousReconnectBackoff);
  }
  if (world_.elastic) {
    // A round may wait for workers that are still to come (below --min-np)
    // as long as hvdrun lets the job wait for them; hvdrun ends a job whose
    // round does not form within --elastic-timeout, naming who is missing,
    // and this worker's own deadline comes a little later.
    join_timeout = std::max(join_timeout,
                            seconds_setting(settings_, "elastic_timeout") + kElasticJoinSlack);
  }
  if (!faults_.empty()) {
    fault_store_ = std::make_unique<FaultStore>(*rendezvous_, faults_, round_, slot_);
  }
  if (world_.spare >= 0) HVD_RETURN_IF_ERROR(await_promotion());
  // Elastic jobs: HVD_RANK is the slot; the round places the worker after
  // its rank in the last round it was in (its slot the first time, unless
  // it is a replacement: new).
  slot_ = world_.rank;
  launched_ = world_;
  return join_round(join_timeout);
}

Status Runtime::join_round(std::chrono::milliseconds timeout) {
  spdlog::debug("joining rank {} of {} at {}", world_.rank, world_.size, world_.rendezvous_addr);
  const int last = last_elastic_rank_.load();
  const int prev_rank = last >= 0 ? last : world_.replacement ? -1 : slot_;
  auto joined = rendezvous_->join(world_, getpid(), timeout, prev_rank);
  if (!joined.is_ok()) return joined.status();
  joined_ = true;
  if (world_.elastic) {
    last_elastic_rank_ = joined->rank;
  } else if (joined->rank != world_.rank || joined->size != world_.size) {
    return common::failed_precondition(
        "the rendezvous at " + world_.rendezvous_addr + " placed this worker as rank " +
        std::to_string(joined->rank) + " of " + std::to_string(joined->size) +
        " but its environment says rank " + std::to_string(world_.rank) + " of " +
        std::to_string(world_.size));
  }
  // The world is the round's (an elastic round's rank and size; on this
  // worker's host): its layout is computed over every rank that joined it
  // (the launcher's variables only said where this worker sits).
  round_ = joined->round;
  static_cast<common::Placement&>(world_) = *joined;
  faults_.reach("joined", round_, slot_);
  const auto liveness = seconds_setting(settings_, "heartbeat_timeout_seconds");
  if (liveness.count() > 0) {
    Heartbeat::StatsSource stats;  // hvdrun --metrics-port: op counters (docs/metrics.md)
    if (settings_.get_int("metrics_port") > 0) stats = [this] { return rank_stats(sets_.all()); };
    heartbeat_ = std::make_unique<Heartbeat>(*rendezvous_, slot_, round_,
                                             Heartbeat::interval_for(liveness, world_.size),
                                             std::move(stats), Heartbeat::patience_for(liveness));
    if (int pause = faults_.heartbeat_pause(round_, slot_); pause > 0) {
      heartbeat_->pause_once(std::chrono::seconds(pause));
    }
  }
  return Status::ok();
}

std::optional<std::string> Runtime::round_lost() const {
  // The peer that made the connect fail may be dead before hvdrun has told
  // the rendezvous (its exit is on its way; a hung one is known after the
  // heartbeat timeout): wait for the mark that long, not longer.
  const auto heartbeat = seconds_setting(settings_, "heartbeat_timeout_seconds");
  const auto until = std::chrono::steady_clock::now() +
                     (heartbeat.count() > 0 ? heartbeat : std::chrono::seconds(5)) +
                     std::chrono::seconds(2);
  for (;;) {
    auto lost = rendezvous_->get_if_present(daemon::round_lost_key(round_),
                                            std::chrono::seconds(5));
    if (!lost.is_ok()) return std::nullopt;  // the rendezvous is gone: a real failure
    if (lost->has_value()) return *lost;
    if (std::chrono::steady_clock::now() >= until) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Result<std::unique_ptr<transports::Transport>> Runtime::join_and_connect() {
  if (!world_.has_rendezvous()) {
    return connect(daemon::round_key_prefix(round_) + "cpu/", world_.rank, world_.size);
  }
  HVD_RETURN_IF_ERROR(join());
  const auto deadline = std::chrono::steady_clock::now() +
                        seconds_setting(settings_, "elastic_timeout") + kElasticJoinSlack;
  for (;;) {
    auto abort = std::make_shared<transports::ConnectAbort>();
    if (world_.elastic) {
      // A member of the round lost while the transports connect ends the
      // connect now: it would wait for the dead peer up to the transport
      // timeout. From the connect on, a loss aborts the world (abort()).
      {
        std::lock_guard lock(connecting_mu_);
        connecting_ = abort;
      }
      membership_watch_.reset();  // the last round's, if any
      membership_watch_ = std::make_unique<MembershipWatch>(
          *rendezvous_, slot_, round_,
          [this](const Status& why, const std::vector<int>& ranks) { members_removed(why, ranks); });
    }
    auto cpu = connect(daemon::round_key_prefix(round_) + "cpu/", world_.rank, world_.size, abort);
    {
      std::lock_guard lock(connecting_mu_);
      connecting_.reset();
    }
    if (cpu.is_ok() && abort->fired()) cpu = abort->reason();  // connected a lost round
    if (cpu.is_ok()) faults_.reach("connected", round_, slot_);
    if (cpu.is_ok() || !world_.elastic) return cpu;
    // A member of this round died before its transports were up (the
    // rendezvous marks the round lost): the round will not work, and the
    // next one forms without the dead. Not a failure of this worker.
    auto lost = round_lost();
    if (!lost || std::chrono::steady_clock::now() >= deadline) return cpu;
    spdlog::info("{}; its transports did not connect ({}): joining the next round", *lost,
                 cpu.status().message());
    heartbeat_.reset();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    static_cast<common::Placement&>(world_) = launched_;
    HVD_RETURN_IF_ERROR(join_round(left));
  }
}

Status Runtime::await_promotion() {
  if (promoted_slot_ >= 0) {  // promoted before an earlier hvd.shutdown()
    world_.rank = promoted_slot_;
    world_.spare = -1;
    world_.replacement = true;
    return Status::ok();
  }
  spdlog::info("hot spare {} on host {}: waiting to be promoted", world_.spare, world_.host);
  while (true) {
    auto slot = rendezvous_->await_promotion(world_.spare, world_.host, getpid(),
                                             kPromotionPoll);
    if (!slot.is_ok()) {
      return slot.status().with_context("hot spare " + std::to_string(world_.spare) +
                                        " on host " + world_.host);
    }
    if (!slot->has_value()) continue;  // asks again: the job runs on
    spdlog::info("hot spare {} promoted into slot {}", world_.spare, **slot);
    promoted_slot_ = **slot;
    world_.rank = **slot;
    world_.spare = -1;
    world_.replacement = true;  // new to the job's rounds
    return Status::ok();
  }
}

Status Runtime::start(int64_t generation) {
  auto cpu = join_and_connect();
  if (!cpu.is_ok()) return cpu.status();
  if (world_.elastic) {  // a GPU transport kept from the last round uses this round's store
    DeviceShrink::process().bind(
        fault_store_ ? static_cast<common::Store*>(fault_store_.get()) : rendezvous_.get(), round_);
  }
  const std::string key_prefix = daemon::round_key_prefix(round_) + "cpu/";
  std::string transport_name(cpu.value()->name());

  auto global = std::make_shared<engine::ProcessSet>();
  global->id = HVD_GLOBAL_PROCESS_SET;
  for (int r = 0; r < world_.size; ++r) global->ranks.push_back(r);
  global->rank = world_.rank;
  global->engine =
      make_engine(global->id, global->ranks, global->rank, key_prefix, std::move(cpu).value());
  sets_.add(std::move(global));
  // Members of the round removed between the connect and the engine: the
  // world is aborted already (members_removed); its engine hears it now.
  if (abort_.aborted()) engine::abort_sets(sets_.all(), abort_.reason());

  if (std::string path = settings_.get("timeline_filename"); !path.empty()) {
    if (generation > 0) path += "." + std::to_string(generation);
    HVD_RETURN_IF_ERROR(start_timeline(path));
  }
  spdlog::info("rank {} of {} (local {}/{}, cross {}/{}) ready, round {}, cpu transport {}, "
               "gpu transport {}{} (at the first device op)",
               world_.rank, world_.size, world_.local_rank, world_.local_size, world_.cross_rank,
               world_.cross_size, round_, transport_name, gpu_.setting(),
               gpu_.hierarchical() ? " with hierarchical allreduce" : "");
  started_ = true;
  return Status::ok();
}

void Runtime::shutdown() {
  std::lock_guard lock(shutdown_mu_);
  if (shut_down_.exchange(true)) return;
  // A GPU transport that failed before the membership watch said which
  // members left waits for it (bounded: DeviceRoute's grace), so that it can
  // shrink rather than be aborted.
  if (auto global = sets_.find(HVD_GLOBAL_PROCESS_SET); global && global->engine) {
    global->engine->settle_device();
  }
  if (membership_watch_) membership_watch_->stop();  // no abort() from it from now on
  auto sets = sets_.take_all();
  // Process sets first, the global set last: each stop is collective over
  // the set's members, and every rank stops them in the same order.
  for (auto it = sets.rbegin(); it != sets.rend(); ++it) {
    if ((*it)->engine) (*it)->engine->stop(common::aborted("hvd is shutting down"));
  }
  sets.clear();
  timeline_.exchange(nullptr);
  if (heartbeat_) {
    heartbeat_->stop();  // says this rank leaves: no longer watched
    heartbeat_.reset();
  }
  if (foreign_) {
    foreign_->finish(joined_, started_);
    foreign_.reset();
  }
  if (world_.elastic) DeviceShrink::process().unbind();  // before the store goes
  fault_store_.reset();
  rendezvous_.reset();  // the stopped watch (kept: host_updates() may read it) no longer uses it
}

void Runtime::abort(Status reason) {
  if (reason.is_ok()) reason = common::aborted("no reason given");
  Status world(reason.code(),
               "hvd was aborted on rank " + std::to_string(world_.rank) + ": " + reason.message());
  if (!abort_.trigger(world)) return;  // the first reason wins
  spdlog::warn("{}", world.message());
  // A set added meanwhile is aborted by add_process_set (it checks after adding).
  engine::abort_sets(sets_.all(), world);
}

Result<std::shared_ptr<const engine::ProcessSet>> Runtime::process_set(int32_t id) const {
  auto set = sets_.find(id);
  if (!set) {
    if (shut_down_) return common::aborted("hvd is shutting down");
    return common::not_found("no process set " + std::to_string(id));
  }
  return set;
}

Result<std::shared_ptr<const engine::ProcessSet>> Runtime::member_set(int32_t id) const {
  auto set = process_set(id);
  if (!set.is_ok()) return set;
  if (set.value()->rank < 0) {
    std::vector<int64_t> ranks(set.value()->ranks.begin(), set.value()->ranks.end());
    return common::invalid_argument("rank " + std::to_string(world_.rank) +
                                    " is not a member of process set " + std::to_string(id) +
                                    " (ranks " + engine::shape_string(ranks) + ")");
  }
  return set;
}

Status Runtime::start_timeline(const std::string& path) {
  if (path.empty()) return common::invalid_argument("hvd_start_timeline: the path is empty");
  if (world_.rank != 0) return Status::ok();  // rank 0 writes the job's timeline
  auto timeline = engine::Timeline::open(path, world_.rank);
  if (!timeline.is_ok()) return timeline.status();
  timeline_.exchange(std::shared_ptr<engine::Timeline>(std::move(timeline).value()));
  return Status::ok();
}

Status Runtime::stop_timeline() {
  std::shared_ptr<engine::Timeline> last = timeline_.exchange(nullptr);
  if (!last) return Status::ok();
  // An engine cycle may still hold it (recording the end of an op whose
  // handle already completed). The file must be whole when this returns, so
  // wait for those cycles (bounded: a cycle never takes this long unless a
  // transport is stuck, and then the last cycle closes the file).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (last.use_count() > 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (last.use_count() > 1) {
    spdlog::warn("hvd_stop_timeline: an engine cycle still writes the timeline after 10 s; "
                 "the file is closed when it ends");
  }
  last.reset();  // the last user closes the file
  return Status::ok();
}

void Runtime::commit_held(HeldCommit commit) {
  std::lock_guard lock(shutdown_mu_);  // heartbeat_ and rendezvous_ stay until it returns
  if (shut_down_ || !rendezvous_ || !joined_) return;
  if (heartbeat_) {
    heartbeat_->held(commit);
    return;
  }
  // No heartbeats (heartbeat_timeout_seconds 0): one call now.
  CommitReport report{commit.commit, std::nullopt};
  if (commit.synced) report.round_start = commit.commit;
  auto s = rendezvous_->heartbeat(slot_, round_, false, std::chrono::seconds(2), report);
  if (!s.is_ok()) spdlog::debug("reporting commit {}: {}", commit.commit, s.message());
}

Result<engine::EngineStats> Runtime::stats(int32_t set_id) const {
  auto set = member_set(set_id);
  if (!set.is_ok()) return set.status();
  return set.value()->engine->stats();
}

// The op entry points: enqueue and enqueue_group, which check an hvd_op and
// hand it to its set's engine, and the blocking calls of the C ABI (enqueue
// + wait + release).

Result<int64_t> Runtime::enqueue(const hvd_op& op) {
  auto set = member_set(op.process_set_id);
  if (!set.is_ok()) return set.status();
  const engine::ProcessSet& ps = *set.value();
  auto entry = make_entry(op, ps);
  if (!entry.is_ok()) return entry.status();
  engine::Entry& e = entry.value();
  int64_t handle = handles_.create(ps.id);
  e.handle = handle;
  e.enqueued = engine::Clock::now();
  Status s = ps.engine->enqueue(e);
  if (!s.is_ok()) {
    handles_.discard(handle);
    return s;
  }
  return handle;
}

Status Runtime::enqueue_group(std::span<const hvd_op> ops, int64_t* handles) {
  const auto n = static_cast<int32_t>(ops.size());
  if (handles == nullptr || n < 1) {
    return common::invalid_argument("hvd_enqueue_group: needs n >= 1 ops and room for n handles");
  }
  auto set = member_set(ops[0].process_set_id);
  if (!set.is_ok()) return set.status();
  const engine::ProcessSet& ps = *set.value();
  std::vector<engine::Entry> entries;
  for (int32_t i = 0; i < n; ++i) {
    if (ops[i].process_set_id != ps.id) {
      return common::invalid_argument("hvd_enqueue_group: every op of a group must be on the same "
                                      "process set (op 0 is on " + std::to_string(ps.id) +
                                      ", op " + std::to_string(i) + " on " +
                                      std::to_string(ops[i].process_set_id) + ")");
    }
    if (ops[i].op_type == HVD_OPTYPE_JOIN || ops[i].op_type == HVD_OPTYPE_BARRIER) {
      return common::invalid_argument("hvd_enqueue_group: join and barrier cannot be grouped");
    }
    auto entry = make_entry(ops[i], ps);
    if (!entry.is_ok()) {
      return entry.status().with_context("hvd_enqueue_group: op " + std::to_string(i));
    }
    entries.push_back(std::move(entry).value());
  }
  const auto now = engine::Clock::now();
  for (engine::Entry& e : entries) {
    e.handle = handles_.create(ps.id);
    e.enqueued = now;
  }
  std::vector<int64_t> ids;
  for (const engine::Entry& e : entries) ids.push_back(e.handle);
  Status s = ps.engine->enqueue_group(entries);
  if (!s.is_ok()) {
    for (int64_t id : ids) handles_.discard(id);
    return s;
  }
  std::copy(ids.begin(), ids.end(), handles);
  return Status::ok();
}

Status Runtime::run(const hvd_op& op,
                    const std::function<Status(const engine::FinishedOp&)>& read) {
  auto handle = enqueue(op);
  if (!handle.is_ok()) return handle.status();
  Status s = handles_.wait(handle.value(), std::nullopt);
  if (s.is_ok() && read) s = handles_.inspect(handle.value(), read);
  (void)handles_.release(handle.value());
  return s;
}

Status Runtime::allreduce(void* data, int64_t count, int32_t dtype, int32_t op_code) {
  hvd_op op = in_place_op(HVD_OPTYPE_ALLREDUCE, data, &count, dtype);
  op.reduce_op = op_code;
  return run(op);
}

Status Runtime::broadcast(void* data, int64_t count, int32_t dtype, int root) {
  hvd_op op = in_place_op(HVD_OPTYPE_BROADCAST, data, &count, dtype);
  op.root_rank = root;
  return run(op);
}

Status Runtime::allgather(const void* in, int64_t count, int32_t dtype, void* out,
                          const int64_t* counts) {
  auto type = to_data_type(dtype, "allgather");
  if (!type.is_ok()) return type.status();
  auto in_bytes = byte_size(in, count, type.value(), "allgather", "input");
  if (!in_bytes.is_ok()) return in_bytes.status();
  int64_t total = 0;
  for (int r = 0; r < world_.size; ++r) {
    int64_t n = counts != nullptr ? counts[r] : count;
    if (n < 0 || n > kMaxElements / world_.size) {
      return common::invalid_argument("allgather: counts[" + std::to_string(r) + "] (" +
                                      std::to_string(n) + ") is negative or too large");
    }
    total += n;
  }
  if (counts != nullptr && counts[world_.rank] != count) {
    return common::invalid_argument("allgather: counts[" + std::to_string(world_.rank) + "] is " +
                                    std::to_string(counts[world_.rank]) +
                                    " but this rank contributes " + std::to_string(count));
  }
  auto out_bytes = byte_size(out, total, type.value(), "allgather", "output");
  if (!out_bytes.is_ok()) return out_bytes.status();

  hvd_op op = blank_op(HVD_OPTYPE_ALLGATHER);
  op.input = in;
  op.shape = &count;
  op.ndim = 1;
  op.dtype = dtype;
  return run(op, [&](const engine::FinishedOp& done) -> Status {
    if (done.output.bytes != out_bytes.value()) {
      return common::invalid_argument(
          "allgather: the ranks contributed " +
          std::to_string(done.output.bytes / common::data_type_size(type.value())) +
          " elements in all, but the counts given add up to " + std::to_string(total));
    }
    if (done.output.bytes > 0) std::memcpy(out, done.output.data.get(), done.output.bytes);
    return Status::ok();
  });
}

Status Runtime::barrier() { return run(blank_op(HVD_OPTYPE_BARRIER)); }

// The process-set calls: add and remove are collective over every rank;
// agree() first checks, with one allgather over the global set, that every
// rank made the same call, so that all of them fail or succeed alike.

Status Runtime::agree(const char* call, std::vector<int64_t> description) {
  // Each rank contributes [length, description...]; the rows come back in
  // rank order, so every rank can compare everyone's call with its own.
  description.insert(description.begin(), static_cast<int64_t>(description.size()) + 1);
  hvd_op op = blank_op(HVD_OPTYPE_ALLGATHER);
  std::string name = "hvd.process_set_call." + std::to_string(process_set_calls_++);
  op.name = name.c_str();
  op.input = description.data();
  int64_t rows = static_cast<int64_t>(description.size());
  op.shape = &rows;
  op.ndim = 1;
  op.dtype = HVD_INT64;
  std::vector<int64_t> all;
  HVD_RETURN_IF_ERROR(run(op, [&](const engine::FinishedOp& done) {
    all.resize(done.output.bytes / sizeof(int64_t));
    if (!all.empty()) std::memcpy(all.data(), done.output.data.get(), done.output.bytes);
    return Status::ok();
  }));
  std::string differences;
  bool differ = false;
  size_t at = 0;
  for (int r = 0; r < world_.size && at < all.size(); ++r) {
    auto length = static_cast<size_t>(std::max<int64_t>(all[at], 1));
    std::vector<int64_t> theirs(all.begin() + static_cast<std::ptrdiff_t>(at + 1),
                                all.begin() + static_cast<std::ptrdiff_t>(std::min(at + length, all.size())));
    differ = differ || theirs != std::vector<int64_t>(description.begin() + 1, description.end());
    differences += (r > 0 ? ", rank " : "rank ") + std::to_string(r) + " " +
                   engine::shape_string(theirs);
    at += length;
  }
  if (!differ) return Status::ok();
  return common::invalid_argument(std::string(call) +
                                  ": the ranks made different calls (op, id, ranks): " +
                                  differences);
}

Result<int32_t> Runtime::add_process_set(std::span<const int32_t> ranks) {
  std::lock_guard lock(process_set_mu_);
  std::vector<int> members(ranks.begin(), ranks.end());
  std::sort(members.begin(), members.end());
  // Agree first, check after: every rank then fails (or succeeds) alike.
  const int32_t id = next_set_id_;
  std::vector<int64_t> description{1, id};
  description.insert(description.end(), members.begin(), members.end());
  HVD_RETURN_IF_ERROR(agree("hvd_add_process_set", std::move(description)));
  if (members.empty()) return common::invalid_argument("hvd_add_process_set: no ranks given");
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] < 0 || members[i] >= world_.size) {
      return common::invalid_argument("hvd_add_process_set: rank " + std::to_string(members[i]) +
                                      " is out of range for a world of size " +
                                      std::to_string(world_.size));
    }
    if (i > 0 && members[i] == members[i - 1]) {
      return common::invalid_argument("hvd_add_process_set: rank " + std::to_string(members[i]) +
                                      " is given twice");
    }
  }
  ++next_set_id_;

  auto set = std::make_shared<engine::ProcessSet>();
  set->id = id;
  set->ranks = members;
  auto me = std::find(members.begin(), members.end(), world_.rank);
  set->rank = me == members.end() ? -1 : static_cast<int>(me - members.begin());
  if (set->rank >= 0) {
    const std::string key_prefix =
        daemon::round_key_prefix(round_) + "ps" + std::to_string(id) + "/";
    auto transport = connect(key_prefix, set->rank, set->size());
    if (!transport.is_ok()) {
      return transport.status().with_context("hvd_add_process_set: process set " +
                                             std::to_string(id));
    }
    set->engine = make_engine(id, members, set->rank, key_prefix, std::move(transport).value());
  }
  std::shared_ptr<engine::SetEngine> engine = set->engine;
  if (!sets_.add(std::move(set))) {
    if (engine) engine->stop(common::aborted("hvd is shutting down"));
    return common::aborted("hvd is shutting down");
  }
  if (engine && abort_.aborted()) engine->abort(abort_.reason());  // raced Runtime::abort
  spdlog::debug("process set {} added: {} ranks", id, members.size());
  return id;
}

Status Runtime::remove_process_set(int32_t id) {
  std::lock_guard lock(process_set_mu_);
  if (id == HVD_GLOBAL_PROCESS_SET) {
    return common::invalid_argument("hvd_remove_process_set: the global process set (0) cannot "
                                    "be removed");
  }
  HVD_RETURN_IF_ERROR(agree("hvd_remove_process_set", {2, id}));
  auto set = process_set(id);
  if (!set.is_ok()) return set.status().with_context("hvd_remove_process_set");
  auto removed = sets_.remove(id);
  if (removed && removed->engine) {
    removed->engine->stop(
        common::aborted("process set " + std::to_string(id) + " was removed"));
  }
  return Status::ok();
}

}  // namespace hvd::runtime
