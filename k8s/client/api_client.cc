#include "k8s/client/api_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>

#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "k8s/client/json_fields.h"

namespace fiber::k8s {
namespace {

using nlohmann::json;

void initialise_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

json parse_or_null(const std::string& text) {
  if (text.empty()) return nullptr;
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? json(nullptr) : parsed;
}

const char* content_type_of(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
  }
  return "application/merge-patch+json";
}

// The path a PUT of `object` goes to; refuses an object without the name or the
// resourceVersion that let the server detect a stale write.
std::string replace_path(const ResourceRef& ref, const json& object, std::string_view subresource) {
  const std::string name = metadata_field(object, "name");
  const std::string what = subresource.empty() ? "replace" : std::string(subresource) + " replace";
  if (name.empty()) throw std::invalid_argument(what + " of " + ref.plural + ": no metadata.name");
  if (metadata_field(object, "resourceVersion").empty()) {
    throw std::invalid_argument(what + " of " + ref.plural + "/" + name +
                                ": no metadata.resourceVersion (needed to detect a stale write)");
  }
  return ref.object_path(name, subresource);
}

// Frees a curl_slist when the request is over.
struct HeaderList {
  curl_slist* list = nullptr;
  ~HeaderList() { curl_slist_free_all(list); }
  void add(const std::string& header) { list = curl_slist_append(list, header.c_str()); }
};

// State shared with libcurl's callbacks during one watch.
struct WatchStream {
  CURL* handle = nullptr;
  const std::string* path = nullptr;
  const std::function<bool(const WatchEvent&)>* on_event = nullptr;
  std::string pending;     // bytes after the last complete line
  std::string error_body;  // the body of a non-2xx answer
  bool stopped_by_callback = false;
  std::exception_ptr failure;  // thrown by the callback, or an ERROR event

  long response_code() const {
    long code = 0;
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }

  // Delivers one line; returns false to end the stream.
  bool deliver(std::string_view line) {
    std::optional<WatchEvent> parsed;
    try {
      parsed = parse_watch_event(line, *path);
    } catch (...) {
      failure = std::current_exception();
      return false;
    }
    if (!parsed) return true;
    try {
      if (!(*on_event)(*parsed)) {
        stopped_by_callback = true;
        return false;
      }
    } catch (...) {
      failure = std::current_exception();
      return false;
    }
    return true;
  }

  // Splits received bytes into lines (a chunk may hold part of a line, or many lines).
  bool receive(const char* data, std::size_t size) {
    if (response_code() >= 300) {
      error_body.append(data, size);
      return true;
    }
    pending.append(data, size);
    std::size_t start = 0;
    for (std::size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      if (!deliver(std::string_view(pending).substr(start, end - start))) return false;
    }
    pending.erase(0, start);
    return true;
  }

  static std::size_t on_data(char* data, std::size_t, std::size_t size, void* self) {
    return static_cast<WatchStream*>(self)->receive(data, size) ? size : 0;
  }
};

// How a transfer ended.
struct Transfer {
  CURLcode result = CURLE_OK;
  bool cancelled = false;
  long status = 0;      // HTTP status, 0 when no answer came
  std::string details;  // libcurl's own account of a failure (e.g. which certificate check failed)

  // "<curl's error text>: <details>", for messages.
  std::string failure() const {
    std::string text = curl_easy_strerror(result);
    if (!details.empty() && details != text) text += ": " + details;
    return text;
  }
};

std::size_t append_to_string(char* data, std::size_t, std::size_t size, void* target) {
  static_cast<std::string*>(target)->append(data, size);
  return size;
}

// The text of a Warning header's value, `299 - "text"` (RFC 7234; the API server's form, with
// '\' escaping a quote or a backslash); the value itself when it is not of that form.
std::string warning_text(std::string_view value) {
  const auto open = value.find('"');
  if (open == std::string_view::npos || value.size() < open + 2 || value.back() != '"')
    return std::string(value);
  std::string text;
  for (std::size_t i = open + 1; i + 1 < value.size(); ++i) {
    if (value[i] == '\\' && i + 2 < value.size()) ++i;
    text += value[i];
  }
  return text;
}

// Keeps the texts of the Warning headers of an answer (a header line at a time).
std::size_t keep_warnings(char* data, std::size_t, std::size_t size, void* target) {
  std::string_view line(data, size);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  constexpr std::string_view kName = "warning:";
  if (line.size() > kName.size() &&
      std::equal(kName.begin(), kName.end(), line.begin(),
                 [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
    std::string_view value = line.substr(kName.size());
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    static_cast<std::vector<std::string>*>(target)->push_back(warning_text(value));
  }
  return size;
}

}  // namespace

std::optional<WatchEvent> parse_watch_event(std::string_view line, const std::string& path) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return std::nullopt;
  json event = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (event.is_discarded() || !event.is_object() || !event.contains("type")) {
    throw TransportError("watch " + path + ": malformed event: " + std::string(line.substr(0, 200)),
                         0);
  }
  WatchEvent parsed{event["type"].is_string() ? event["type"].get<std::string>() : "",
                    event.contains("object") ? std::move(event["object"]) : json(nullptr)};
  if (parsed.type == "ERROR") throw ApiError::from_status(parsed.object, path);
  return parsed;
}

class ApiClient::Impl {
 public:
  Impl(const ClusterAccess& access, ClientOptions options)
      : access_(access), options_(std::move(options)) {
    initialise_curl_once();
    if (access_.exec) {
      exec_ = std::make_unique<ExecCredentialSource>(
          *access_.exec,
          ExecClusterInfo{access_.server, access_.ca_pem, access_.insecure_skip_tls_verify});
    }
  }

  ~Impl() {
    for (const Connection& connection : idle_connections_) {
      curl_multi_cleanup(connection.multi);
      curl_easy_cleanup(connection.easy);
    }
  }

  // An easy handle with the multi handle that runs it. Open connections live in the multi
  // handle's cache, so the pair is reused whole to keep them alive between requests.
  struct Connection {
    CURL* easy = nullptr;
    CURLM* multi = nullptr;
  };

  // A connection for one transfer, handed back to the pool afterwards.
  class Lease {
   public:
    explicit Lease(Impl& owner) : owner_(owner), connection_(owner.take_connection()) {}
    ~Lease() { owner_.give_back(connection_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    CURL* get() const { return connection_.easy; }
    CURLM* multi() const { return connection_.multi; }

   private:
    Impl& owner_;
    Connection connection_;
  };

  // Runs the transfer set up on `lease` until it ends or `stop` is requested; the multi
  // interface lets another thread wake the transfer at once when it is cancelled.
  Transfer perform(const Lease& lease, std::stop_token stop) {
    Transfer transfer;
    char details[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(lease.get(), CURLOPT_ERRORBUFFER, details);
    curl_multi_add_handle(lease.multi(), lease.get());
    {
      std::stop_callback wake(stop, [multi = lease.multi()] { curl_multi_wakeup(multi); });
      int running = 1;
      while (running > 0) {
        if (stop.stop_requested()) {
          transfer.cancelled = true;
          break;
        }
        if (curl_multi_perform(lease.multi(), &running) != CURLM_OK) {
          transfer.result = CURLE_RECV_ERROR;
          break;
        }
        if (running > 0) curl_multi_poll(lease.multi(), nullptr, 0, 1000, nullptr);
      }
      int queued = 0;
      while (CURLMsg* message = curl_multi_info_read(lease.multi(), &queued)) {
        if (message->msg == CURLMSG_DONE) transfer.result = message->data.result;
      }
    }
    curl_multi_remove_handle(lease.multi(), lease.get());
    curl_easy_getinfo(lease.get(), CURLINFO_RESPONSE_CODE, &transfer.status);
    curl_easy_setopt(lease.get(), CURLOPT_ERRORBUFFER, nullptr);
    transfer.details = details;
    return transfer;
  }

  std::string url(CURL* handle, std::string_view path, const Query& query) const {
    std::string text = access_.server + std::string(path);
    char separator = '?';
    for (const auto& [name, value] : query) {
      char* escaped_name = curl_easy_escape(handle, name.c_str(), static_cast<int>(name.size()));
      char* escaped_value = curl_easy_escape(handle, value.c_str(), static_cast<int>(value.size()));
      text += separator;
      text += escaped_name ? escaped_name : "";
      text += '=';
      text += escaped_value ? escaped_value : "";
      curl_free(escaped_name);
      curl_free(escaped_value);
      separator = '&';
    }
    return text;
  }

  // Sets everything but the callbacks and the time limit; returns the bearer token it sent
  // (empty when none).
  std::string configure(CURL* handle, std::string_view method, const std::string& url,
                        const std::string& body, std::string_view content_type,
                        HeaderList& headers) {
    curl_easy_reset(handle);
    curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(handle, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
    // Keepalive probes from 30 s of silence, every 10 s: a peer that is gone (no ACK, no RST)
    // fails the connection within about two minutes, instead of Linux's default two hours.
    curl_easy_setopt(handle, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(handle, CURLOPT_TCP_KEEPIDLE, 30L);
    curl_easy_setopt(handle, CURLOPT_TCP_KEEPINTVL, 10L);
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options_.connect_timeout.count()));
    curl_easy_setopt(handle, CURLOPT_USERAGENT, options_.user_agent.c_str());
    std::optional<ExecCredential> credential;
    if (exec_) credential = exec_->current();
    configure_tls(handle, credential ? &*credential : nullptr);

    headers.add("Accept: application/json");
    headers.add("Expect:");  // no 100-continue round trip for larger bodies
    const std::string token = credential ? credential->token : bearer_token();
    if (!token.empty()) headers.add("Authorization: Bearer " + token);
    if (method == "GET") {
      curl_easy_setopt(handle, CURLOPT_HTTPGET, 1L);
    } else {
      if (method != "POST") {
        curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
      }
      curl_easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl_easy_setopt(handle, CURLOPT_COPYPOSTFIELDS, body.c_str());
      if (!content_type.empty()) headers.add("Content-Type: " + std::string(content_type));
    }
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.list);
    return token;
  }

  // The server refused the credential `token` came with (401): an exec plugin is run again for
  // the next request. True when there is a plugin to run again.
  bool credential_refused(const std::string& token) {
    if (!exec_) return false;
    exec_->invalidate(token);
    return true;
  }

  void count(std::string_view method, long status) {
    std::lock_guard lock(stats_mutex_);
    ++stats_[RequestCountKey{std::string(method), status}];
  }

  RequestStats stats() const {
    std::lock_guard lock(stats_mutex_);
    return stats_;
  }

  const ClientOptions& options() const { return options_; }

 private:
  Connection take_connection() {
    {
      std::lock_guard lock(pool_mutex_);
      if (!idle_connections_.empty()) {
        const Connection connection = idle_connections_.back();
        idle_connections_.pop_back();
        return connection;
      }
    }
    Connection connection{curl_easy_init(), curl_multi_init()};
    if (!connection.easy || !connection.multi) {
      curl_easy_cleanup(connection.easy);
      curl_multi_cleanup(connection.multi);
      throw TransportError("cannot create libcurl handles", 0);
    }
    return connection;
  }

  void give_back(const Connection& connection) {
    std::lock_guard lock(pool_mutex_);
    idle_connections_.push_back(connection);
  }

  void configure_tls(CURL* handle, const ExecCredential* credential) const {
    if (access_.insecure_skip_tls_verify) {
      curl_easy_setopt(handle, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(handle, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (!access_.ca_pem.empty()) {
      curl_blob ca{const_cast<char*>(access_.ca_pem.data()), access_.ca_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(handle, CURLOPT_CAINFO_BLOB, &ca);
    }
    const bool from_plugin = credential != nullptr && !credential->client_cert_pem.empty();
    const std::string& cert_pem =
        from_plugin ? credential->client_cert_pem : access_.client_cert_pem;
    const std::string& key_pem = from_plugin ? credential->client_key_pem : access_.client_key_pem;
    if (!cert_pem.empty()) {
      curl_blob cert{const_cast<char*>(cert_pem.data()), cert_pem.size(), CURL_BLOB_COPY};
      curl_blob key{const_cast<char*>(key_pem.data()), key_pem.size(), CURL_BLOB_COPY};
      curl_easy_setopt(handle, CURLOPT_SSLCERT_BLOB, &cert);
      curl_easy_setopt(handle, CURLOPT_SSLCERTTYPE, "PEM");
      curl_easy_setopt(handle, CURLOPT_SSLKEY_BLOB, &key);
      curl_easy_setopt(handle, CURLOPT_SSLKEYTYPE, "PEM");
    }
  }

  // The token to send now: the token file's content, re-read when the file changes.
  std::string bearer_token() {
    if (access_.token_file.empty()) return access_.token;
    std::lock_guard lock(token_mutex_);
    std::error_code error;
    const auto changed = std::filesystem::last_write_time(access_.token_file, error);
    if (error) {
      if (!cached_token_.empty()) return cached_token_;  // keep the last one during a rotation
      throw TransportError(
          "cannot read token file " + access_.token_file.string() + ": " + error.message(), 0);
    }
    if (token_read_ && changed == token_changed_) return cached_token_;
    std::ifstream in(access_.token_file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    std::string token = text.str();
    while (!token.empty() &&
           (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
      token.pop_back();
    }
    cached_token_ = std::move(token);
    token_changed_ = changed;
    token_read_ = true;
    return cached_token_;
  }

  const ClusterAccess& access_;
  ClientOptions options_;

  std::mutex pool_mutex_;
  std::vector<Connection> idle_connections_;

  std::unique_ptr<ExecCredentialSource> exec_;  ///< access_.exec's credential, when it has one
  std::mutex token_mutex_;
  bool token_read_ = false;
  std::filesystem::file_time_type token_changed_{};
  std::string cached_token_;

  mutable std::mutex stats_mutex_;
  RequestStats stats_;
};

ApiClient::ApiClient(ClusterAccess access, ClientOptions options)
    : access_(std::move(access)), impl_(std::make_unique<Impl>(access_, std::move(options))) {
  if (access_.server.empty()) throw ConfigError("the cluster access has no server URL");
}

ApiClient::~ApiClient() = default;

Response ApiClient::request(std::string_view method, std::string_view path, const Query& query,
                            const std::string& body, std::string_view content_type,
                            std::stop_token stop) {
  for (int attempt = 0;; ++attempt) {
    Impl::Lease handle(*impl_);
    HeaderList headers;
    const std::string url = impl_->url(handle.get(), path, query);
    const std::string token =
        impl_->configure(handle.get(), method, url, body, content_type, headers);
    Response response;
    curl_easy_setopt(handle.get(), CURLOPT_TIMEOUT_MS,
                     static_cast<long>(impl_->options().request_timeout.count()));
    curl_easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, append_to_string);
    curl_easy_setopt(handle.get(), CURLOPT_WRITEDATA, &response.text);
    curl_easy_setopt(handle.get(), CURLOPT_HEADERFUNCTION, keep_warnings);
    curl_easy_setopt(handle.get(), CURLOPT_HEADERDATA, &response.warnings);
    const Transfer transfer = impl_->perform(handle, stop);
    if (transfer.cancelled) {
      impl_->count(method, 0);
      throw TransportError(std::string(method) + " " + url + ": cancelled",
                           CURLE_ABORTED_BY_CALLBACK);
    }
    if (transfer.result != CURLE_OK) {
      impl_->count(method, 0);
      throw TransportError(std::string(method) + " " + url + ": " + transfer.failure(),
                           transfer.result);
    }
    response.status = transfer.status;
    impl_->count(method, response.status);
    // An exec plugin's credential that the server refuses (revoked, or expired before its
    // timestamp said) is fetched again once, as kubectl does; a second refusal stands.
    if (response.status == 401 && attempt == 0 && impl_->credential_refused(token)) continue;
    if (response.status < 200 || response.status >= 300) {
      throw ApiError(response.status, std::string(method), std::string(path), response.text);
    }
    response.json = parse_or_null(response.text);
    return response;
  }
}

json ApiClient::get(const ResourceRef& ref, std::string_view name, std::string_view subresource) {
  return request("GET", ref.object_path(name, subresource)).json;
}

ListResult ApiClient::list(const ResourceRef& ref, const ListOptions& options,
                           std::stop_token stop) {
  ListResult result;
  std::string continue_token;
  do {
    Query query;
    if (!options.label_selector.empty())
      query.emplace_back("labelSelector", options.label_selector);
    if (!options.field_selector.empty())
      query.emplace_back("fieldSelector", options.field_selector);
    if (options.page_size > 0) query.emplace_back("limit", std::to_string(options.page_size));
    if (!continue_token.empty()) query.emplace_back("continue", continue_token);
    json page = request("GET", ref.collection_path(), query, {}, {}, stop).json;
    if (!page.is_object()) {
      throw TransportError("GET " + ref.collection_path() + ": the answer is not a list", 0);
    }
    // The API server leaves kind and apiVersion out of list items; put them back, since what
    // reads the items later (an Event's involvedObject, an ownerReference) needs them.
    std::string kind = string_field(page, "kind");
    if (kind.ends_with("List")) kind.resize(kind.size() - 4);
    const std::string api_version = string_field(page, "apiVersion");
    if (page.contains("items") && page["items"].is_array()) {
      for (json& item : page["items"]) {
        if (item.is_object()) {
          if (!item.contains("kind") && !kind.empty()) item["kind"] = kind;
          if (!item.contains("apiVersion") && !api_version.empty())
            item["apiVersion"] = api_version;
        }
        result.items.push_back(std::move(item));
      }
    }
    result.resource_version = metadata_field(page, "resourceVersion");
    continue_token = metadata_field(page, "continue");
  } while (!continue_token.empty());
  return result;
}

json ApiClient::create(const ResourceRef& ref, const json& object) {
  return create_object(ref, object, {}).json;
}

Response ApiClient::create_object(const ResourceRef& ref, const json& object, const Query& query) {
  return request("POST", ref.collection_path(), query, object.dump());
}

json ApiClient::replace(const ResourceRef& ref, const json& object) {
  return request("PUT", replace_path(ref, object, {}), {}, object.dump()).json;
}

json ApiClient::replace_status(const ResourceRef& ref, const json& object) {
  return request("PUT", replace_path(ref, object, "status"), {}, object.dump()).json;
}

json ApiClient::patch(const ResourceRef& ref, std::string_view name, const json& patch,
                      PatchType type, std::string_view subresource) {
  return request("PATCH", ref.object_path(name, subresource), {}, patch.dump(),
                 content_type_of(type))
      .json;
}

json ApiClient::remove(const ResourceRef& ref, std::string_view name,
                       const DeleteOptions& options) {
  json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.propagation_policy) body["propagationPolicy"] = *options.propagation_policy;
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (options.precondition_uid) body["preconditions"]["uid"] = *options.precondition_uid;
  if (options.precondition_resource_version) {
    body["preconditions"]["resourceVersion"] = *options.precondition_resource_version;
  }
  return request("DELETE", ref.object_path(name), {}, body.dump()).json;
}

std::string ApiClient::read_log(std::string_view ns, std::string_view pod,
                                std::string_view container) {
  Query query;
  if (!container.empty()) query.emplace_back("container", std::string(container));
  return request("GET", pods_ref(ns).object_path(pod, "log"), query).text;
}

WatchEnd ApiClient::watch(const ResourceRef& ref, std::string_view resource_version,
                          const WatchOptions& options,
                          const std::function<bool(const WatchEvent&)>& on_event,
                          std::stop_token stop) {
  Query query{{"watch", "true"}};
  if (!resource_version.empty())
    query.emplace_back("resourceVersion", std::string(resource_version));
  if (options.allow_bookmarks) query.emplace_back("allowWatchBookmarks", "true");
  if (options.timeout_seconds > 0) {
    query.emplace_back("timeoutSeconds", std::to_string(options.timeout_seconds));
  }
  if (!options.label_selector.empty()) query.emplace_back("labelSelector", options.label_selector);
  if (!options.field_selector.empty()) query.emplace_back("fieldSelector", options.field_selector);

  const std::string path = ref.collection_path();
  Impl::Lease handle(*impl_);
  HeaderList headers;
  const std::string url = impl_->url(handle.get(), path, query);
  const std::string token = impl_->configure(handle.get(), "GET", url, {}, {}, headers);
  if (options.timeout_seconds > 0) {
    // The server ends the stream itself; this only guards against one that never does.
    curl_easy_setopt(handle.get(), CURLOPT_TIMEOUT_MS,
                     static_cast<long>(options.timeout_seconds * 1000 +
                                       impl_->options().request_timeout.count()));
  }
  if (impl_->options().watch_idle_timeout.count() > 0) {
    curl_easy_setopt(handle.get(), CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(
        handle.get(), CURLOPT_LOW_SPEED_TIME,
        static_cast<long>(std::max<std::int64_t>(
            1,
            std::chrono::ceil<std::chrono::seconds>(impl_->options().watch_idle_timeout).count())));
  }
  WatchStream stream;
  stream.handle = handle.get();
  stream.path = &path;
  stream.on_event = &on_event;
  curl_easy_setopt(handle.get(), CURLOPT_WRITEFUNCTION, WatchStream::on_data);
  curl_easy_setopt(handle.get(), CURLOPT_WRITEDATA, &stream);

  const Transfer transfer = impl_->perform(handle, stop);
  const CURLcode result = transfer.result;
  const bool cancelled = transfer.cancelled;

  const long status = transfer.status;
  impl_->count("WATCH", cancelled && status == 0 ? 0 : status);
  if (stream.failure) std::rethrow_exception(stream.failure);
  if (stream.stopped_by_callback) return WatchEnd::kStoppedByCallback;
  if (cancelled) return WatchEnd::kCancelled;
  if (result != CURLE_OK) {
    throw TransportError("watch " + url + ": " + transfer.failure(), result);
  }
  if (status < 200 || status >= 300) {
    // A refused plugin credential is fetched again for the watch the caller starts next.
    if (status == 401) impl_->credential_refused(token);
    throw ApiError(status, "GET", path, stream.error_body);
  }
  // A last event without its newline still counts.
  if (!stream.pending.empty() && !stream.deliver(stream.pending)) {
    if (stream.failure) std::rethrow_exception(stream.failure);
    return WatchEnd::kStoppedByCallback;
  }
  return WatchEnd::kServerClosed;
}

RequestStats ApiClient::stats() const { return impl_->stats(); }

}  // namespace fiber::k8s
