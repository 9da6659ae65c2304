#include "k8s/client/kube_config.h"

#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

#include "k8s/client/errors.h"

namespace fiber::k8s {
namespace {

namespace fs = std::filesystem;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string read_file(const fs::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("cannot read " + what + " " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string decode_base64(const std::string& encoded, const std::string& what) {
  std::vector<unsigned char> decoded(encoded.size() / 4 * 3 + 3);
  EVP_ENCODE_CTX* context = EVP_ENCODE_CTX_new();
  if (!context) throw ConfigError("out of memory decoding " + what);
  EVP_DecodeInit(context);
  int written = 0;
  int tail = 0;
  const int update = EVP_DecodeUpdate(context, decoded.data(), &written,
                                      reinterpret_cast<const unsigned char*>(encoded.data()),
                                      static_cast<int>(encoded.size()));
  const int final = update < 0 ? -1 : EVP_DecodeFinal(context, decoded.data() + written, &tail);
  EVP_ENCODE_CTX_free(context);
  if (update < 0 || final < 0) throw ConfigError(what + " is not valid base64");
  return std::string(reinterpret_cast<const char*>(decoded.data()), written + tail);
}

std::string trim(std::string text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

// Reads one kubeconfig file and answers questions about it, naming the file in every error.
class Kubeconfig {
 public:
  explicit Kubeconfig(fs::path path) : path_(std::move(path)) {
    const std::string text = read_file(path_, "kubeconfig");
    try {
      root_ = YAML::Load(text);
    } catch (const YAML::Exception& error) {
      throw ConfigError("kubeconfig " + path_.string() + " is not valid YAML: " + error.what());
    }
    if (!root_.IsMap()) throw ConfigError("kubeconfig " + path_.string() + " is not a mapping");
  }

  std::string string_at(const YAML::Node& node, const char* key) const {
    const YAML::Node value = node[key];
    if (!value || value.IsNull()) return {};
    if (!value.IsScalar()) throw error(std::string(key) + " is not a string");
    return value.as<std::string>();
  }

  bool bool_at(const YAML::Node& node, const char* key) const {
    const YAML::Node value = node[key];
    if (!value || value.IsNull()) return false;
    try {
      return value.as<bool>();
    } catch (const YAML::Exception&) {
      throw error(std::string(key) + " is not a boolean");
    }
  }

  // The `inner` mapping of the entry called `name` in the list `list` (contexts, clusters, users).
  YAML::Node named_entry(const char* list, const char* inner, const std::string& name) const {
    const YAML::Node entries = root_[list];
    if (entries && entries.IsSequence()) {
      for (const YAML::Node& entry : entries) {
        if (entry.IsMap() && string_at(entry, "name") == name) {
          const YAML::Node body = entry[inner];
          if (!body || !body.IsMap()) {
            throw error(std::string(inner) + " \"" + name + "\" has no " + inner + " fields");
          }
          return body;
        }
      }
    }
    throw error(std::string(inner) + " \"" + name + "\" not found in " + list);
  }

  // A path from the file, relative paths being relative to the kubeconfig's folder.
  fs::path resolve(const std::string& path) const {
    const fs::path given(path);
    if (given.is_absolute()) return given;
    return path_.parent_path() / given;
  }

  // Bytes from `<key>-data` (base64) or the file named by `<key>`; empty when neither is set.
  std::string data_or_file(const YAML::Node& node, const std::string& key) const {
    const std::string data = string_at(node, (key + "-data").c_str());
    if (!data.empty()) return decode_base64(data, where() + ": " + key + "-data");
    const std::string file = string_at(node, key.c_str());
    if (file.empty()) return {};
    return read_file(resolve(file), key + " of kubeconfig " + path_.string() + ":");
  }

  // users[].user.exec: a credential plugin, as client-go reads it.
  ExecPlugin exec_plugin(const YAML::Node& exec, const std::string& user_name) const {
    const std::string entry = "user \"" + user_name + "\" exec";
    if (!exec.IsMap()) throw error(entry + " is not a mapping");
    ExecPlugin plugin;
    plugin.user = user_name;
    plugin.api_version = string_at(exec, "apiVersion");
    if (plugin.api_version != "client.authentication.k8s.io/v1" &&
        plugin.api_version != "client.authentication.k8s.io/v1beta1") {
      throw error(entry + ": apiVersion \"" + plugin.api_version +
                  "\" is not client.authentication.k8s.io/v1 or v1beta1");
    }
    plugin.command = string_at(exec, "command");
    if (plugin.command.empty()) throw error(entry + " has no command");
    // A relative path is relative to the kubeconfig, as for kubectl; a bare name is looked up
    // in PATH.
    if (plugin.command.find('/') != std::string::npos)
      plugin.command = resolve(plugin.command).lexically_normal().string();
    if (const YAML::Node args = exec["args"]; args && !args.IsNull()) {
      if (!args.IsSequence()) throw error(entry + ": args is not a list");
      for (const YAML::Node& arg : args) {
        if (!arg.IsScalar()) throw error(entry + ": an arg is not a string");
        plugin.args.push_back(arg.as<std::string>());
      }
    }
    if (const YAML::Node env = exec["env"]; env && !env.IsNull()) {
      if (!env.IsSequence()) throw error(entry + ": env is not a list");
      for (const YAML::Node& variable : env) {
        if (!variable.IsMap()) throw error(entry + ": an env entry is not a mapping");
        const std::string name = string_at(variable, "name");
        if (name.empty()) throw error(entry + ": an env entry has no name");
        plugin.env.emplace_back(name, string_at(variable, "value"));
      }
    }
    plugin.provide_cluster_info = bool_at(exec, "provideClusterInfo");
    plugin.install_hint = string_at(exec, "installHint");
    plugin.interactive_mode = string_at(exec, "interactiveMode");
    if (plugin.interactive_mode.empty()) {
      // client-go requires it from v1 on; v1beta1 defaults it.
      if (plugin.api_version == "client.authentication.k8s.io/v1")
        throw error(entry +
                    ": interactiveMode must be given (Never, IfAvailable or Always) for v1");
      plugin.interactive_mode = "IfAvailable";
    }
    if (plugin.interactive_mode != "Never" && plugin.interactive_mode != "IfAvailable" &&
        plugin.interactive_mode != "Always") {
      throw error(entry + ": interactiveMode \"" + plugin.interactive_mode +
                  "\" is not Never, IfAvailable or Always");
    }
    return plugin;
  }

  const YAML::Node& root() const { return root_; }
  std::string where() const { return "kubeconfig " + path_.string(); }
  ConfigError error(const std::string& what) const { return ConfigError(where() + ": " + what); }

 private:
  fs::path path_;
  YAML::Node root_;
};

}  // namespace

std::filesystem::path default_kubeconfig_path() {
  const std::string list = env_or_empty("KUBECONFIG");
  const std::string first = list.substr(0, list.find(':'));
  if (!first.empty()) return first;
  const std::string home = env_or_empty("HOME");
  if (home.empty()) throw ConfigError("no kubeconfig: neither KUBECONFIG nor HOME is set");
  return fs::path(home) / ".kube" / "config";
}

ClusterAccess load_kubeconfig(const std::filesystem::path& path, const std::string& context) {
  const Kubeconfig config(path.empty() ? default_kubeconfig_path() : path);
  const std::string context_name =
      context.empty() ? config.string_at(config.root(), "current-context") : context;
  if (context_name.empty()) {
    throw config.error("no context given and no current-context set");
  }
  const YAML::Node context_fields = config.named_entry("contexts", "context", context_name);
  const std::string cluster_name = config.string_at(context_fields, "cluster");
  if (cluster_name.empty()) throw config.error("context \"" + context_name + "\" names no cluster");
  const std::string user_name = config.string_at(context_fields, "user");

  ClusterAccess access;
  access.origin = config.where() + " (context " + context_name + ")";
  const std::string ns = config.string_at(context_fields, "namespace");
  if (!ns.empty()) access.default_namespace = ns;

  const YAML::Node cluster = config.named_entry("clusters", "cluster", cluster_name);
  access.server = config.string_at(cluster, "server");
  if (access.server.empty()) throw config.error("cluster \"" + cluster_name + "\" has no server");
  while (access.server.size() > 1 && access.server.back() == '/') access.server.pop_back();
  access.insecure_skip_tls_verify = config.bool_at(cluster, "insecure-skip-tls-verify");
  // Ignoring these would connect somewhere else than the user meant, or fail the TLS check with
  // a message that does not say why.
  for (const char* unsupported : {"tls-server-name", "proxy-url"}) {
    if (!config.string_at(cluster, unsupported).empty()) {
      throw config.error("cluster \"" + cluster_name + "\" sets " + unsupported +
                         ", which is not supported");
    }
  }
  access.ca_pem = config.data_or_file(cluster, "certificate-authority");

  if (user_name.empty()) return access;  // anonymous access
  const YAML::Node user = config.named_entry("users", "user", user_name);
  if (user["auth-provider"]) {
    throw config.error("user \"" + user_name +
                       "\" uses an auth-provider plugin, which kubectl dropped in 1.26 and this "
                       "client does not support: use the provider's exec plugin "
                       "(gke-gcloud-auth-plugin, kubelogin, an OIDC helper)");
  }
  if (const YAML::Node exec = user["exec"]; exec && !exec.IsNull())
    access.exec = config.exec_plugin(exec, user_name);
  if (!config.string_at(user, "username").empty()) {
    throw config.error("user \"" + user_name +
                       "\" uses basic authentication, which is not supported");
  }
  access.token = config.string_at(user, "token");
  const std::string token_file = config.string_at(user, "tokenFile");
  if (!token_file.empty()) {
    access.token_file = config.resolve(token_file);
    // Fail now rather than on the first request when the file is missing.
    read_file(access.token_file, "tokenFile of user \"" + user_name + "\":");
  }
  access.client_cert_pem = config.data_or_file(user, "client-certificate");
  access.client_key_pem = config.data_or_file(user, "client-key");
  if (access.client_cert_pem.empty() != access.client_key_pem.empty()) {
    throw config.error("user \"" + user_name +
                       "\" has a client certificate without a key or a key without a certificate");
  }
  return access;
}

bool in_cluster_environment() {
  return !env_or_empty("KUBERNETES_SERVICE_HOST").empty() &&
         !env_or_empty("KUBERNETES_SERVICE_PORT").empty();
}

ClusterAccess load_in_cluster(const std::filesystem::path& service_account_dir) {
  const std::string host = env_or_empty("KUBERNETES_SERVICE_HOST");
  const std::string port = env_or_empty("KUBERNETES_SERVICE_PORT");
  if (host.empty())
    throw ConfigError("in-cluster configuration: KUBERNETES_SERVICE_HOST is not set");
  if (port.empty())
    throw ConfigError("in-cluster configuration: KUBERNETES_SERVICE_PORT is not set");
  ClusterAccess access;
  access.origin = "in-cluster service account " + service_account_dir.string();
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  access.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  access.token_file = service_account_dir / "token";
  read_file(access.token_file, "in-cluster service-account token");
  access.ca_pem = read_file(service_account_dir / "ca.crt", "in-cluster service-account CA");
  const fs::path namespace_file = service_account_dir / "namespace";
  if (fs::exists(namespace_file)) {
    const std::string ns = trim(read_file(namespace_file, "in-cluster namespace"));
    if (!ns.empty()) access.default_namespace = ns;
  }
  return access;
}

ClusterAccess load_default() {
  if (in_cluster_environment()) return load_in_cluster();
  return load_kubeconfig();
}

}  // namespace fiber::k8s
