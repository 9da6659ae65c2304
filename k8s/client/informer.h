// A local, always-current copy of one resource's objects: list, then watch from the list's
// resourceVersion; handlers hear every change. The controller reads the store instead of asking
// the API server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "k8s/client/api_client.h"
#include "k8s/client/backoff.h"
#include "k8s/client/log_sink.h"
#include "k8s/client/resource_ref.h"

namespace fiber::k8s {

/// What an Informer watches and how it recovers.
struct InformerOptions {
  /// The resource; its `ns` limits the informer to one namespace (empty: all namespaces).
  ResourceRef ref;
  /// Only objects matching this label selector.
  std::string label_selector;
  /// Only objects matching this field selector.
  std::string field_selector;
  /// When set, objects are also indexed by the value of this label (see Informer::by_label()).
  std::string index_label;
  /// Each watch asks the server to end after a random time in [min, max] (timeoutSeconds), so
  /// many clients do not reconnect in step. The client gives a watch that long plus its
  /// request_timeout before it takes the connection for dead (a half-open one sends nothing and
  /// never ends: HTTP/1.1 has no pings), so these bound how late a dead watch is noticed: about
  /// 2.5 minutes with the defaults. The informer then watches again from where it was.
  std::chrono::seconds min_watch_timeout{60};
  std::chrono::seconds max_watch_timeout{120};
  /// Delay before re-listing or re-watching after an error: exponential with jitter, capped.
  BackoffOptions error_backoff{};
  /// Where errors are reported (they are retried, never thrown).
  LogSink log = stderr_log_sink();
};

/// Keeps a store of one resource's objects in step with the API server on a thread of its own.
/// Register handlers before start(); they run on the informer's thread, one at a time, after the
/// store has been updated, without any lock held (they may read the store). They should be quick
/// (typically: add a key to a WorkQueue); one that throws is logged and the informer goes on.
class Informer {
 public:
  using AddHandler = std::function<void(const nlohmann::json& object)>;
  using UpdateHandler =
      std::function<void(const nlohmann::json& old_object, const nlohmann::json& new_object)>;
  /// Called with the last known state of a deleted object.
  using DeleteHandler = std::function<void(const nlohmann::json& object)>;

  /// `client` must outlive the informer.
  Informer(ApiClient& client, InformerOptions options);
  /// Stops the informer.
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  /// Adds a handler called for each object that appears (also for each object of the first list).
  void on_add(AddHandler handler);
  /// Adds a handler called when an object changes (not for bookmarks).
  void on_update(UpdateHandler handler);
  /// Adds a handler called when an object is deleted, or found gone by a relist.
  void on_delete(DeleteHandler handler);

  /// Starts listing and watching on a background thread. Calling it twice is a logic error
  /// (std::logic_error).
  void start();
  /// Stops the thread: cancels the running list, watch or backoff wait and joins. Idempotent.
  void stop();

  /// True once the first list is in the store and its add handlers have run.
  bool has_synced() const;
  /// Waits until has_synced() or `timeout`; returns has_synced().
  bool wait_for_sync(std::chrono::milliseconds timeout) const;

  /// The object `name` in namespace `ns` (ns empty for cluster-scoped objects), if stored.
  std::optional<nlohmann::json> get(std::string_view ns, std::string_view name) const;
  /// A copy of every stored object.
  std::vector<nlohmann::json> list() const;
  /// A copy of the stored objects of namespace `ns` (ns not empty), by name. The store is ordered
  /// by "namespace/name", so this reads that namespace's objects alone, not the whole store.
  std::vector<nlohmann::json> list(std::string_view ns) const;
  /// The stored objects whose `index_label` label equals `value` (empty without index_label), in
  /// all namespaces the informer sees.
  std::vector<nlohmann::json> by_label(std::string_view value) const;
  /// Like by_label(value), limited to namespace `ns` (jobs of the same name may live in several).
  std::vector<nlohmann::json> by_label(std::string_view ns, std::string_view value) const;
  /// The resourceVersion the next watch would start from (moved on by events and bookmarks).
  std::string resource_version() const;
  /// How many times the informer listed (1 after the first sync; more after 410 Gone or errors).
  std::uint64_t list_count() const;

 private:
  ApiClient& client_;
  InformerOptions options_;
  std::vector<AddHandler> add_handlers_;
  std::vector<UpdateHandler> update_handlers_;
  std::vector<DeleteHandler> delete_handlers_;

  mutable std::mutex mutex_;
  mutable std::condition_variable synced_changed_;
  std::map<std::string, nlohmann::json> objects_;             // by "namespace/name"
  std::map<std::string, std::set<std::string>> label_index_;  // index_label value -> keys
  std::string resource_version_;
  bool synced_ = false;
  std::uint64_t list_count_ = 0;

  std::jthread thread_;

  void run(std::stop_token stop);
  void relist(std::stop_token stop);
  bool watch_once(std::stop_token stop);
  void apply_event(const WatchEvent& event);
  void store_locked(const std::string& key, nlohmann::json object);
  void erase_locked(const std::string& key);
  std::string index_value(const nlohmann::json& object) const;
  void notify(const char* what, const std::function<void()>& call) const;
  void notify_add(const nlohmann::json& object) const;
  void notify_update(const nlohmann::json& old_object, const nlohmann::json& new_object) const;
  void notify_delete(const nlohmann::json& object) const;
};

/// The store key of an object: "namespace/name", or "name" when it has no namespace.
std::string object_key(const nlohmann::json& object);

}  // namespace fiber::k8s
