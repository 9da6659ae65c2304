// Writes the seed corpora of the fuzz targets, each in its input format: for fuzz_wire one
// message of every kind as the runtime encodes and frames it, with the values a run sends; for
// fuzz_serial a value of every type it decodes (the type's index, then its bytes); for
// fuzz_config every key at its default, as fiber.yaml and as its FIBER_* variable; for
// fuzz_join_handshake a greeting, an answer, a proof and a grant as the two sides make them; for
// fuzz_launch_site the environments of a Slurm allocation, mpirun with a hostfile, a FiberJob
// pod and LSF; for fuzz_k8s_client a watch event, an error body, a release ConfigMap, a time and
// a kubeconfig.
// Usage: fuzz_seeds <corpus folder>   (a subfolder per target: wire/, serial/, config/,
// join_handshake/, launch_site/, k8s_client/)
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fiber/base/config_file.h"
#include "fiber/init.h"
#include "fiber/kubernetes/join_handshake.h"
#include "fiber/runtime/protocol.h"
#include "serial_types.h"

namespace {

using namespace fiber::internal;
using namespace std::chrono_literals;

std::vector<std::byte> bytes_of(const std::string& text) {
  const auto* data = reinterpret_cast<const std::byte*>(text.data());
  return {data, data + text.size()};
}

fiber::detail::TaskSpec sample_task() {
  fiber::detail::TaskSpec task;
  task.invoker = {11, 4096};
  task.fn = {11, 8192};
  task.args = bytes_of("arguments of the task");
  task.produces = {3, 4};
  return task;
}

void write(const std::string& folder, const Outgoing& out, const std::string& name) {
  const fiber::bridge::Envelope envelope{
      static_cast<uint32_t>(out.kind), out.flags, out.id, out.aux, 4321, 7};
  const auto bytes = fiber::bridge::frame(envelope, out.payload());
  std::ofstream(folder + "/" + name, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

template <size_t... I>
void write_defaults(const std::string& folder, std::index_sequence<I...>) {
  (write(folder, std::tuple_element_t<I, wire::Messages>{}.encode(),
         "default-" + std::string(kind_name(
                          static_cast<uint32_t>(std::tuple_element_t<I, wire::Messages>::kKind)))),
   ...);
}

template <size_t... I>
void write_serial_seeds(const std::string& folder, std::index_sequence<I...>) {
  const auto values = fiber::fuzz::sample_values();
  (
      [&] {
        std::ofstream file(folder + "/type-" + std::to_string(I), std::ios::binary);
        const char which = static_cast<char>(I);
        file.write(&which, 1);
        const auto bytes = fiber::serial::to_bytes(std::get<I>(values));
        file.write(reinterpret_cast<const char*>(bytes.data()),
                   static_cast<std::streamsize>(bytes.size()));
      }(),
      ...);
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// Every key at its default: as a fiber.yaml line (nested keys indented under their section)
/// and as its FIBER_* variable's value.
void write_config_seeds(const std::string& folder) {
  const fiber::Config defaults;
  const auto keys = config_keys();
  std::string document;
  std::string section;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    const std::string value = config_value_text(defaults, key);
    const auto dot = key.find('.');
    if (dot == std::string::npos) {
      document += key + ": " + value + "\n";
    } else {
      if (key.substr(0, dot) != section) {
        section = key.substr(0, dot);
        document += section + ":\n";
      }
      document += "  " + key.substr(dot + 1) + ": " + value + "\n";
    }
    write_bytes(folder + "/variable-" + std::to_string(i),
                std::string(1, '\1') + static_cast<char>(i) + value);
  }
  write_bytes(folder + "/fiber.yaml", std::string(2, '\0') + document);
}

/// Each step of a handshake, in the shape the two sides make them (the HMACs cannot be right:
/// they cover the other side's fresh nonce).
void write_join_seeds(const std::string& folder) {
  const std::string path = folder + "/token.tmp";
  write_bytes(path, "0123456789abcdef0123456789abcdef");
  const JoinToken token = JoinToken::from_file(path);
  std::remove(path.c_str());
  const std::string greeting = MasterHandshake(token).greeting();
  write_bytes(folder + "/answer", std::string("\0\40", 2) + std::string(64, 'a'));
  write_bytes(folder + "/greeting-proof", std::string("\1\0", 2) + greeting + std::string(32, 'p'));
  write_bytes(folder + "/grant",
              std::string("\2\0\0\14", 4) + "tag#0$port:1" + std::string(32, 'h'));
}

/// Environments of the launch sites a program meets, in fuzz_launch_site's lines: the character
/// 96 + i names variable i of its list.
void write_launch_site_seeds(const std::string& folder) {
  const auto line = [](int variable, const std::string& value) {
    return std::string(1, static_cast<char>(96 + variable)) + "=" + value + "\n";
  };
  write_bytes(folder + "/slurm", line(0, "4242") + line(1, "8") + line(4, "2") +
                                     line(6, "node-[1-2]") + line(7, "4") + line(8, "4(x2)"));
  write_bytes(folder + "/mpirun", line(9, "1") + line(10, "4") + line(21, "") +
                                      "node-a slots=2\nnode-b:2 # second host\n");
  write_bytes(folder + "/fiberjob", line(15, "job-worker-0") + line(16, "0b1c-uid") +
                                        line(17, "worker") + line(23, "1500m"));
  write_bytes(folder + "/lsf", line(14, "host-a host-a host-b") + line(23, "4Gi"));
}

/// What an API server sends and a user writes, as fuzz_k8s_client reads them: the first byte
/// picks the reader.
void write_k8s_client_seeds(const std::string& folder) {
  write_bytes(folder + "/watch-event",
              std::string(1, '\0') +
                  R"({"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":)"
                  R"({"name":"job-worker-0","namespace":"default","resourceVersion":"1042",)"
                  R"("labels":{"fibermpi.io/job":"job"}},"status":{"phase":"Running"}}})");
  write_bytes(folder + "/watch-error",
              std::string(1, '\0') +
                  R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":)"
                  R"("Failure","message":"too old resource version: 1, oldest 1042","reason":)"
                  R"("Expired","code":410}})");
  write_bytes(folder + "/status-body",
              std::string(1, '\1') +
                  R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":)"
                  R"("pods \"x\" not found","reason":"NotFound","code":404})");
  write_bytes(folder + "/release-config-map",
              std::string(1, '\2') +
                  R"({"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"job-release"},)"
                  R"("data":{"workersToDelete":"job-worker-1\njob-worker-3\n",)"
                  R"("workersRequested":"4"}})");
  write_bytes(folder + "/time", std::string(1, '\3') + "2026-12-07T20:41:00.123456Z");
  write_bytes(folder + "/kubeconfig", std::string(1, '\4') + R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: dev
  user:
    token: abcdef
contexts:
- name: dev
  context:
    cluster: dev
    user: dev
    namespace: default
)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds <corpus folder>\n");
    return 2;
  }
  const std::string corpus = argv[1];
  write_serial_seeds(corpus + "/serial",
                     std::make_index_sequence<std::tuple_size_v<fiber::fuzz::Types>>{});
  write_config_seeds(corpus + "/config");
  write_join_seeds(corpus + "/join_handshake");
  write_launch_site_seeds(corpus + "/launch_site");
  write_k8s_client_seeds(corpus + "/k8s_client");
  const std::string folder = corpus + "/wire";
  write_defaults(folder, std::make_index_sequence<std::tuple_size_v<wire::Messages>>{});
  write(folder, wire::Hello{protocol_version(), 77, 1234, "node-1", "pod-a/uid-9"}.encode(),
        "hello");
  write(folder, wire::Welcome{42, "head", "/tmp/fibermpi-run", 250ms}.encode(), "welcome");
  write(folder, wire::Run{7, true, "Worker-3", sample_task(), "0,1"}.encode(), "run");
  write(folder, wire::Exited{7, -15, "stopped with its group", true, true}.encode(), "exited");
  TaskMessageBuilder builder;
  builder.add(10, bytes_of("first chunk"));
  builder.add(11, bytes_of(""));
  write(folder, wire::PoolTasks{2, builder.bytes()}.encode(), "pool-tasks");
  fiber::serial::Writer body;
  wire::PoolResult::begin_results(body);
  fiber::serial::save(body, 99);
  wire::PoolResult::finish_results(body, 12345);
  write(folder, wire::PoolResult{10, 2, PoolOutcome::kResults, true, body.take()}.encode(),
        "pool-result");
  write(folder, wire::QueueCall{5, 6, wire::QueueOp::kPut, 1500, bytes_of("item")}.encode(),
        "queue-call");
  write(folder, wire::GroupPlan{3, 1, 0, 2, 1, {{0, 1}, {0}}}.encode(), "group-plan");
  write(folder, wire::GroupPorts{3, 1, {"port-a", "port-b"}}.encode(), "group-ports");
  PoolSettings settings;
  settings.processes = 4;
  settings.initializer = sample_task();
  settings.idle_timeout = 1500ms;
  write(folder, wire::PoolCreate{8, settings}.encode(), "pool-create");
  write(folder,
        wire::PoolSubmit{9, 2, 17, {3, 1}, {bytes_of("chunk one"), bytes_of("two")}}.encode(),
        "pool-submit");
  write(folder,
        wire::JobChunk{2, 17, 0, bytes_of("results"), 8,
                       wire::ErrorAccount{wire::ErrorAccount::Type::kRemote, "ValueError", "bad"}}
            .encode(),
        "job-chunk");
  write(folder, wire::GroupEvent{3, 1, true, {0, std::nullopt}, {}, {1234, 1235}}.encode(),
        "group-event");
  write(folder, wire::ProcessEvent{12, true, 4321, "node-2", 3, "called exit(3)", {}}.encode(),
        "process-event");
  write(folder, wire::ObjectCall{4, 1, 2, -1, bytes_of("arguments")}.encode(), "object-call");
  write(folder, wire::Reply{4, Outcome::kEof, 0, bytes_of("nobody left")}.encode(), "reply");
  return 0;
}
