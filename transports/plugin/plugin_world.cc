#include "transports/plugin/plugin_world.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "common/store.h"

namespace hvd::transports::plugin {

static_assert(HVD_OK == static_cast<int32_t>(common::StatusCode::kOk));
static_assert(HVD_ERR_INTERNAL == static_cast<int32_t>(common::StatusCode::kInternal));

namespace {

int32_t store_set(void* self, const char* key, const void* value, size_t length,
                  hvd_plugin_status* status) {
  auto* store = static_cast<common::Store*>(self);
  std::string bytes(static_cast<const char*>(value), length);
  Status done = store->set(key, bytes);
  to_plugin_status(done, status);
  return status->code;
}

int32_t store_get(void* self, const char* key, int64_t timeout_ms, void* value, size_t capacity,
                  size_t* length, hvd_plugin_status* status) {
  auto* store = static_cast<common::Store*>(self);
  auto got = store->get({key}, std::chrono::milliseconds(timeout_ms));
  if (!got.is_ok()) {
    to_plugin_status(got.status(), status);
    return status->code;
  }
  const std::string& bytes = got.value().front();
  *length = bytes.size();
  if (bytes.size() > capacity) {
    to_plugin_status(common::invalid_argument("store value of '" + std::string(key) + "' is " +
                                              std::to_string(bytes.size()) + " bytes, over the " +
                                              std::to_string(capacity) + " given"),
                     status);
    return status->code;
  }
  std::memcpy(value, bytes.data(), bytes.size());
  to_plugin_status(Status::ok(), status);
  return HVD_OK;
}

}  // namespace

hvd_plugin_world make_world(const TransportContext& context) {
  const common::Placement& placement = context;
  hvd_plugin_world world{};
  world.struct_size = sizeof(hvd_plugin_world);
  world.rank = placement.rank;
  world.size = placement.size;
  world.local_rank = placement.local_rank;
  world.local_size = placement.local_size;  // 0: unknown, as in a Placement
  world.cross_rank = placement.cross_rank;
  world.cross_size = placement.cross_size;
  world.device = context.device;
  world.timeout_ms = context.timeout.count();
  world.key_prefix = context.key_prefix.c_str();
  if (context.store != nullptr) world.store = {context.store, &store_set, &store_get};
  return world;
}

void to_plugin_status(const Status& status, hvd_plugin_status* out) {
  out->code = static_cast<int32_t>(status.code());
  const std::string& message = status.message();
  const size_t n = std::min(message.size(), sizeof(out->message) - 1);
  std::memcpy(out->message, message.data(), n);
  out->message[n] = '\0';
}

Status from_plugin_status(int32_t code, const hvd_plugin_status& status, std::string_view what) {
  if (code == HVD_OK) return Status::ok();
  const auto known = code > HVD_OK && code <= HVD_ERR_INTERNAL
                         ? static_cast<common::StatusCode>(code)
                         : common::StatusCode::kInternal;
  std::string message(status.message, strnlen(status.message, sizeof(status.message)));
  if (message.empty()) message = "error code " + std::to_string(code) + ", no message";
  return Status(known, std::string(what) + ": " + message);
}

}  // namespace hvd::transports::plugin
