// REST access to a Kubernetes API server over libcurl: one generic request, typed helpers for
// get/list/create/replace/patch/delete, pod logs and streaming watches.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "k8s/client/errors.h"
#include "k8s/client/kube_config.h"
#include "k8s/client/resource_ref.h"

namespace fiber::k8s {

/// Query parameters, in order; names and values are URL-encoded by the client.
using Query = std::vector<std::pair<std::string, std::string>>;

/// A successful (2xx) answer.
struct Response {
  /// HTTP status, e.g. 200 or 201.
  long status = 0;
  /// The body parsed as JSON; null when it was empty or not JSON (see `text`).
  nlohmann::json json;
  /// The raw body.
  std::string text;
  /// The texts of the answer's Warning headers (299 warnings: a deprecated API, a field the
  /// server dropped, a PodSecurity level the object would violate), in order.
  std::vector<std::string> warnings;
};

/// Timeouts and identity of the client.
struct ClientOptions {
  /// Time allowed to open a connection (TCP + TLS).
  std::chrono::milliseconds connect_timeout{10'000};
  /// Time allowed for a whole ordinary request (not for watches, which run as long as asked).
  std::chrono::milliseconds request_timeout{30'000};
  /// A watch that receives nothing for this long is treated as a broken connection (the server
  /// sends bookmarks or the stream ends at its timeoutSeconds well before).
  std::chrono::milliseconds watch_idle_timeout{0};
  /// User-Agent header.
  std::string user_agent = "fiber-controller";
};

/// Options of list().
struct ListOptions {
  /// labelSelector, e.g. "fibermpi.io/job-name=a,fibermpi.io/role=worker".
  std::string label_selector;
  /// fieldSelector, e.g. "metadata.name=a".
  std::string field_selector;
  /// Page size (limit); list() follows `continue` until the last page. 0: no paging.
  std::int64_t page_size = 500;
};

/// All items of a list and the resourceVersion to watch from.
struct ListResult {
  std::vector<nlohmann::json> items;
  std::string resource_version;
};

/// JSON merge patch (RFC 7386) or JSON patch (RFC 6902).
enum class PatchType { kMerge, kJson };

/// DeleteOptions of remove(); unset fields are left to the server's defaults.
struct DeleteOptions {
  /// "Foreground", "Background" or "Orphan".
  std::optional<std::string> propagation_policy;
  std::optional<std::int64_t> grace_period_seconds;
  /// Preconditions: the delete fails with 409 when the object's uid / resourceVersion differ.
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
};

/// Options of watch().
struct WatchOptions {
  std::string label_selector;
  std::string field_selector;
  /// allowWatchBookmarks.
  bool allow_bookmarks = true;
  /// timeoutSeconds: the server ends the stream after this long; 0 leaves it to the server.
  std::int64_t timeout_seconds = 0;
};

/// One watch event: type ADDED, MODIFIED, DELETED or BOOKMARK, and the object.
struct WatchEvent {
  std::string type;
  nlohmann::json object;
};

/// One line of a watch stream of `path`: its event, or nothing for a blank line. Throws
/// TransportError for a line that is no event, ApiError for an ERROR event (its Status).
std::optional<WatchEvent> parse_watch_event(std::string_view line, const std::string& path);

/// Why a watch() returned (errors are thrown instead).
enum class WatchEnd {
  /// The callback returned false.
  kStoppedByCallback,
  /// The server ended the stream (timeoutSeconds elapsed, or it closed the connection cleanly).
  kServerClosed,
  /// The stop token was triggered.
  kCancelled,
};

/// Requests counted by method ("GET", "POST", ...; watches count as "WATCH") and HTTP status;
/// status 0 counts transport failures and cancelled requests.
struct RequestCountKey {
  std::string method;
  long status = 0;
  friend auto operator<=>(const RequestCountKey&, const RequestCountKey&) = default;
};
using RequestStats = std::map<RequestCountKey, std::uint64_t>;

/// A thread-safe client of one API server. Each request takes a libcurl handle from a pool (one
/// per concurrent caller) and gives it back with its HTTP/1.1 connection kept alive. Non-2xx
/// answers throw ApiError; failures without an answer throw TransportError.
class ApiClient {
 public:
  /// Prepares a client; connects lazily on the first request.
  explicit ApiClient(ClusterAccess access, ClientOptions options = {});
  ~ApiClient();
  ApiClient(const ApiClient&) = delete;
  ApiClient& operator=(const ApiClient&) = delete;

  /// The configuration this client uses.
  const ClusterAccess& access() const noexcept { return access_; }

  /// Sends `method` to `path` (beginning with '/') with `query` and `body` (sent with
  /// `content_type` when non-empty). Returns the 2xx answer; throws ApiError otherwise, and
  /// TransportError when no answer came or `stop` was requested meanwhile (from any thread).
  Response request(std::string_view method, std::string_view path, const Query& query = {},
                   const std::string& body = {}, std::string_view content_type = "application/json",
                   std::stop_token stop = {});

  /// GET one object (or its `subresource`, e.g. "status", "scale").
  nlohmann::json get(const ResourceRef& ref, std::string_view name,
                     std::string_view subresource = {});

  /// Lists all objects (every page), returning the items and the list's resourceVersion. Items
  /// get the kind and apiVersion the server leaves out of them ("PodList" items: kind "Pod").
  /// `stop` aborts the listing (TransportError). A 410 while paging means the continue token
  /// expired: list again.
  ListResult list(const ResourceRef& ref, const ListOptions& options = {},
                  std::stop_token stop = {});

  /// POSTs `object` to the collection; returns the created object.
  nlohmann::json create(const ResourceRef& ref, const nlohmann::json& object);
  /// create() with query parameters, e.g. {{"fieldValidation", "Strict"}} (a field the server
  /// does not know fails the create with 400 instead of being dropped with a warning), giving the
  /// whole answer: the stored object and the server's warnings.
  Response create_object(const ResourceRef& ref, const nlohmann::json& object, const Query& query);

  /// PUTs `object` (named by its metadata.name; metadata.resourceVersion is required so a stale
  /// write fails with 409). Returns the stored object. Throws std::invalid_argument without them.
  nlohmann::json replace(const ResourceRef& ref, const nlohmann::json& object);

  /// Like replace(), to the /status subresource: only the status is written.
  nlohmann::json replace_status(const ResourceRef& ref, const nlohmann::json& object);

  /// PATCHes object `name` (or its `subresource`) with `patch` (a JSON object for kMerge, an
  /// array of operations for kJson). Returns the patched object.
  nlohmann::json patch(const ResourceRef& ref, std::string_view name, const nlohmann::json& patch,
                       PatchType type = PatchType::kMerge, std::string_view subresource = {});

  /// DELETEs object `name`. Returns the answer's body (the object being deleted, or a Status).
  nlohmann::json remove(const ResourceRef& ref, std::string_view name,
                        const DeleteOptions& options = {});

  /// Reads the log of container `container` (empty: the pod's only container) of pod `pod` in
  /// namespace `ns` as text.
  std::string read_log(std::string_view ns, std::string_view pod, std::string_view container = {});

  /// Watches `ref` from `resource_version` (empty: from now, with the current state first as
  /// ADDED events), calling `on_event` for each event in order on this thread. Returns when the
  /// callback returns false, the server ends the stream, or `stop` is requested (from any
  /// thread; the transfer is woken and aborted at once). An ERROR event throws
  /// ApiError::from_status (e.g. 410 Expired: is_gone()). Non-2xx answers throw ApiError,
  /// broken connections TransportError. Exceptions from `on_event` propagate.
  WatchEnd watch(const ResourceRef& ref, std::string_view resource_version,
                 const WatchOptions& options,
                 const std::function<bool(const WatchEvent&)>& on_event, std::stop_token stop = {});

  /// Requests sent so far by method and status (for metrics).
  RequestStats stats() const;

 private:
  class Impl;
  ClusterAccess access_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fiber::k8s
