// fiber-controller: runs the FiberJob controller against the API server of a kubeconfig or of the
// pod it runs in. Exit status: 0 after SIGTERM/SIGINT, 2 for bad flags or configuration, 1 when
// it cannot start (a port taken).
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "k8s/client/errors.h"
#include "k8s/client/kube_config.h"
#include "k8s/client/leader_election.h"
#include "k8s/client/time_format.h"
#include "k8s/controller/fiberjob_controller.h"
#include "k8s/controller/http_endpoint.h"

namespace {

using namespace fiber::k8s;
using namespace fiber::k8s::controller;

struct Flags {
  std::string kubeconfig;
  std::string context;
  std::string watch_namespace;
  int workers = 4;
  bool leader_elect = true;
  std::string lease_name = "fiber-controller";
  std::string lease_namespace;
  std::string identity;
  int lease_duration_s = 15;
  int renew_deadline_s = 10;
  int retry_period_s = 2;
  std::string health_address = ":8081";
  std::string metrics_address = ":8080";
  std::string name_service_image = kDefaultNameServiceImage;
  std::vector<std::string> api_server_egress;
};

std::string default_identity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return std::string(host[0] != '\0' ? host : "fiber-controller") + "_" + std::to_string(getpid());
}

std::string default_lease_namespace() {
  const char* pod_namespace = std::getenv("POD_NAMESPACE");
  return pod_namespace != nullptr && *pod_namespace != '\0' ? pod_namespace : "fiber-system";
}

// Lines "TIME LEVEL message" on stderr, whole lines even from many threads.
LogSink timestamped_stderr_sink() {
  auto mutex = std::make_shared<std::mutex>();
  return [mutex](LogLevel level, std::string_view message) {
    const char* name = level == LogLevel::kError     ? "error"
                       : level == LogLevel::kWarning ? "warning"
                                                     : "info";
    const std::string line = format_micro_time(std::chrono::system_clock::now()) + " " + name +
                             " " + std::string(message) + "\n";
    std::lock_guard lock(*mutex);
    std::fwrite(line.data(), 1, line.size(), stderr);
  };
}

ClusterAccess load_access(const Flags& flags) {
  if (flags.kubeconfig.empty() && flags.context.empty() && in_cluster_environment()) {
    return load_in_cluster();
  }
  return load_kubeconfig(flags.kubeconfig, flags.context);
}

// SIGTERM and SIGINT are blocked in every thread and taken by sigwait() on one of its own.
class StopSignal {
 public:
  StopSignal() {
    sigemptyset(&signals_);
    sigaddset(&signals_, SIGTERM);
    sigaddset(&signals_, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
  }
  void start() {
    thread_ = std::thread([this] {
      int signal = 0;
      sigwait(&signals_, &signal);
      {
        std::lock_guard lock(mutex_);
        received_ = signal;
      }
      changed_.notify_all();
    });
    thread_.detach();
  }
  /// Waits up to `timeout` for a signal; returns true once one came.
  bool wait_for(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [this] { return received_ != 0; });
  }
  int received() {
    std::lock_guard lock(mutex_);
    return received_;
  }

 private:
  sigset_t signals_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int received_ = 0;
};

int run(const Flags& flags) {
  StopSignal stop_signal;
  const LogSink log = timestamped_stderr_sink();
  ClusterAccess access;
  try {
    access = load_access(flags);
  } catch (const ConfigError& error) {
    std::cerr << "fiber-controller: " << error.what() << "\n";
    return 2;
  }
  log_to(log, LogLevel::kInfo,
         "fiber-controller " + flags.identity + " using " + access.origin + " (" + access.server +
             "), namespace " + (flags.watch_namespace.empty() ? "all" : flags.watch_namespace));

  ApiClient client(std::move(access));
  EventRecorderOptions recorder_options;
  recorder_options.instance = flags.identity;
  recorder_options.log = log;
  EventRecorder recorder(client, recorder_options);
  ControllerMetrics metrics;
  ControllerOptions options;
  options.watch_namespace = flags.watch_namespace;
  options.workers = flags.workers;
  options.reconcile.name_service_image = flags.name_service_image;
  // Where pods reach the API server, for egress policies; otherwise the controller reads
  // EndpointSlice default/kubernetes when a job needs them.
  for (const std::string& text : flags.api_server_egress)
    options.reconcile.api_server_egress.push_back(parse_egress_peer(text));
  options.log = log;
  FiberJobController controller(client, recorder, metrics, options);
  std::atomic<bool> leading{false};

  // Ready once the caches are synced, leader or not: a standby with warm caches can take over at
  // once, and a rollout must not wait for a leadership it cannot get while the old pod holds it.
  std::optional<HttpEndpoint> health;
  std::optional<HttpEndpoint> metrics_endpoint;
  try {
    health.emplace(flags.health_address);
    HttpEndpoint* metrics_server = &*health;
    if (flags.metrics_address != flags.health_address) {
      metrics_endpoint.emplace(flags.metrics_address);
      metrics_server = &*metrics_endpoint;
    }
    health->get("/healthz", [] { return HttpAnswer{200, "ok\n"}; });
    health->get("/readyz", [&controller] {
      return controller.caches_synced() ? HttpAnswer{200, "ok\n"}
                                        : HttpAnswer{503, "caches not synced yet\n"};
    });
    metrics_server->get("/metrics", [&] {
      MetricsSnapshot snapshot{controller.queue_depth(), client.stats(), leading.load()};
      return HttpAnswer{200, metrics.render(snapshot), "text/plain; version=0.0.4; charset=utf-8"};
    });
    health->start();
    if (metrics_endpoint) metrics_endpoint->start();
    log_to(log, LogLevel::kInfo, "serving /healthz and /readyz on " + health->address());
    log_to(log, LogLevel::kInfo,
           "serving /metrics on " + (metrics_endpoint ? metrics_endpoint : health)->address());
  } catch (const std::invalid_argument& error) {
    std::cerr << "fiber-controller: " << error.what() << "\n";
    return 2;
  } catch (const std::runtime_error& error) {
    std::cerr << "fiber-controller: " << error.what() << "\n";
    return 1;
  }

  stop_signal.start();
  controller.start_informers();
  while (!controller.wait_for_sync(std::chrono::milliseconds(200))) {
    if (stop_signal.received() != 0) break;
  }
  std::optional<LeaderElector> elector;
  if (stop_signal.received() == 0) {
    log_to(log, LogLevel::kInfo, "caches synced");
    if (flags.leader_elect) {
      LeaderElectionConfig election;
      election.identity = flags.identity;
      election.lease_name = flags.lease_name;
      election.lease_namespace = flags.lease_namespace;
      election.lease_duration = std::chrono::seconds(flags.lease_duration_s);
      election.renew_deadline = std::chrono::seconds(flags.renew_deadline_s);
      election.retry_period = std::chrono::seconds(flags.retry_period_s);
      election.log = log;
      election.on_started_leading = [&] {
        log_to(log, LogLevel::kInfo, "leading: reconciling");
        leading = true;
        controller.start_workers();
      };
      election.on_stopped_leading = [&] {
        log_to(log, LogLevel::kInfo, "no longer leading: reconciling stops");
        controller.stop_workers();
        leading = false;
      };
      election.on_new_leader = [&](const std::string& holder) {
        log_to(log, LogLevel::kInfo, "leader is " + (holder.empty() ? "nobody" : holder));
      };
      try {
        elector.emplace(client, election);
      } catch (const std::invalid_argument& error) {
        std::cerr << "fiber-controller: " << error.what() << "\n";
        return 2;
      }
      controller.set_lead_check([&elector] { return elector->is_leader(); });
      elector->start();
    } else {
      leading = true;
      controller.start_workers();
    }
  }
  while (!stop_signal.wait_for(std::chrono::seconds(1))) {
  }
  log_to(log, LogLevel::kInfo,
         std::string("stopping on ") + (stop_signal.received() == SIGINT ? "SIGINT" : "SIGTERM"));
  if (elector) elector->stop();
  controller.stop();
  if (metrics_endpoint) metrics_endpoint->stop();
  health->stop();
  log_to(log, LogLevel::kInfo, "stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  flags.identity = default_identity();
  flags.lease_namespace = default_lease_namespace();
  CLI::App app{"fiber-controller: the FiberJob operator's controller (fiberjobs.fibermpi.io)"};
  app.set_version_flag("--version", std::string("fiber-controller ") + FIBER_CONTROLLER_VERSION,
                       "print the version and exit");
  app.add_option("--kubeconfig", flags.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)");
  app.add_option("--context", flags.context, "kubeconfig context (default: its current-context)");
  app.add_option("--namespace", flags.watch_namespace, "namespace to watch (default: all)");
  app.add_option("--workers", flags.workers, "jobs reconciled at once")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--leader-elect", flags.leader_elect,
                 "elect one active controller with a Lease (true/false)")
      ->capture_default_str();
  app.add_option("--lease-name", flags.lease_name,
                 "Lease name; the Role of k8s/config/rbac/leader_election_role.yaml allows "
                 "reading and renewing only the Lease named fiber-controller (resourceNames), so "
                 "another name needs that Role changed too, or every renewal is refused (403)")
      ->capture_default_str();
  app.add_option("--lease-namespace", flags.lease_namespace,
                 "Lease namespace (default: $POD_NAMESPACE or fiber-system)")
      ->capture_default_str();
  app.add_option("--identity", flags.identity, "this candidate's name in the Lease")
      ->capture_default_str();
  app.add_option("--lease-duration", flags.lease_duration_s, "seconds a Lease holds unrenewed")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option("--renew-deadline", flags.renew_deadline_s,
                 "seconds the leader tries to renew before it gives up (< lease duration)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option("--retry-period", flags.retry_period_s, "seconds between election attempts")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app.add_option("--health-addr", flags.health_address, "host:port of /healthz and /readyz")
      ->capture_default_str();
  app.add_option("--metrics-addr", flags.metrics_address, "host:port of /metrics")
      ->capture_default_str();
  app.add_option("--api-server-egress", flags.api_server_egress,
                 "ADDRESS:PORT or CIDR:PORT where pods reach the API server, for the egress policy "
                 "of a namespace that isolates egress (repeatable; default: the endpoints of "
                 "EndpointSlice default/kubernetes)")
      ->check([](const std::string& text) {
        try {
          parse_egress_peer(text);
          return std::string();
        } catch (const std::invalid_argument& e) {
          return std::string(e.what());
        }
      });
  // Also from the environment: kustomize's `images:` rewrites an env value of the Deployment
  // (k8s/config/manager/kustomizeconfig.yaml), never part of an argument.
  app.add_option("--name-service-image", flags.name_service_image,
                 "image of the default name-service pod (ompi-server)")
      ->envname("FIBER_NAME_SERVICE_IMAGE")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    std::cerr << "fiber-controller: " << error.what() << " (see --help)\n";
    return 2;
  }
  if (flags.renew_deadline_s >= flags.lease_duration_s) {
    std::cerr << "fiber-controller: --renew-deadline must be less than --lease-duration\n";
    return 2;
  }
  return run(flags);
}
