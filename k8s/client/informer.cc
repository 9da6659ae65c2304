#include "k8s/client/informer.h"

#include <random>
#include <stdexcept>

#include "k8s/client/json_fields.h"

namespace fiber::k8s {
namespace {

using nlohmann::json;

std::string store_key(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  return std::string(ns) + "/" + std::string(name);
}

}  // namespace

std::string object_key(const json& object) {
  return store_key(metadata_field(object, "namespace"), metadata_field(object, "name"));
}

Informer::Informer(ApiClient& client, InformerOptions options)
    : client_(client), options_(std::move(options)) {
  if (options_.min_watch_timeout > options_.max_watch_timeout) {
    throw std::invalid_argument("informer of " + options_.ref.plural +
                                ": min_watch_timeout exceeds max_watch_timeout");
  }
}

Informer::~Informer() { stop(); }

void Informer::on_add(AddHandler handler) { add_handlers_.push_back(std::move(handler)); }

void Informer::on_update(UpdateHandler handler) { update_handlers_.push_back(std::move(handler)); }

void Informer::on_delete(DeleteHandler handler) { delete_handlers_.push_back(std::move(handler)); }

void Informer::start() {
  if (thread_.joinable())
    throw std::logic_error("informer of " + options_.ref.plural + " already started");
  thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Informer::stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();  // aborts the watch transfer and any backoff sleep
  thread_.join();
}

bool Informer::has_synced() const {
  std::lock_guard lock(mutex_);
  return synced_;
}

bool Informer::wait_for_sync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mutex_);
  return synced_changed_.wait_for(lock, timeout, [this] { return synced_; });
}

std::optional<json> Informer::get(std::string_view ns, std::string_view name) const {
  std::lock_guard lock(mutex_);
  const auto it = objects_.find(store_key(ns, name));
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::vector<json> Informer::list() const {
  std::lock_guard lock(mutex_);
  std::vector<json> copy;
  copy.reserve(objects_.size());
  for (const auto& [key, object] : objects_) copy.push_back(object);
  return copy;
}

std::vector<json> Informer::list(std::string_view ns) const {
  const std::string prefix = store_key(ns, "");
  std::lock_guard lock(mutex_);
  std::vector<json> copy;
  for (auto it = objects_.lower_bound(prefix);
       it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    copy.push_back(it->second);
  }
  return copy;
}

std::vector<json> Informer::by_label(std::string_view value) const {
  std::lock_guard lock(mutex_);
  std::vector<json> matches;
  const auto keys = label_index_.find(std::string(value));
  if (keys == label_index_.end()) return matches;
  for (const std::string& key : keys->second) matches.push_back(objects_.at(key));
  return matches;
}

std::vector<json> Informer::by_label(std::string_view ns, std::string_view value) const {
  std::vector<json> matches = by_label(value);
  std::erase_if(matches,
                [&](const json& object) { return metadata_field(object, "namespace") != ns; });
  return matches;
}

std::string Informer::resource_version() const {
  std::lock_guard lock(mutex_);
  return resource_version_;
}

std::uint64_t Informer::list_count() const {
  std::lock_guard lock(mutex_);
  return list_count_;
}

std::string Informer::index_value(const json& object) const {
  if (options_.index_label.empty()) return {};
  return label_value(object, options_.index_label);
}

void Informer::store_locked(const std::string& key, json object) {
  erase_locked(key);
  const std::string value = index_value(object);
  if (!value.empty()) label_index_[value].insert(key);
  objects_.emplace(key, std::move(object));
}

void Informer::erase_locked(const std::string& key) {
  const auto it = objects_.find(key);
  if (it == objects_.end()) return;
  const std::string value = index_value(it->second);
  if (!value.empty()) {
    const auto keys = label_index_.find(value);
    if (keys != label_index_.end()) {
      keys->second.erase(key);
      if (keys->second.empty()) label_index_.erase(keys);
    }
  }
  objects_.erase(it);
}

void Informer::notify(const char* what, const std::function<void()>& call) const {
  // A failing handler must neither lose the other handlers' events nor stop the informer.
  try {
    call();
  } catch (const std::exception& error) {
    log_to(options_.log, LogLevel::kError,
           "informer of " + options_.ref.plural + ": " + what + " handler failed: " + error.what());
  } catch (...) {
    log_to(options_.log, LogLevel::kError,
           "informer of " + options_.ref.plural + ": " + what + " handler failed");
  }
}

void Informer::notify_add(const json& object) const {
  for (const auto& handler : add_handlers_) notify("add", [&] { handler(object); });
}

void Informer::notify_update(const json& old_object, const json& new_object) const {
  for (const auto& handler : update_handlers_) {
    notify("update", [&] { handler(old_object, new_object); });
  }
}

void Informer::notify_delete(const json& object) const {
  for (const auto& handler : delete_handlers_) notify("delete", [&] { handler(object); });
}

void Informer::run(std::stop_token stop) {
  Backoff backoff(options_.error_backoff);
  bool need_list = true;
  int gone_in_a_row = 0;
  while (!stop.stop_requested()) {
    try {
      if (need_list) {
        relist(stop);
        need_list = false;
      }
      const bool watched = watch_once(stop);
      gone_in_a_row = 0;
      if (watched) {
        backoff.reset();
      } else {
        // The stream ended at once without an event: do not hammer the server.
        sleep_unless_stopped(stop, backoff.next());
      }
    } catch (const ApiError& error) {
      if (error.is_gone()) {
        // Our resourceVersion is older than the server's history: list again, at once the first
        // time; a server that keeps answering 410 gets the backoff like any other error.
        log_to(options_.log, LogLevel::kInfo,
               "informer of " + options_.ref.plural + ": " + error.what() + "; relisting");
        need_list = true;
        if (++gone_in_a_row > 1) sleep_unless_stopped(stop, backoff.next());
        continue;
      }
      log_to(options_.log, LogLevel::kWarning,
             "informer of " + options_.ref.plural + ": " + error.what());
      sleep_unless_stopped(stop, backoff.next());
    } catch (const std::exception& error) {
      if (stop.stop_requested()) break;
      log_to(options_.log, LogLevel::kWarning,
             "informer of " + options_.ref.plural + ": " + error.what());
      sleep_unless_stopped(stop, backoff.next());
    }
  }
}

void Informer::relist(std::stop_token stop) {
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  ListResult listed = client_.list(options_.ref, list_options, stop);
  if (stop.stop_requested()) return;

  std::vector<json> added;
  std::vector<std::pair<json, json>> updated;
  std::vector<json> deleted;
  bool first_sync = false;
  {
    std::lock_guard lock(mutex_);
    std::map<std::string, json> previous;
    previous.swap(objects_);
    label_index_.clear();
    for (json& object : listed.items) {
      const std::string key = object_key(object);
      const auto old = previous.find(key);
      if (old == previous.end()) {
        added.push_back(object);
      } else {
        if (metadata_field(old->second, "resourceVersion") !=
            metadata_field(object, "resourceVersion")) {
          updated.emplace_back(old->second, object);
        }
        previous.erase(old);
      }
      store_locked(key, std::move(object));
    }
    for (auto& [key, object] : previous) deleted.push_back(std::move(object));
    resource_version_ = listed.resource_version;
    ++list_count_;
    first_sync = !synced_;
  }
  for (const json& object : added) notify_add(object);
  for (const auto& [old_object, new_object] : updated) notify_update(old_object, new_object);
  for (const json& object : deleted) notify_delete(object);
  if (first_sync) {
    std::lock_guard lock(mutex_);
    synced_ = true;
    synced_changed_.notify_all();
  }
}

bool Informer::watch_once(std::stop_token stop) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  std::uniform_int_distribution<std::int64_t> timeout(options_.min_watch_timeout.count(),
                                                      options_.max_watch_timeout.count());
  WatchOptions watch_options;
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;
  watch_options.allow_bookmarks = true;
  watch_options.timeout_seconds = std::max<std::int64_t>(1, timeout(random));
  std::uint64_t events = 0;
  const auto started = std::chrono::steady_clock::now();
  client_.watch(
      options_.ref, resource_version(), watch_options,
      [&](const WatchEvent& event) {
        ++events;
        apply_event(event);
        return !stop.stop_requested();
      },
      stop);
  return events > 0 || std::chrono::steady_clock::now() - started > std::chrono::seconds(1);
}

void Informer::apply_event(const WatchEvent& event) {
  const std::string version = metadata_field(event.object, "resourceVersion");
  if (event.type == "BOOKMARK") {
    std::lock_guard lock(mutex_);
    if (!version.empty()) resource_version_ = version;
    return;
  }
  const bool deleted = event.type == "DELETED";
  if (!deleted && event.type != "ADDED" && event.type != "MODIFIED") {
    log_to(options_.log, LogLevel::kWarning,
           "informer of " + options_.ref.plural + ": ignoring watch event of type \"" + event.type +
               "\"");
    return;
  }
  const std::string key = object_key(event.object);
  std::optional<json> previous;
  {
    std::lock_guard lock(mutex_);
    const auto it = objects_.find(key);
    if (it != objects_.end()) previous = it->second;
    if (deleted) {
      erase_locked(key);
    } else {
      store_locked(key, event.object);
    }
    if (!version.empty()) resource_version_ = version;
  }
  if (deleted) {
    notify_delete(event.object);
  } else if (previous) {
    notify_update(*previous, event.object);
  } else {
    notify_add(event.object);
  }
}

}  // namespace fiber::k8s
