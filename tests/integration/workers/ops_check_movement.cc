// ops_check: broadcast, allgather, alltoall (and reducescatter) in every dtype.
#include "ops_check.h"

#include <cmath>
#include <string>
#include <vector>

namespace ops_check {

void check_broadcasts(Checker& c) {
  for (int root = 0; root < c.size; ++root) {
    std::vector<int64_t> a(33, -1);
    std::vector<uint16_t> b(17, 0);
    if (c.rank == root) {
      for (size_t i = 0; i < a.size(); ++i) a[i] = root * 1000 + static_cast<int64_t>(i);
      for (size_t i = 0; i < b.size(); ++i) b[i] = hvd::common::float_to_bfloat16(root + i * 0.5f);
    }
    int64_t sa = 33, sb = 17;
    std::string na = "bcast.i64." + std::to_string(root), nb = "bcast.bf16." + std::to_string(root);
    hvd_op da = make_op(HVD_OPTYPE_BROADCAST, na.c_str(), HVD_INT64, &sa, 1);
    da.input = da.output = a.data();
    da.root_rank = root;
    hvd_op db = make_op(HVD_OPTYPE_BROADCAST, nb.c_str(), HVD_BFLOAT16, &sb, 1);
    db.input = db.output = b.data();
    db.root_rank = root;
    int64_t ha = 0, hb = 0;
    // Ranks enqueue the two in opposite orders.
    if (c.rank % 2 == 0) {
      c.ok(hvd_enqueue(&da, &ha), na);
      c.ok(hvd_enqueue(&db, &hb), nb);
    } else {
      c.ok(hvd_enqueue(&db, &hb), nb);
      c.ok(hvd_enqueue(&da, &ha), na);
    }
    if (c.ok(c.wait(ha), na) && a[32] != root * 1000 + 32) c.problem(na + ": wrong data");
    if (c.ok(c.wait(hb), nb) && b[16] != hvd::common::float_to_bfloat16(root + 8.0f)) {
      c.problem(nb + ": wrong data");
    }
    hvd_release(ha);
    hvd_release(hb);
  }
}

// Bytes of rank r's element k for the data-moving ops (any dtype: they move
// bytes, never look at them).
uint8_t pattern(int r, size_t k) { return static_cast<uint8_t>((r * 37 + static_cast<int>(k) * 11) & 0x7f); }

// allgather (uneven), broadcast, alltoall (even) and reducescatter in one
// dtype, all enqueued before any is waited for.
template <typename C>
void dtype_round(Checker& c, const DtypeInfo& t) {
  using S = typename C::Storage;
  const size_t width = sizeof(S);
  const int n = c.size;
  std::string ag = std::string("dt.ag.") + t.name, bc = std::string("dt.bc.") + t.name,
              a2a = std::string("dt.a2a.") + t.name, rs = std::string("dt.rs.") + t.name;
  // allgather: r + 1 rows of 2.
  std::vector<uint8_t> ag_in(static_cast<size_t>(c.rank + 1) * 2 * width);
  for (size_t k = 0; k < ag_in.size(); ++k) ag_in[k] = pattern(c.rank, k);
  int64_t ag_shape[2] = {c.rank + 1, 2};
  hvd_op d_ag = make_op(HVD_OPTYPE_ALLGATHER, ag.c_str(), t.code, ag_shape, 2);
  d_ag.input = ag_in.data();
  // broadcast from the last rank.
  std::vector<uint8_t> bc_buf(5 * width, 0);
  if (c.rank == n - 1) {
    for (size_t k = 0; k < bc_buf.size(); ++k) bc_buf[k] = pattern(n - 1, k);
  }
  int64_t bc_shape = 5;
  hvd_op d_bc = make_op(HVD_OPTYPE_BROADCAST, bc.c_str(), t.code, &bc_shape, 1);
  d_bc.input = d_bc.output = bc_buf.data();
  d_bc.root_rank = n - 1;
  // alltoall: one row of 3 to every rank.
  std::vector<uint8_t> a2a_in(static_cast<size_t>(n) * 3 * width);
  for (size_t k = 0; k < a2a_in.size(); ++k) a2a_in[k] = pattern(c.rank, k);
  int64_t a2a_shape[2] = {n, 3};
  hvd_op d_a2a = make_op(HVD_OPTYPE_ALLTOALL, a2a.c_str(), t.code, a2a_shape, 2);
  d_a2a.input = a2a_in.data();
  // reducescatter (sum; bool: or) of n + 1 rows.
  std::vector<S> rs_in(static_cast<size_t>(n + 1));
  for (size_t k = 0; k < rs_in.size(); ++k) {
    rs_in[k] = t.code == HVD_BOOL ? static_cast<S>((c.rank + k) % 2) : C::from(static_cast<double>(c.rank + k % 3));
  }
  int64_t rs_shape = n + 1;
  hvd_op d_rs = make_op(HVD_OPTYPE_REDUCESCATTER, rs.c_str(), t.code, &rs_shape, 1);
  d_rs.input = rs_in.data();

  int64_t h[4] = {0, 0, 0, 0};
  hvd_op ops[4] = {d_ag, d_bc, d_a2a, d_rs};
  for (int i = 0; i < 4; ++i) c.ok(hvd_enqueue(&ops[(i + c.rank) % 4], &h[(i + c.rank) % 4]), std::string("enqueue ") + ops[(i + c.rank) % 4].name);
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
  if (c.ok(c.wait(h[0]), ag) && read_bytes(c, h[0], ag, width, bytes)) {
    size_t at = 0;
    for (int r = 0; r < n; ++r) {
      for (size_t k = 0; k < static_cast<size_t>(r + 1) * 2 * width; ++k, ++at) {
        if (at >= bytes.size() || bytes[at] != pattern(r, k)) {
          c.problem(ag + " at byte " + std::to_string(at));
          r = n;
          break;
        }
      }
    }
  }
  if (c.ok(c.wait(h[1]), bc)) {
    for (size_t k = 0; k < bc_buf.size(); ++k) {
      if (bc_buf[k] != pattern(n - 1, k)) {
        c.problem(bc + " at byte " + std::to_string(k));
        break;
      }
    }
  }
  if (c.ok(c.wait(h[2]), a2a) && read_bytes(c, h[2], a2a, width, bytes)) {
    // From rank s: its row number `c.rank`.
    for (int s = 0; s < n; ++s) {
      for (size_t k = 0; k < 3 * width; ++k) {
        size_t at = static_cast<size_t>(s) * 3 * width + k;
        if (bytes[at] != pattern(s, static_cast<size_t>(c.rank) * 3 * width + k)) {
          c.problem(a2a + " at byte " + std::to_string(at));
          s = n;
          break;
        }
      }
    }
  }
  std::vector<S> out;
  if (c.ok(c.wait(h[3]), rs) && read_output(c, h[3], rs, shape, out)) {
    size_t first = c.rank == 0 ? 0 : static_cast<size_t>(c.rank) + 1;  // rank 0 has 2 rows
    for (size_t k = 0; k < out.size(); ++k) {
      size_t row = first + k;
      S want{};
      if (t.code == HVD_BOOL) {
        want = n > 1 ? 1 : static_cast<S>(row % 2);
      } else {
        double sum = 0;
        for (int r = 0; r < n; ++r) sum += r + static_cast<double>(row % 3);
        want = C::from(sum);
      }
      if (std::memcmp(&out[k], &want, sizeof(S)) != 0) {
        c.problem(rs + " at " + std::to_string(k) + ": got " + std::to_string(C::to(out[k])));
        break;
      }
    }
  }
  for (int64_t handle : h) hvd_release(handle);
}

void check_every_dtype(Checker& c) {
  dtype_round<Plain<uint8_t>>(c, {HVD_UINT8, "uint8", false, false});
  dtype_round<Plain<int8_t>>(c, {HVD_INT8, "int8", true, false});
  dtype_round<Plain<int16_t>>(c, {HVD_INT16, "int16", true, false});
  dtype_round<Plain<int32_t>>(c, {HVD_INT32, "int32", true, false});
  dtype_round<Plain<int64_t>>(c, {HVD_INT64, "int64", true, false});
  dtype_round<Half>(c, {HVD_FLOAT16, "float16", true, true});
  dtype_round<BFloat>(c, {HVD_BFLOAT16, "bfloat16", true, true});
  dtype_round<Plain<float>>(c, {HVD_FLOAT32, "float32", true, true});
  dtype_round<Plain<double>>(c, {HVD_FLOAT64, "float64", true, true});
  dtype_round<Plain<uint8_t>>(c, {HVD_BOOL, "bool", false, false});
}

// Rank r contributes r + 1 rows of 3: rows come back in rank order.
void check_allgathers(Checker& c) {
  auto rows_of = [](int r) { return r + 1; };
  std::vector<float> mine(static_cast<size_t>(rows_of(c.rank) * 3));
  for (size_t k = 0; k < mine.size(); ++k) mine[k] = c.rank * 100.0f + static_cast<float>(k);
  int64_t shape[2] = {rows_of(c.rank), 3};
  hvd_op d = make_op(HVD_OPTYPE_ALLGATHER, "ag.uneven", HVD_FLOAT32, shape, 2);
  d.input = mine.data();
  int64_t h = 0;
  if (c.ok(hvd_enqueue(&d, &h), "ag.uneven") && c.ok(c.wait(h), "ag.uneven")) {
    std::vector<int64_t> out_shape;
    std::vector<float> out;
    if (read_output(c, h, "ag.uneven", out_shape, out)) {
      int64_t total = 0;
      for (int r = 0; r < c.size; ++r) total += rows_of(r);
      if (out_shape != std::vector<int64_t>{total, 3}) c.problem("ag.uneven: wrong output shape");
      size_t at = 0;
      for (int r = 0; r < c.size && at < out.size(); ++r) {
        for (int k = 0; k < rows_of(r) * 3; ++k, ++at) {
          if (out[at] != r * 100.0f + static_cast<float>(k)) {
            c.problem("ag.uneven at " + std::to_string(at));
            r = c.size;
            break;
          }
        }
      }
    }
    hvd_release(h);
  }
  // Grouped: two allgathers negotiated and completed together (float16, int8).
  std::vector<uint16_t> a(2, hvd::common::float_to_half(static_cast<float>(c.rank)));
  std::vector<int8_t> b(static_cast<size_t>(c.rank), static_cast<int8_t>(c.rank));
  int64_t sa = 2, sb = c.rank;
  hvd_op ops[2] = {make_op(HVD_OPTYPE_ALLGATHER, "ag.group.a", HVD_FLOAT16, &sa, 1),
                   make_op(HVD_OPTYPE_ALLGATHER, "ag.group.b", HVD_INT8, &sb, 1)};
  ops[0].input = a.data();
  ops[1].input = b.data();
  int64_t hs[2] = {0, 0};
  if (c.ok(hvd_enqueue_group(ops, 2, hs), "ag.group")) {
    c.ok(c.wait(hs[0]), "ag.group.a");
    if (hvd_poll(hs[1]) != 1) c.problem("ag.group: member b not done with member a");
    std::vector<int64_t> shape_a, shape_b;
    std::vector<uint16_t> out_a;
    std::vector<int8_t> out_b;
    if (read_output(c, hs[0], "ag.group.a", shape_a, out_a) &&
        read_output(c, hs[1], "ag.group.b", shape_b, out_b)) {
      if (shape_a[0] != 2 * c.size || out_a.back() != hvd::common::float_to_half(c.size - 1.0f)) {
        c.problem("ag.group.a: wrong result");
      }
      if (shape_b[0] != c.size * (c.size - 1) / 2 ||
          (!out_b.empty() && out_b.back() != c.size - 1)) {
        c.problem("ag.group.b: wrong result");
      }
    }
    hvd_release(hs[0]);
    hvd_release(hs[1]);
  }
}

// Rank s sends (s + q) % 3 + 1 rows of 2 to rank q: value s*10000 + q*100 + k.
void check_alltoalls(Checker& c) {
  const int n = c.size;
  auto rows = [](int s, int q) { return static_cast<int64_t>((s + q) % 3 + 1); };
  std::vector<int64_t> splits(static_cast<size_t>(n));
  std::vector<int32_t> in;
  for (int q = 0; q < n; ++q) {
    splits[static_cast<size_t>(q)] = rows(c.rank, q);
    for (int64_t k = 0; k < rows(c.rank, q) * 2; ++k) {
      in.push_back(static_cast<int32_t>(c.rank * 10000 + q * 100 + k));
    }
  }
  int64_t shape[2] = {static_cast<int64_t>(in.size() / 2), 2};
  hvd_op d = make_op(HVD_OPTYPE_ALLTOALL, "a2a.uneven", HVD_INT32, shape, 2);
  d.input = in.data();
  d.splits = splits.data();
  int64_t h = 0;
  if (c.ok(hvd_enqueue(&d, &h), "a2a.uneven") && c.ok(c.wait(h), "a2a.uneven")) {
    std::vector<int64_t> out_shape;
    std::vector<int32_t> out;
    std::vector<int64_t> received(static_cast<size_t>(n));
    if (read_output(c, h, "a2a.uneven", out_shape, out) &&
        c.ok(hvd_handle_received_splits(h, received.data(), n), "a2a received splits")) {
      size_t at = 0;
      for (int s = 0; s < n; ++s) {
        if (received[static_cast<size_t>(s)] != rows(s, c.rank)) c.problem("a2a: received splits");
        for (int64_t k = 0; k < rows(s, c.rank) * 2 && at < out.size(); ++k, ++at) {
          if (out[at] != s * 10000 + c.rank * 100 + k) {
            c.problem("a2a.uneven at " + std::to_string(at));
            s = n;
            break;
          }
        }
      }
      if (at != out.size()) c.problem("a2a.uneven: output size");
    }
    hvd_release(h);
  }
  // Even split (splits NULL), and a row count that does not divide.
  std::vector<double> even(static_cast<size_t>(2 * n));
  for (size_t i = 0; i < even.size(); ++i) even[i] = c.rank + static_cast<double>(i) / 10;
  int64_t es = 2 * n;
  d = make_op(HVD_OPTYPE_ALLTOALL, "a2a.even", HVD_FLOAT64, &es, 1);
  d.input = even.data();
  if (c.ok(hvd_enqueue(&d, &h), "a2a.even") && c.ok(c.wait(h), "a2a.even")) {
    std::vector<int64_t> out_shape;
    std::vector<double> out;
    if (read_output(c, h, "a2a.even", out_shape, out)) {
      for (int s = 0; s < n; ++s) {
        double want = s + (2.0 * c.rank + 1) / 10;
        if (std::fabs(out[static_cast<size_t>(2 * s + 1)] - want) > 1e-12) c.problem("a2a.even");
      }
    }
    hvd_release(h);
  }
  if (n > 1) {
    int64_t odd = n + 1;
    d = make_op(HVD_OPTYPE_ALLTOALL, "a2a.bad", HVD_FLOAT64, &odd, 1);
    std::vector<double> buf(static_cast<size_t>(odd));
    d.input = buf.data();
    c.expect_error(hvd_enqueue(&d, &h), HVD_ERR_INVALID_ARGUMENT, "a2a uneven without splits",
                   {"cannot be split evenly"});
  }
}

}  // namespace ops_check
