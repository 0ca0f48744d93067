// ops_check: allreduce in every op x dtype, scaling, reducescatter, groups.
#include "ops_check.h"

#include <hvd/hvd.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace ops_check {

// Element i of rank r's input. Sums of any world up to 127 ranks fit int8;
// products stay within +-4.
int64_t input(int op, bool is_signed, int rank, int size, size_t i) {
  auto idx = static_cast<int64_t>(i);
  switch (op) {
    case HVD_OP_SUM:
    case HVD_OP_AVERAGE: return (rank + idx) % 3 - (is_signed ? 1 : 0);
    case HVD_OP_PRODUCT: {
      int64_t v = 1;
      if (rank == idx % size) v += 1;
      if (size > 1 && rank == (idx + 1) % size) v += 1;
      if (is_signed && idx % 2 == 0 && rank == (idx + 2) % size) v = -v;
      return v;
    }
    default: return (idx * 7 + rank * 3) % 11 - (is_signed ? 5 : 0);  // min, max
  }
}

// The result every rank expects, computed the way the runtime does: in the
// storage type, an Average dividing the sum by the size.
template <typename C>
typename C::Storage expected(const DtypeInfo& t, int op, int size, size_t i) {
  using S = typename C::Storage;
  if (op == HVD_OP_SUM || op == HVD_OP_AVERAGE) {
    int64_t sum = 0;
    for (int r = 0; r < size; ++r) sum += input(op, t.is_signed, r, size, i);
    S s = C::from(static_cast<double>(sum));
    if (op == HVD_OP_SUM) return s;
    if constexpr (std::is_integral_v<S> && !std::is_same_v<C, Half> && !std::is_same_v<C, BFloat>) {
      return static_cast<S>(s / size);
    } else if constexpr (std::is_same_v<S, float>) {
      return s / static_cast<float>(size);
    } else if constexpr (std::is_same_v<S, double>) {
      return s / size;
    } else {
      return C::from(static_cast<double>(static_cast<float>(C::to(s)) / static_cast<float>(size)));
    }
  }
  double acc = static_cast<double>(input(op, t.is_signed, 0, size, i));
  for (int r = 1; r < size; ++r) {
    double v = static_cast<double>(input(op, t.is_signed, r, size, i));
    if (op == HVD_OP_MIN) acc = std::min(acc, v);
    else if (op == HVD_OP_MAX) acc = std::max(acc, v);
    else acc *= v;
  }
  if constexpr (std::is_integral_v<S> && !std::is_same_v<C, Half> && !std::is_same_v<C, BFloat>) {
    // Products wrap like the runtime's (computed in the type, rank by rank).
    S p = static_cast<S>(input(op, t.is_signed, 0, size, i));
    if (op == HVD_OP_PRODUCT) {
      for (int r = 1; r < size; ++r) p = static_cast<S>(p * static_cast<S>(input(op, t.is_signed, r, size, i)));
      return p;
    }
  }
  return C::from(acc);
}

// One async allreduce and what it should produce.
struct PendingCheck {
  std::string name;
  int64_t handle = 0;
  std::function<std::string()> verify;  // "" when right
};

template <typename C>
PendingCheck allreduce_case(Checker& c, const DtypeInfo& t, int op, size_t n,
                            std::vector<std::vector<uint8_t>>& keep) {
  using S = typename C::Storage;
  keep.emplace_back(n * sizeof(S));
  S* data = reinterpret_cast<S*>(keep.back().data());
  for (size_t i = 0; i < n; ++i) {
    data[i] = C::from(static_cast<double>(input(op, t.is_signed, c.rank, c.size, i)));
  }
  PendingCheck p;
  p.name = std::string("ar.") + t.name + "." + op_name(op);
  int size = c.size;
  p.verify = [data, n, t, op, size]() -> std::string {
    for (size_t i = 0; i < n; ++i) {
      S want = expected<C>(t, op, size, i);
      if (std::memcmp(&data[i], &want, sizeof(S)) != 0) {
        return "at index " + std::to_string(i) + ": got " + std::to_string(C::to(data[i])) +
               " expected " + std::to_string(C::to(want));
      }
    }
    return "";
  };
  int64_t shape = static_cast<int64_t>(n);
  hvd_op d = make_op(HVD_OPTYPE_ALLREDUCE, p.name.c_str(), t.code, &shape, 1);
  d.input = data;
  d.output = data;
  d.reduce_op = op;
  if (!c.ok(hvd_enqueue(&d, &p.handle), "enqueue " + p.name)) p.handle = 0;
  return p;
}

void finish(Checker& c, std::vector<PendingCheck>& pending) {
  for (auto& p : pending) {
    if (p.handle == 0) continue;
    if (c.ok(c.wait(p.handle), p.name)) {
      std::string wrong = p.verify();
      if (!wrong.empty()) c.problem(p.name + " " + wrong);
    }
    hvd_release(p.handle);
  }
  pending.clear();
}

// Every op x dtype at once (fused where they fit), odd ranks enqueueing in
// reverse order.
void check_allreduces(Checker& c) {
  const DtypeInfo u8{HVD_UINT8, "uint8", false, false}, i8{HVD_INT8, "int8", true, false},
      i16{HVD_INT16, "int16", true, false}, i32{HVD_INT32, "int32", true, false},
      i64{HVD_INT64, "int64", true, false}, f16{HVD_FLOAT16, "float16", true, true},
      bf16{HVD_BFLOAT16, "bfloat16", true, true}, f32{HVD_FLOAT32, "float32", true, true},
      f64{HVD_FLOAT64, "float64", true, true};
  std::vector<std::vector<uint8_t>> keep;
  keep.reserve(64);
  std::vector<std::function<PendingCheck()>> cases;
  for (int op : {HVD_OP_SUM, HVD_OP_AVERAGE, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT}) {
    size_t n = 97;
    cases.push_back([&, op, n] { return allreduce_case<Plain<uint8_t>>(c, u8, op, n, keep); });
    cases.push_back([&, op, n] { return allreduce_case<Plain<int8_t>>(c, i8, op, n, keep); });
    cases.push_back([&, op, n] { return allreduce_case<Plain<int16_t>>(c, i16, op, n, keep); });
    cases.push_back([&, op, n] { return allreduce_case<Plain<int32_t>>(c, i32, op, n, keep); });
    cases.push_back([&, op, n] { return allreduce_case<Plain<int64_t>>(c, i64, op, n, keep); });
    cases.push_back([&, op, n] { return allreduce_case<Half>(c, f16, op, n, keep); });
    cases.push_back([&, op, n] { return allreduce_case<BFloat>(c, bf16, op, n, keep); });
    cases.push_back([&, op, n] { return allreduce_case<Plain<float>>(c, f32, op, n, keep); });
    cases.push_back([&, op, n] { return allreduce_case<Plain<double>>(c, f64, op, n, keep); });
  }
  if (c.rank % 2 == 1) std::reverse(cases.begin(), cases.end());
  std::vector<PendingCheck> pending;
  for (auto& make : cases) pending.push_back(make());
  finish(c, pending);

  // bool: sum and max are OR, min and product AND; average is refused.
  for (int op : {HVD_OP_SUM, HVD_OP_MIN, HVD_OP_MAX, HVD_OP_PRODUCT}) {
    const size_t n = 50;
    std::vector<uint8_t> data(n);
    for (size_t i = 0; i < n; ++i) data[i] = (c.rank + i) % 3 != 0 ? 1 : 0;
    if (!c.ok(hvd_allreduce(data.data(), n, HVD_BOOL, op), std::string("bool ") + op_name(op))) continue;
    for (size_t i = 0; i < n; ++i) {
      bool all = true, any = false;
      for (int r = 0; r < c.size; ++r) {
        bool v = (r + i) % 3 != 0;
        all = all && v;
        any = any || v;
      }
      bool want = (op == HVD_OP_MIN || op == HVD_OP_PRODUCT) ? all : any;
      if (data[i] != (want ? 1 : 0)) {
        c.problem(std::string("bool ") + op_name(op) + " at index " + std::to_string(i));
        break;
      }
    }
  }
  uint8_t flag = 1;
  c.expect_error(hvd_allreduce(&flag, 1, HVD_BOOL, HVD_OP_AVERAGE), HVD_ERR_INVALID_ARGUMENT,
                 "bool average", {"average is not defined for bool"});
}

// prescale / postscale on floating and integer types, and their refusal for bool.
void check_scaling(Checker& c) {
  std::vector<float> f(10, static_cast<float>(c.rank + 1));
  int64_t shape = 10;
  hvd_op d = make_op(HVD_OPTYPE_ALLREDUCE, "scale.f32", HVD_FLOAT32, &shape, 1);
  d.input = d.output = f.data();
  d.reduce_op = HVD_OP_SUM;
  d.prescale_factor = 0.5;
  d.postscale_factor = 4.0;
  int64_t h = 0;
  if (c.ok(hvd_enqueue(&d, &h), "scale.f32") && c.ok(c.wait(h), "scale.f32")) {
    float want = static_cast<float>(c.size * (c.size + 1));  // sum(r+1) * 0.5 * 4
    if (f[9] != want) c.problem("scale.f32: got " + std::to_string(f[9]) + " expected " + std::to_string(want));
    hvd_release(h);
  }
  std::vector<double> g(4, 3.0 * (c.rank + 1));
  d = make_op(HVD_OPTYPE_ALLREDUCE, "scale.avg.f64", HVD_FLOAT64, &shape, 1);
  shape = 4;
  d.input = d.output = g.data();
  d.reduce_op = HVD_OP_AVERAGE;
  d.postscale_factor = 2.0;
  if (c.ok(hvd_enqueue(&d, &h), "scale.avg.f64") && c.ok(c.wait(h), "scale.avg.f64")) {
    double want = 3.0 * (c.size + 1);  // mean of 3(r+1) is 3(n+1)/2, times 2
    if (std::fabs(g[0] - want) > 1e-12) c.problem("scale.avg.f64: got " + std::to_string(g[0]));
    hvd_release(h);
  }
  std::vector<uint16_t> half(8, hvd::common::float_to_half(1.0f));
  shape = 8;
  d = make_op(HVD_OPTYPE_ALLREDUCE, "scale.f16", HVD_FLOAT16, &shape, 1);
  d.input = d.output = half.data();
  d.reduce_op = HVD_OP_SUM;
  d.prescale_factor = 2.0;
  d.postscale_factor = 0.25;
  if (c.ok(hvd_enqueue(&d, &h), "scale.f16") && c.ok(c.wait(h), "scale.f16")) {
    float got = hvd::common::half_to_float(half[7]);
    if (got != c.size * 0.5f) c.problem("scale.f16: got " + std::to_string(got));
    hvd_release(h);
  }
  // Integers as Horovod scales them: 2r+3 times 0.5 truncates to r+1 (and
  // -(2r+3) to -(r+1), toward zero), summed and doubled: n(n+1) and -n(n+1).
  const int32_t odd = 2 * c.rank + 3;
  std::vector<int32_t> ints{odd, -odd, 0};
  shape = 3;
  d = make_op(HVD_OPTYPE_ALLREDUCE, "scale.int", HVD_INT32, &shape, 1);
  d.input = d.output = ints.data();
  d.reduce_op = HVD_OP_SUM;
  d.prescale_factor = 0.5;
  d.postscale_factor = 2.0;
  if (c.ok(hvd_enqueue(&d, &h), "scale.int") && c.ok(c.wait(h), "scale.int")) {
    const int32_t want = c.size * (c.size + 1);
    if (ints != std::vector<int32_t>{want, -want, 0}) {
      c.problem("scale.int: got " + std::to_string(ints[0]) + " " + std::to_string(ints[1]) +
                ", expected " + std::to_string(want) + " " + std::to_string(-want));
    }
    hvd_release(h);
  }
  uint8_t flag = 1;
  shape = 1;
  d = make_op(HVD_OPTYPE_ALLREDUCE, "scale.bool", HVD_BOOL, &shape, 1);
  d.input = d.output = &flag;
  d.prescale_factor = 2.0;
  c.expect_error(hvd_enqueue(&d, &h), HVD_ERR_INVALID_ARGUMENT, "bool with a prescale factor",
                 {"do not apply to bool"});
}

// rows = 2n + 1 (uneven: rank 0 gets 3, the others 2) of 2 columns.
void check_reducescatters(Checker& c) {
  const int n = c.size;
  const int64_t rows = 2 * n + 1;
  std::vector<float> in(static_cast<size_t>(rows * 2));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) + static_cast<float>(c.rank);
  int64_t shape[2] = {rows, 2};
  auto my_first_row = [&](int r) {
    int64_t first = 0;
    for (int k = 0; k < r; ++k) first += rows / n + (k < rows % n ? 1 : 0);
    return first;
  };
  for (int op : {HVD_OP_SUM, HVD_OP_AVERAGE}) {
    std::string name = std::string("rs.") + op_name(op);
    hvd_op d = make_op(HVD_OPTYPE_REDUCESCATTER, name.c_str(), HVD_FLOAT32, shape, 2);
    d.input = in.data();
    d.reduce_op = op;
    int64_t h = 0;
    if (!c.ok(hvd_enqueue(&d, &h), name) || !c.ok(c.wait(h), name)) continue;
    std::vector<int64_t> out_shape;
    std::vector<float> out;
    if (read_output(c, h, name, out_shape, out)) {
      int64_t mine = rows / n + (c.rank < rows % n ? 1 : 0);
      if (out_shape != std::vector<int64_t>{mine, 2}) c.problem(name + ": output shape");
      int64_t first = my_first_row(c.rank);
      for (size_t k = 0; k < out.size(); ++k) {
        float idx = static_cast<float>(first * 2 + static_cast<int64_t>(k));
        float sum = idx * n + static_cast<float>(n * (n - 1) / 2);
        float want = op == HVD_OP_SUM ? sum : sum / static_cast<float>(n);
        if (out[k] != want) {
          c.problem(name + " at " + std::to_string(k) + ": got " + std::to_string(out[k]) +
                    " expected " + std::to_string(want));
          break;
        }
      }
    }
    hvd_release(h);
  }
  // Grouped reducescatter of two int64 tensors.
  std::vector<int64_t> a(static_cast<size_t>(n), 1), b(static_cast<size_t>(2 * n), c.rank);
  int64_t sa = n, sb = 2 * n;
  hvd_op ops[2] = {make_op(HVD_OPTYPE_REDUCESCATTER, "rs.group.a", HVD_INT64, &sa, 1),
                   make_op(HVD_OPTYPE_REDUCESCATTER, "rs.group.b", HVD_INT64, &sb, 1)};
  ops[0].input = a.data();
  ops[1].input = b.data();
  int64_t hs[2] = {0, 0};
  if (c.ok(hvd_enqueue_group(ops, 2, hs), "rs.group")) {
    std::vector<int64_t> sh;
    std::vector<int64_t> out;
    if (c.ok(c.wait(hs[0]), "rs.group.a") && read_output(c, hs[0], "rs.group.a", sh, out) &&
        (out.size() != 1 || out[0] != n)) {
      c.problem("rs.group.a: wrong result");
    }
    if (c.ok(c.wait(hs[1]), "rs.group.b") && read_output(c, hs[1], "rs.group.b", sh, out) &&
        (out.size() != 2 || out[1] != n * (n - 1) / 2)) {
      c.problem("rs.group.b: wrong result");
    }
    hvd_release(hs[0]);
    hvd_release(hs[1]);
  }
}

// Two groups of allreduces, enqueued in opposite orders by even and odd ranks.
void check_grouped_allreduces(Checker& c) {
  std::vector<std::vector<double>> data(4, std::vector<double>(5, c.rank + 1.0));
  std::vector<hvd::Handle> handles;
  auto group = [&](int first) {
    std::vector<std::span<double>> tensors{data[static_cast<size_t>(first)], data[static_cast<size_t>(first) + 1]};
    hvd::OpOptions o;
    o.name = "gar." + std::to_string(first);
    for (auto& h : hvd::grouped_allreduce_async<double>(tensors, hvd::ReduceOp::kSum, o)) {
      handles.push_back(std::move(h));
    }
  };
  try {
    if (c.rank % 2 == 0) {
      group(0);
      group(2);
    } else {
      group(2);
      group(0);
    }
    for (auto& h : handles) h.wait(kWaitSeconds);
  } catch (const hvd::Error& e) {
    c.problem(std::string("grouped allreduce: ") + e.what());
    return;
  }
  double want = c.size * (c.size + 1) / 2.0;
  for (auto& d : data) {
    if (d[4] != want) c.problem("grouped allreduce: got " + std::to_string(d[4]));
  }
}

}  // namespace ops_check
