// A pool of the master's own: PoolClient over the PoolCore that runs it here. Internal.
#pragma once

#include <memory>

#include "fiber/engine/progress_engine.h"
#include "fiber/pool/pool_client.h"
#include "fiber/pool/pool_core.h"

namespace fiber::internal {

class Master;

class LocalPool final : public PoolClient {
 public:
  LocalPool(Master& master, ProgressEngine& engine, std::shared_ptr<PoolCore> core)
      : master_(master), engine_(engine), core_(std::move(core)) {}

  int size() override;
  void wait_ready() override;
  void resize(int processes) override;
  std::vector<int> worker_pids() override;
  void submit(const std::shared_ptr<detail::Job>& job) override;
  void close() override;
  void terminate() override;
  void join() override;
  void release() override;

 private:
  Master& master_;
  ProgressEngine& engine_;
  std::shared_ptr<PoolCore> core_;
};

}  // namespace fiber::internal
