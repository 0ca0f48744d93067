// Integration worker for the engine (docs/engine.md): every op of the C ABI
// in every dtype it supports, with exact results, at whatever world size it
// is started with.
//
//   hvdrun -np 3 build/bin/ops_check            all checks; "ops_check: rank R of N OK"
//   hvdrun -np 3 build/bin/ops_check --stall    the last rank never submits 'stall.skipped'
//       (run with HVD_STALL_CHECK_TIME_SECONDS=2 HVD_STALL_SHUTDOWN_TIME_SECONDS=4): the
//       others' op fails; "ops_check: stall: rank R failed as expected: <message>"
//   hvdrun -np 3 build/bin/ops_check --kill-rank R
//       rank R dies (SIGKILL) with async ops in flight; the others' pending ops fail:
//       "ops_check: kill: rank R pending ops failed: <message>" (they ignore SIGTERM
//       for a while so that they can say so before hvdrun terminates them)
//
// Problems print "ops_check: rank R: <what>" and the worker exits 1; a bad
// argument exits 2.
#include <hvd/c_api.h>
#include <hvd/hvd.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ops_check.h"

namespace ops_check {

// 20 named allreduces, each rank enqueueing them rotated by its rank.
void check_enqueue_orders(Checker& c) {
  const int count = 20;
  std::vector<std::vector<int32_t>> data(count);
  std::vector<int64_t> handles(count, 0);
  std::vector<std::string> names(count);
  int64_t shape = 3;
  for (int k = 0; k < count; ++k) {
    int i = (k + c.rank * 7) % count;
    data[static_cast<size_t>(i)].assign(3, i + c.rank);
    names[static_cast<size_t>(i)] = "order." + std::to_string(i);
    hvd_op d = make_op(HVD_OPTYPE_ALLREDUCE, names[static_cast<size_t>(i)].c_str(), HVD_INT32, &shape, 1);
    d.input = d.output = data[static_cast<size_t>(i)].data();
    d.reduce_op = HVD_OP_SUM;
    c.ok(hvd_enqueue(&d, &handles[static_cast<size_t>(i)]), names[static_cast<size_t>(i)]);
    if (k % 5 == 4) std::this_thread::sleep_for(std::chrono::milliseconds(c.rank * 3));
  }
  for (int i = 0; i < count; ++i) {
    if (!c.ok(c.wait(handles[static_cast<size_t>(i)]), names[static_cast<size_t>(i)])) continue;
    int32_t want = i * c.size + c.size * (c.size - 1) / 2;
    if (data[static_cast<size_t>(i)][2] != want) c.problem(names[static_cast<size_t>(i)] + ": wrong sum");
    hvd_release(handles[static_cast<size_t>(i)]);
  }
}

void check_duplicates(Checker& c) {
  int32_t a = 1, b = 2;
  int64_t shape = 1;
  hvd_op d = make_op(HVD_OPTYPE_ALLREDUCE, "dup", HVD_INT32, &shape, 1);
  d.input = d.output = &a;
  int64_t h1 = 0, h2 = 0;
  // Rank 0 submits late, so that on the other ranks the first 'dup' is
  // surely still in flight when they submit the second (on a fast transport
  // it would otherwise complete in between); rank 0 checks nothing here.
  if (c.rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  if (!c.ok(hvd_enqueue(&d, &h1), "dup first")) return;
  d.input = d.output = &b;
  if (c.rank != 0) {
    c.expect_error(hvd_enqueue(&d, &h2), HVD_ERR_ALREADY_EXISTS, "dup second",
                   {"a tensor named 'dup' is already in flight"});
  }
  if (c.ok(c.wait(h1), "dup first") && a != c.size) c.problem("dup: wrong sum");
  hvd_release(h1);
  // Once done, the name may be used again.
  if (c.ok(hvd_enqueue(&d, &h2), "dup again") && c.ok(c.wait(h2), "dup again") && b != 2 * c.size) {
    c.problem("dup again: wrong sum");
  }
  hvd_release(h2);
}

// Each mismatch fails on every rank with a message naming the ranks.
void check_mismatches(Checker& c) {
  if (c.size < 2) return;
  std::vector<float> buf(8, 1.0f);
  int64_t h = 0;
  auto run = [&](hvd_op d, const std::vector<std::string>& fragments) {
    std::string what = std::string("mismatch ") + d.name;
    if (!c.ok(hvd_enqueue(&d, &h), what)) return;
    c.expect_error(c.wait(h), HVD_ERR_INVALID_ARGUMENT, what, fragments);
    hvd_release(h);
  };
  int64_t shape = c.rank == 0 ? 4 : 5;
  hvd_op d = make_op(HVD_OPTYPE_ALLREDUCE, "mm.shape", HVD_FLOAT32, &shape, 1);
  d.input = d.output = buf.data();
  run(d, {"mismatched shape for tensor 'mm.shape'", "rank 0 [4]", "[5]"});

  int64_t four = 4;
  d = make_op(HVD_OPTYPE_ALLREDUCE, "mm.dtype", c.rank == 0 ? HVD_FLOAT32 : HVD_INT32, &four, 1);
  d.input = d.output = buf.data();
  run(d, {"mismatched dtype for tensor 'mm.dtype'", "rank 0 float32", "int32"});

  d = make_op(HVD_OPTYPE_ALLREDUCE, "mm.op", HVD_FLOAT32, &four, 1);
  d.input = d.output = buf.data();
  d.reduce_op = c.rank == 0 ? HVD_OP_SUM : HVD_OP_MAX;
  run(d, {"mismatched reduce op for tensor 'mm.op'", "rank 0 sum", "max"});

  d = make_op(HVD_OPTYPE_BROADCAST, "mm.root", HVD_FLOAT32, &four, 1);
  d.input = d.output = buf.data();
  d.root_rank = c.rank == 0 ? 0 : 1;
  run(d, {"mismatched root rank for tensor 'mm.root'", "rank 0 0", "1"});

  d = make_op(c.rank == 0 ? HVD_OPTYPE_ALLREDUCE : HVD_OPTYPE_ALLGATHER, "mm.type", HVD_FLOAT32,
              &four, 1);
  d.input = buf.data();
  d.output = c.rank == 0 ? buf.data() : nullptr;
  run(d, {"mismatched op type for tensor 'mm.type'", "rank 0 allreduce", "allgather"});
}

// Rank r allreduces r + 1 steps, then joins; the last rank joins last.
void check_join(Checker& c) {
  for (int step = 0; step <= c.rank; ++step) {
    std::vector<double> v(6, 1.0);
    std::string name = "join.step." + std::to_string(step);
    int64_t shape = 6;
    hvd_op d = make_op(HVD_OPTYPE_ALLREDUCE, name.c_str(), HVD_FLOAT64, &shape, 1);
    d.input = d.output = v.data();
    d.reduce_op = step % 2 == 0 ? HVD_OP_SUM : HVD_OP_AVERAGE;
    int64_t h = 0;
    if (!c.ok(hvd_enqueue(&d, &h), name) || !c.ok(c.wait(h), name)) return;
    hvd_release(h);
    // Ranks that joined contribute zeros; Average still divides by the size.
    double contributors = c.size - step;
    double want = step % 2 == 0 ? contributors : contributors / c.size;
    if (std::fabs(v[5] - want) > 1e-12) {
      c.problem(name + ": got " + std::to_string(v[5]) + " expected " + std::to_string(want));
    }
  }
  if (c.rank == c.size - 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  hvd_op j = make_op(HVD_OPTYPE_JOIN, "", HVD_FLOAT32, nullptr, 0);
  int64_t h = 0;
  if (!c.ok(hvd_enqueue(&j, &h), "join") || !c.ok(c.wait(h), "join")) return;
  int32_t last = -1;
  if (c.ok(hvd_handle_join_result(h, &last), "join result") && last != c.size - 1) {
    c.problem("join: the last rank to join was " + std::to_string(last) + ", expected " +
              std::to_string(c.size - 1));
  }
  hvd_release(h);
}

int64_t sum_over(hvd::ProcessSet set, int64_t value, Checker& c, const std::string& name) {
  try {
    hvd::OpOptions o;
    o.name = name;
    o.process_set = set;
    hvd::allreduce<int64_t>(std::span<int64_t>(&value, 1), hvd::ReduceOp::kSum, o);
  } catch (const hvd::Error& e) {
    c.problem(name + ": " + e.what());
  }
  return value;
}

void check_process_sets(Checker& c) {
  try {
    // Two disjoint sets (even and odd ranks) running at the same time.
    std::vector<int32_t> even, odd;
    for (int r = 0; r < c.size; ++r) (r % 2 == 0 ? even : odd).push_back(r);
    hvd::ProcessSet evens = hvd::add_process_set(even);
    hvd::ProcessSet odds = odd.empty() ? hvd::ProcessSet() : hvd::add_process_set(odd);
    hvd::ProcessSet mine = c.rank % 2 == 0 ? evens : odds;
    hvd::ProcessSet other = c.rank % 2 == 0 ? odds : evens;
    if (mine.rank() != c.rank / 2 || mine.ranks() != (c.rank % 2 == 0 ? even : odd)) {
      c.problem("process set rank/ranks");
    }
    int64_t want = 0;
    for (int32_t r : (c.rank % 2 == 0 ? even : odd)) want += r;
    for (int i = 0; i < 5; ++i) {
      int64_t got = sum_over(mine, c.rank, c, "ps.sum." + std::to_string(i));
      if (got != want) c.problem("ps.sum: got " + std::to_string(got) + " expected " + std::to_string(want));
    }
    if (!odd.empty()) {
      if (other.rank() != -1) c.problem("process set rank of a non-member");
      int64_t x = 1;
      hvd::OpOptions o;
      o.process_set = other;
      try {
        hvd::allreduce_async<int64_t>(std::span<int64_t>(&x, 1), hvd::ReduceOp::kSum, o);
        c.problem("an op on a set this rank is not in was accepted");
      } catch (const hvd::Error& e) {
        if (std::string(e.what()).find("is not a member of process set") == std::string::npos) {
          c.problem(std::string("non-member op: ") + e.what());
        }
      }
    }
    // A set the ranks disagree about fails on every rank.
    if (c.size > 1) {
      try {
        hvd::add_process_set(std::vector<int32_t>{c.rank == 0 ? 0 : 1});
        c.problem("a process set the ranks disagree on was added");
      } catch (const hvd::Error& e) {
        if (std::string(e.what()).find("different calls") == std::string::npos) {
          c.problem(std::string("disagreeing process set: ") + e.what());
        }
      }
    }
    // Dynamic: a set of the first and last rank, added after ops ran, then removed.
    std::vector<int32_t> ends{c.size - 1, 0};
    if (c.size == 1) ends = {0};
    hvd::ProcessSet edge = hvd::add_process_set(ends);
    if (edge.included()) {
      int64_t got = sum_over(edge, 1, c, "ps.edge");
      if (got != static_cast<int64_t>(edge.size())) c.problem("ps.edge: wrong sum");
      hvd::barrier(edge);
    }
    hvd::remove_process_set(edge);
    if (!odd.empty()) hvd::remove_process_set(odds);
    hvd::remove_process_set(evens);
    if (hvd_process_set_size(edge.id()) != -HVD_ERR_NOT_FOUND) c.problem("a removed set is still known");
  } catch (const hvd::Error& e) {
    c.problem(std::string("process sets: ") + e.what());
  }
}

void check_reinit(Checker& c) {
  if (!c.ok(hvd_shutdown(), "shutdown")) return;
  int64_t v = 1;
  c.expect_error(hvd_allreduce(&v, 1, HVD_INT64, HVD_OP_SUM), HVD_ERR_FAILED_PRECONDITION,
                 "allreduce after shutdown", {"not initialized"});
  if (!c.ok(hvd_init(), "init again")) return;
  if (c.ok(hvd_allreduce(&v, 1, HVD_INT64, HVD_OP_SUM), "allreduce after init again") && v != c.size) {
    c.problem("allreduce after init again: wrong sum");
  }
}

int run_all(Checker& c) {
  check_allreduces(c);
  check_every_dtype(c);
  check_scaling(c);
  check_broadcasts(c);
  check_allgathers(c);
  check_alltoalls(c);
  check_reducescatters(c);
  check_grouped_allreduces(c);
  check_enqueue_orders(c);
  check_duplicates(c);
  check_mismatches(c);
  check_join(c);
  check_process_sets(c);
  c.ok(hvd_barrier(), "barrier");
  check_reinit(c);
  c.ok(hvd_barrier(), "final barrier");
  c.ok(hvd_shutdown(), "final shutdown");
  if (c.failures > 0) {
    std::printf("ops_check: rank %d of %d FAILED (%d problems)\n", c.rank, c.size, c.failures);
    return 1;
  }
  std::printf("ops_check: rank %d of %d OK\n", c.rank, c.size);
  return 0;
}

// The last rank never submits 'stall.skipped'.
int run_stall(Checker& c) {
  const int skipper = c.size - 1;
  if (c.rank != skipper) {
    float x = 1.0f;
    int64_t shape = 1, h = 0;
    hvd_op d = make_op(HVD_OPTYPE_ALLREDUCE, "stall.skipped", HVD_FLOAT32, &shape, 1);
    d.input = d.output = &x;
    if (!c.ok(hvd_enqueue(&d, &h), "stall.skipped")) return 1;
    int code = hvd_wait(h, 30);
    bool hung = code == HVD_ERR_TIMEOUT &&
                std::string(hvd_last_error()).find("still pending") != std::string::npos;
    if (code == HVD_OK || hung) {
      c.problem("stall.skipped did not fail (code " + std::to_string(code) + "): " + hvd_last_error());
    } else {
      std::printf("ops_check: stall: rank %d failed as expected: %s\n", c.rank, hvd_last_error());
    }
    hvd_release(h);
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(6));
  }
  c.ok(hvd_barrier(), "barrier after the stall");
  c.ok(hvd_shutdown(), "shutdown");
  return c.failures > 0 ? 1 : 0;
}

// `victim` dies with ops in flight; the others' pending ops must fail.
int run_kill(Checker& c, int victim) {
  for (int step = 0; step < 3; ++step) {
    int64_t v = 1;
    if (!c.ok(hvd_allreduce(&v, 1, HVD_INT64, HVD_OP_SUM), "warm-up")) return 1;
  }
  if (c.rank == victim) {
    std::vector<float> x(4, 1.0f);
    int64_t shape = 4, h = 0;
    hvd_op d = make_op(HVD_OPTYPE_ALLREDUCE, "kill.victim", HVD_FLOAT32, &shape, 1);
    d.input = d.output = x.data();
    (void)hvd_enqueue(&d, &h);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    raise(SIGKILL);
  }
  signal(SIGTERM, SIG_IGN);  // to report before hvdrun's SIGKILL
  std::vector<std::vector<float>> bufs(4, std::vector<float>(4, 1.0f));
  std::vector<int64_t> handles;
  int64_t shape = 4;
  for (int k = 0; k < 4; ++k) {
    std::string name = "kill." + std::to_string(k);
    hvd_op d = make_op(HVD_OPTYPE_ALLREDUCE, name.c_str(), HVD_FLOAT32, &shape, 1);
    d.input = d.output = bufs[static_cast<size_t>(k)].data();
    int64_t h = 0;
    if (hvd_enqueue(&d, &h) == HVD_OK) handles.push_back(h);  // else: already failed, fine
  }
  auto start = std::chrono::steady_clock::now();
  std::string message;
  if (handles.empty()) message = hvd_last_error();
  for (int64_t h : handles) {
    int code = hvd_wait(h, 30);
    if (code == HVD_OK) c.problem("an op the dead rank never submitted succeeded");
    if (code == HVD_ERR_TIMEOUT && std::string(hvd_last_error()).find("still pending") != std::string::npos) {
      c.problem("a pending op hung after rank " + std::to_string(victim) + " died");
    }
    if (message.empty()) message = hvd_last_error();
  }
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int64_t v = 1;
  if (hvd_allreduce(&v, 1, HVD_INT64, HVD_OP_SUM) == HVD_OK) c.problem("the failed engine accepted an op");
  if (c.failures == 0) {
    std::printf("ops_check: kill: rank %d pending ops failed after %.1f s: %s\n", c.rank, waited,
                message.c_str());
  }
  std::fflush(stdout);
  std::_Exit(c.failures > 0 ? 1 : 0);  // no shutdown: the world is broken
}

}  // namespace ops_check

int main(int argc, char** argv) {
  using namespace ops_check;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  enum class Mode { kAll, kStall, kKill } mode = Mode::kAll;
  int victim = -1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--stall") {
      mode = Mode::kStall;
    } else if (a == "--kill-rank" && i + 1 < argc) {
      mode = Mode::kKill;
      victim = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "ops_check: unexpected argument '%s'\n"
                           "usage: ops_check [--stall | --kill-rank R]\n", a.c_str());
      return 2;
    }
  }
  Checker c;
  if (hvd_init() != HVD_OK) {
    std::printf("ops_check: init failed: %s\n", hvd_last_error());
    return 1;
  }
  c.rank = hvd_rank();
  c.size = hvd_size();
  switch (mode) {
    case Mode::kStall: return run_stall(c);
    case Mode::kKill: return run_kill(c, victim);
    case Mode::kAll: break;
  }
  return run_all(c);
}
