#include "k8s/client/exec_credential.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "k8s/client/errors.h"
#include "k8s/client/json_fields.h"
#include "k8s/client/time_format.h"

extern char** environ;

namespace fiber::k8s {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// A credential this close to its expiry is not used any more: a request may take that long.
constexpr auto kExpirySkew = std::chrono::seconds(10);
// The end of the plugin's stderr that an error quotes.
constexpr std::size_t kQuotedStderr = 2048;

std::string encode_base64(const std::string& bytes) {
  std::string encoded(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                      reinterpret_cast<const unsigned char*>(bytes.data()),
                                      static_cast<int>(bytes.size()));
  encoded.resize(written > 0 ? static_cast<std::size_t>(written) : 0);
  return encoded;
}

// What the plugin reads from KUBERNETES_EXEC_INFO: an ExecCredential with only the spec set.
std::string exec_info(const ExecPlugin& plugin, const ExecClusterInfo& cluster) {
  json spec = {{"interactive", false}};
  if (plugin.provide_cluster_info) {
    json info = {{"server", cluster.server}};
    if (!cluster.ca_pem.empty()) info["certificate-authority-data"] = encode_base64(cluster.ca_pem);
    if (cluster.insecure_skip_tls_verify) info["insecure-skip-tls-verify"] = true;
    spec["cluster"] = std::move(info);
  }
  return json{{"apiVersion", plugin.api_version}, {"kind", "ExecCredential"}, {"spec", spec}}
      .dump();
}

// A pipe whose ends are closed when it goes out of scope.
struct Pipe {
  int fds[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fds, O_CLOEXEC) != 0) throw ConfigError("cannot make a pipe for an exec plugin");
  }
  ~Pipe() {
    for (int fd : fds)
      if (fd >= 0) ::close(fd);
  }
  void close_end(int which) {
    ::close(fds[which]);
    fds[which] = -1;
  }
};

struct PluginRun {
  int status = 0;
  bool timed_out = false;
  std::string out;
  std::string err;
};

PluginRun spawn_and_read(const ExecPlugin& plugin, const std::vector<std::string>& environment,
                         std::chrono::seconds limit, const std::string& who) {
  Pipe out;
  Pipe err;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out.fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fds[1], STDERR_FILENO);
  std::vector<char*> argv{const_cast<char*>(plugin.command.c_str())};
  for (const std::string& arg : plugin.args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& variable : environment)
    envp.push_back(const_cast<char*>(variable.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned =
      ::posix_spawnp(&pid, plugin.command.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    std::string message = who + " cannot be run: " + std::strerror(spawned);
    if (spawned == ENOENT && !plugin.install_hint.empty())
      message += " (" + plugin.install_hint + ")";
    throw ConfigError(message);
  }
  out.close_end(1);
  err.close_end(1);
  PluginRun run;
  const auto deadline = Clock::now() + limit;
  pollfd fds[2] = {{out.fds[0], POLLIN, 0}, {err.fds[0], POLLIN, 0}};
  std::string* sinks[2] = {&run.out, &run.err};
  int open = 2;
  while (open > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      run.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    const int ready = ::poll(fds, 2, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buffer[4096];
      const ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        sinks[i]->append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open;
      }
    }
  }
  while (::waitpid(pid, &run.status, 0) < 0 && errno == EINTR) {
  }
  return run;
}

std::string tail_of(const std::string& text) {
  std::string tail = text.size() > kQuotedStderr ? text.substr(text.size() - kQuotedStderr) : text;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  return tail;
}

}  // namespace

ExecCredential run_exec_plugin(const ExecPlugin& plugin, const ExecClusterInfo& cluster,
                               std::chrono::seconds limit) {
  const std::string who =
      "the exec credential plugin \"" + plugin.command + "\" of user \"" + plugin.user + "\"";
  if (plugin.interactive_mode == "Always") {
    throw ConfigError(who +
                      " needs a terminal (interactiveMode Always), which this program has none "
                      "of: get a credential it can use without one");
  }
  std::vector<std::string> environment;
  for (char** variable = environ; *variable != nullptr; ++variable) {
    const std::string text(*variable);
    const std::string name = text.substr(0, text.find('='));
    bool replaced = name == "KUBERNETES_EXEC_INFO";
    for (const auto& [own, value] : plugin.env) replaced = replaced || own == name;
    if (!replaced) environment.push_back(text);
  }
  for (const auto& [name, value] : plugin.env) environment.push_back(name + "=" + value);
  environment.push_back("KUBERNETES_EXEC_INFO=" + exec_info(plugin, cluster));

  const PluginRun run = spawn_and_read(plugin, environment, limit, who);
  if (run.timed_out) {
    throw ConfigError(who + " gave no credential within " + std::to_string(limit.count()) +
                      " s and was killed");
  }
  if (WIFSIGNALED(run.status) || WEXITSTATUS(run.status) != 0) {
    const std::string how = WIFSIGNALED(run.status)
                                ? "was killed by signal " + std::to_string(WTERMSIG(run.status))
                                : "exited with status " + std::to_string(WEXITSTATUS(run.status));
    const std::string said = tail_of(run.err);
    throw ConfigError(who + " " + how + (said.empty() ? "" : ": " + said));
  }
  json answer;
  try {
    answer = json::parse(run.out);
  } catch (const json::exception&) {
    throw ConfigError(who + " printed no JSON ExecCredential: \"" + tail_of(run.out) + "\"");
  }
  if (!answer.is_object() || string_field(answer, "kind") != "ExecCredential") {
    throw ConfigError(who + " printed no ExecCredential (kind \"" +
                      (answer.is_object() ? string_field(answer, "kind") : "") + "\")");
  }
  if (string_field(answer, "apiVersion") != plugin.api_version) {
    throw ConfigError(who + " answered with apiVersion \"" + string_field(answer, "apiVersion") +
                      "\", not the kubeconfig's \"" + plugin.api_version + "\"");
  }
  const json status = answer.value("status", json::object());
  if (!status.is_object()) throw ConfigError(who + " printed an ExecCredential without a status");
  ExecCredential credential;
  credential.token = string_field(status, "token");
  credential.client_cert_pem = string_field(status, "clientCertificateData");
  credential.client_key_pem = string_field(status, "clientKeyData");
  if (credential.client_cert_pem.empty() != credential.client_key_pem.empty()) {
    throw ConfigError(who +
                      " gave a client certificate without its key, or a key without its "
                      "certificate");
  }
  if (credential.token.empty() && credential.client_cert_pem.empty()) {
    throw ConfigError(who + " gave neither a token nor a client certificate");
  }
  if (const std::string expiry = string_field(status, "expirationTimestamp"); !expiry.empty()) {
    credential.expires = parse_time(expiry);
    if (!credential.expires) {
      throw ConfigError(who + " gave an expirationTimestamp that is no RFC 3339 time: \"" + expiry +
                        "\"");
    }
  }
  return credential;
}

ExecCredentialSource::ExecCredentialSource(ExecPlugin plugin, ExecClusterInfo cluster)
    : plugin_(std::move(plugin)), cluster_(std::move(cluster)) {}

ExecCredential ExecCredentialSource::current() {
  std::lock_guard lock(mutex_);
  const bool fresh = cached_ && (!cached_->expires || *cached_->expires - kExpirySkew >
                                                          std::chrono::system_clock::now());
  if (!fresh) cached_ = run_exec_plugin(plugin_, cluster_);
  return *cached_;
}

void ExecCredentialSource::invalidate(const std::string& token) {
  std::lock_guard lock(mutex_);
  if (cached_ && cached_->token == token) cached_.reset();
}

}  // namespace fiber::k8s
