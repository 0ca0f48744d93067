/* Setting an hvd_plugin_status, for the test plugins of this folder. */
#ifndef HVD_TEST_PLUGIN_STATUS_H_
#define HVD_TEST_PLUGIN_STATUS_H_

#include <stdio.h>

#include "transports/plugin/transport_plugin.h"

static inline int32_t fail(hvd_plugin_status* status, int32_t code, const char* message) {
  status->code = code;
  snprintf(status->message, sizeof(status->message), "%s", message);
  return code;
}

static inline int32_t ok(hvd_plugin_status* status) {
  status->code = HVD_OK;
  status->message[0] = '\0';
  return HVD_OK;
}

#endif /* HVD_TEST_PLUGIN_STATUS_H_ */
