#include "runtime/engine/message_codec.h"

#include <cstring>
#include <string>
#include <type_traits>

namespace hvd::runtime::engine {

namespace {

// payload_bytes, flags, tune generation, clock_ns, the three tune values
constexpr size_t kFixedHeader = 48;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void put_ints(const std::vector<int64_t>& v) {
    put(static_cast<uint32_t>(v.size()));
    size_t at = out_.size();
    out_.resize(at + v.size() * sizeof(int64_t));
    if (!v.empty()) std::memcpy(out_.data() + at, v.data(), v.size() * sizeof(int64_t));
  }

 private:
  std::vector<uint8_t>& out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  bool ok() const { return ok_; }
  template <typename T>
  T get() {
    if (!ok_ || in_.size() - at_ < sizeof(T)) {
      ok_ = false;
      return T{};
    }
    T v = load<T>(in_.data() + at_);
    at_ += sizeof(T);
    return v;
  }
  std::string get_string() {
    auto n = get<uint32_t>();
    if (!ok_ || in_.size() - at_ < n) {
      ok_ = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(in_.data() + at_), n);
    at_ += n;
    return s;
  }
  std::vector<int64_t> get_ints() {
    auto n = get<uint32_t>();
    if (!ok_ || (in_.size() - at_) / sizeof(int64_t) < n) {
      ok_ = false;
      return {};
    }
    std::vector<int64_t> v(n);
    if (n > 0) std::memcpy(v.data(), in_.data() + at_, n * sizeof(int64_t));
    at_ += n * sizeof(int64_t);
    return v;
  }
  bool at_end() const { return at_ == in_.size(); }

 private:
  std::span<const uint8_t> in_;
  size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace

size_t cache_words(size_t cache_capacity) { return (cache_capacity + 63) / 64; }

size_t header_bytes(size_t cache_capacity) {
  return kFixedHeader + cache_words(cache_capacity) * sizeof(uint64_t) + kInlinePayload;
}

void encode_header(const HeaderFields& fields, std::span<const uint64_t> bits,
                   std::span<const uint8_t> payload, std::span<uint8_t> out) {
  uint8_t* p = out.data();
  store(p, fields.payload_bytes);
  store(p + 8, fields.flags);
  store(p + 12, fields.tune.generation);
  store(p + 16, fields.clock_ns);
  store(p + 24, fields.tune.fusion_threshold);
  store(p + 32, fields.tune.cycle_time_ns);
  store(p + 40, fields.tune.chunk_bytes);
  if (!bits.empty()) std::memcpy(p + kFixedHeader, bits.data(), bits.size() * sizeof(uint64_t));
  if (!payload.empty() && payload.size() <= kInlinePayload) {
    std::memcpy(p + out.size() - kInlinePayload, payload.data(), payload.size());
  }
}

uint64_t HeaderView::payload_bytes() const { return load<uint64_t>(bytes_.data()); }
uint32_t HeaderView::flags() const { return load<uint32_t>(bytes_.data() + 8); }
int64_t HeaderView::clock_ns() const { return load<int64_t>(bytes_.data() + 16); }
TuneFields HeaderView::tune() const {
  TuneFields t;
  t.generation = load<uint32_t>(bytes_.data() + 12);
  t.fusion_threshold = load<int64_t>(bytes_.data() + 24);
  t.cycle_time_ns = load<int64_t>(bytes_.data() + 32);
  t.chunk_bytes = load<int64_t>(bytes_.data() + 40);
  return t;
}
size_t HeaderView::words() const {
  return (bytes_.size() - kFixedHeader - kInlinePayload) / sizeof(uint64_t);
}
std::span<const uint8_t> HeaderView::inline_payload() const {
  return bytes_.subspan(bytes_.size() - kInlinePayload, static_cast<size_t>(payload_bytes()));
}
uint64_t HeaderView::word(size_t i) const {
  return load<uint64_t>(bytes_.data() + kFixedHeader + i * sizeof(uint64_t));
}

void encode_requests(std::span<const Request* const> requests, std::vector<uint8_t>& out) {
  out.clear();
  Writer w(out);
  w.put(static_cast<uint32_t>(requests.size()));
  for (const Request* r : requests) {
    w.put_string(r->name);
    w.put(static_cast<int32_t>(r->op_type));
    w.put(static_cast<int32_t>(r->dtype));
    w.put(static_cast<int32_t>(r->reduce_op));
    w.put_ints(r->shape);
    w.put(r->root_rank);
    w.put(r->device);
    w.put(r->prescale_factor);
    w.put(r->postscale_factor);
    w.put(r->process_set_id);
    w.put(r->group_id);
    w.put(r->group_size);
    w.put_ints(r->splits);
  }
}

common::Status decode_requests(std::span<const uint8_t> payload, int32_t rank,
                               std::vector<Request>& out) {
  Reader in(payload);
  auto count = in.get<uint32_t>();
  for (uint32_t i = 0; i < count && in.ok(); ++i) {
    Request r;
    r.rank = rank;
    r.name = in.get_string();
    auto op_type = in.get<int32_t>();
    auto dtype = in.get<int32_t>();
    auto reduce_op = in.get<int32_t>();
    r.shape = in.get_ints();
    r.root_rank = in.get<int32_t>();
    r.device = in.get<int32_t>();
    r.prescale_factor = in.get<double>();
    r.postscale_factor = in.get<double>();
    r.process_set_id = in.get<int32_t>();
    r.group_id = in.get<int32_t>();
    r.group_size = in.get<int32_t>();
    r.splits = in.get_ints();
    if (!in.ok()) break;
    if (op_type < 0 || op_type > static_cast<int32_t>(OpType::kJoin) ||
        !common::is_valid_data_type(dtype) || !common::is_valid_reduce_op(reduce_op)) {
      return common::internal_error("negotiation message from rank " + std::to_string(rank) +
                                    " holds an invalid request for '" + r.name + "'");
    }
    r.op_type = static_cast<OpType>(op_type);
    r.dtype = static_cast<DataType>(dtype);
    r.reduce_op = static_cast<ReduceOp>(reduce_op);
    out.push_back(std::move(r));
  }
  if (!in.ok() || !in.at_end()) {
    return common::internal_error("negotiation message from rank " + std::to_string(rank) +
                                  " is malformed (" + std::to_string(payload.size()) + " bytes)");
  }
  return common::Status::ok();
}

}  // namespace hvd::runtime::engine
