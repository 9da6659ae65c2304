// libFuzzer target: what the Kubernetes client reads from an API server and a user's files. The
// first byte picks what the rest is: a line of a watch stream, an error answer's body, the
// ConfigMap a FiberJob's launcher reads its release list and requested workers from, a
// timestamp, or a kubeconfig file. The property: read, or refused with the client's error
// (TransportError, ApiError, ConfigError) naming what is wrong; no crash or sanitizer report.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/client/api_client.h"
#include "k8s/client/errors.h"
#include "k8s/client/kube_config.h"
#include "k8s/client/release_request.h"
#include "k8s/client/time_format.h"

namespace {

using nlohmann::json;

void read(unsigned kind, std::string_view text) {
  switch (kind % 5) {
    case 0: {
      const auto event = fiber::k8s::parse_watch_event(text, "/api/v1/pods");
      if (event) (void)event->object.dump();
      break;
    }
    case 1: {
      const fiber::k8s::ApiError error(500, "GET", "/api/v1/pods", std::string(text));
      (void)error.reason();
      break;
    }
    case 2: {
      const json config_map = json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (config_map.is_discarded()) break;
      std::vector<std::string> refused;
      const auto names = fiber::k8s::parse_release_list(config_map, refused);
      (void)fiber::k8s::parse_requested_workers(config_map, refused);
      (void)fiber::k8s::release_list_text(names);
      break;
    }
    case 3:
      (void)fiber::k8s::parse_time(text);
      break;
    default: {
      static const std::string path = "/tmp/fibermpi-fuzz-kubeconfig-" + std::to_string(::getpid());
      std::ofstream(path, std::ios::binary) << text;
      (void)fiber::k8s::load_kubeconfig(path);
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  try {
    read(data[0], std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  } catch (const fiber::k8s::ClientError&) {
    // TransportError, ApiError or ConfigError: refused, naming what.
  }
  return 0;
}
