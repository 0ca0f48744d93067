// StreamedTransport::async_error through the transports that wrap others
// (plugin ABI version 4): HierarchicalTransport asks its three parts and
// keeps the first failure for good; StagedTransport asks its CPU transport.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <utility>

#include "transports/device_work.h"
#include "transports/hierarchical/hierarchical_transport.h"
#include "transports/staging/staged_transport.h"
#include "transports/transport_base.h"

namespace hvd::transports {

namespace {

// A world of one whose ops do nothing; its asynchronous error is settable.
class Part final : public TransportBase, public StreamedTransport {
 public:
  explicit Part(std::string name, std::shared_ptr<Status> error)
      : name_(std::move(name)), error_(std::move(error)) {}
  std::string_view name() const override { return name_; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void set_stream(void* /*stream*/) override {}
  Status async_error() override { return *error_; }

 private:
  Status do_allreduce(Buffer, DataType, ReduceOp) override { return Status::ok(); }
  Status do_allgatherv(ConstBuffer, Buffer, std::span<const int64_t>) override {
    return Status::ok();
  }
  Status do_broadcast(Buffer, int) override { return Status::ok(); }
  Status do_alltoallv(ConstBuffer, std::span<const int64_t>, Buffer,
                      std::span<const int64_t>) override {
    return Status::ok();
  }
  Status do_reducescatter(ConstBuffer, Buffer, std::span<const int64_t>, DataType,
                          ReduceOp) override {
    return Status::ok();
  }
  Status do_barrier() override { return Status::ok(); }
  void on_abort(const Status&, const Status&) override {}

  std::string name_;
  std::shared_ptr<Status> error_;
};

class NoDevice final : public DeviceWork {
 public:
  const std::string& name() const override { return name_; }
  int device() const override { return 0; }
  common::Result<void*> alloc(size_t, bool) override { return static_cast<void*>(nullptr); }
  void free(void*, bool) override {}
  Status copy(std::span<const DeviceCopy>, void*) override { return Status::ok(); }
  Status scale(void*, size_t, common::DataType, int, double, void*) override {
    return Status::ok();
  }
  Status synchronize(void*) override { return Status::ok(); }
  void* comm_stream() const override { return nullptr; }
  Status stream_wait(void*, void*, void*) override { return Status::ok(); }

 private:
  std::string name_ = "no device";
};

}  // namespace

TEST_CASE("async_error: hierarchical asks its parts and keeps the first failure") {
  auto local = std::make_shared<Status>();
  auto cross = std::make_shared<Status>();
  auto flat = std::make_shared<Status>();
  hierarchical::HierarchicalTransport t(std::make_unique<Part>("local", local),
                                        std::make_unique<Part>("cross", cross),
                                        std::make_unique<Part>("flat", flat));
  CHECK(t.async_error().is_ok());
  *cross = common::unavailable("cross: a peer is gone");
  *flat = common::unavailable("flat: later");
  Status first = t.async_error();
  CHECK(first.message() == "cross: a peer is gone");
  CHECK(t.barrier().message() == first.message());  // failed for good
  *cross = Status::ok();
  CHECK(t.async_error().message() == first.message());
}

TEST_CASE("async_error: staged asks its CPU transport") {
  auto error = std::make_shared<Status>();
  staging::StagedTransport t(std::make_unique<Part>("cpu", error),
                             std::make_shared<NoDevice>());
  CHECK(t.async_error().is_ok());
  *error = common::unavailable("cpu: gone");
  CHECK(t.async_error().message() == "cpu: gone");
}

}  // namespace hvd::transports
