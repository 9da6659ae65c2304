// A group of the master's own: GroupClient over the GroupCore that runs it here. Internal.
#pragma once

#include <memory>

#include "fiber/engine/progress_engine.h"
#include "fiber/group/group_client.h"
#include "fiber/group/group_core.h"

namespace fiber::internal {

class Master;

class LocalGroup final : public GroupClient {
 public:
  LocalGroup(Master& master, ProgressEngine& engine, std::shared_ptr<GroupCore> core)
      : master_(master), engine_(engine), core_(std::move(core)) {}

  std::string name() const override { return core_->name(); }
  int size() const override { return core_->size(); }
  void start() override;
  void terminate() override;
  bool started() override;
  bool wait_ended(std::optional<Clock::time_point> deadline) override;
  int restarts() override;
  std::vector<std::optional<int>> exitcodes() override;
  std::vector<int> member_pids() override;
  std::exception_ptr start_error() override;
  void release() override;

 private:
  Master& master_;
  ProgressEngine& engine_;
  std::shared_ptr<GroupCore> core_;
};

}  // namespace fiber::internal
