#include "k8s/controller/expectations.h"

namespace fiber::k8s::controller {

Expectations::Expectations(std::chrono::milliseconds ttl, std::function<Clock::time_point()> now)
    : ttl_(ttl), now_(std::move(now)) {}

void Expectations::expect_creations(const std::string& key, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::lock_guard lock(mutex_);
  Pending& pending = pending_[key];
  pending.creations.insert(names.begin(), names.end());
  pending.since = now_();
}

void Expectations::expect_deletions(const std::string& key, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::lock_guard lock(mutex_);
  Pending& pending = pending_[key];
  pending.deletions.insert(names.begin(), names.end());
  pending.since = now_();
}

void Expectations::creation_observed(const std::string& key, const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = pending_.find(key);
  if (it != pending_.end()) it->second.creations.erase(name);
}

void Expectations::deletion_observed(const std::string& key, const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = pending_.find(key);
  if (it != pending_.end()) it->second.deletions.erase(name);
}

bool Expectations::satisfied(const std::string& key) {
  std::lock_guard lock(mutex_);
  auto it = pending_.find(key);
  if (it == pending_.end()) return true;
  const Pending& pending = it->second;
  if ((pending.creations.empty() && pending.deletions.empty()) || now_() - pending.since >= ttl_) {
    pending_.erase(it);
    return true;
  }
  return false;
}

void Expectations::expect_newer_job(const std::string& key, const std::string& resource_version) {
  std::lock_guard lock(mutex_);
  superseded_[key] = Superseded{resource_version, now_()};
}

bool Expectations::job_is_stale(const std::string& key, const std::string& resource_version) {
  std::lock_guard lock(mutex_);
  auto it = superseded_.find(key);
  if (it == superseded_.end()) return false;
  if (it->second.resource_version == resource_version && now_() - it->second.since < ttl_) {
    return true;
  }
  superseded_.erase(it);
  return false;
}

void Expectations::forget(const std::string& key) {
  std::lock_guard lock(mutex_);
  pending_.erase(key);
  superseded_.erase(key);
}

}  // namespace fiber::k8s::controller
