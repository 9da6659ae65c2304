#include "fiber/pool/pool_inbox.h"

#include <atomic>

#include "fiber/errors.h"
#include "fiber/pool/pool_messages.h"
#include "fiber/worker/master_link.h"

namespace fiber::internal {
namespace {

std::atomic<PoolInbox*> g_current_inbox{nullptr};

}  // namespace

PoolInbox::PoolInbox(MasterLink& link) : link_(link) {
  link.serve(Kind::kPoolTask, [this](bridge::Received& message) {
    // Several chunks per message: each becomes a delivery of its own.
    const auto tasks = wire::PoolTasks::decode(message);
    for (auto& chunk : tasks.chunks())
      deliveries_.push_back(
          PoolDelivery{tasks.pool, false, false, chunk.task, std::move(chunk.payload)});
  });
  link.serve(Kind::kPoolStop, [this](bridge::Received& message) {
    const auto stop = wire::PoolStop::decode(message);
    deliveries_.push_back(PoolDelivery{stop.pool, true, stop.drop_queued, 0, {}});
  });
  g_current_inbox = this;
}

PoolInbox::~PoolInbox() {
  if (g_current_inbox == this) g_current_inbox = nullptr;
}

PoolInbox& PoolInbox::current() {
  PoolInbox* inbox = g_current_inbox;
  if (!inbox) throw UsageError("this process is not a worker: it has no pool inbox");
  return *inbox;
}

PoolDelivery PoolInbox::next(uint64_t pool) {
  ProgressEngine& engine = link_.engine();
  auto held = engine.lock();
  // Deliveries of a pool this process served before (it came back to the reserve or its rank
  // serves one pool after another) are no business of this one.
  engine.await(held, [this, pool] {
    std::erase_if(deliveries_, [pool](const PoolDelivery& d) { return d.pool != pool; });
    return !deliveries_.empty();
  });
  // A terminated pool's stop overtakes the tasks still queued here.
  for (auto it = deliveries_.begin(); it != deliveries_.end(); ++it) {
    if (it->stop && it->drop_queued) {
      PoolDelivery stop = std::move(*it);
      deliveries_.clear();
      return stop;
    }
  }
  PoolDelivery delivery = std::move(deliveries_.front());
  deliveries_.pop_front();
  return delivery;
}

bool PoolInbox::has_chunk(uint64_t pool) {
  auto held = link_.engine().lock();
  // As next() takes them: the first of this pool's deliveries, unless a stop that drops the
  // queued chunks overtakes it.
  const PoolDelivery* first = nullptr;
  for (const PoolDelivery& d : deliveries_) {
    if (d.pool != pool) continue;
    if (d.stop && d.drop_queued) return false;
    if (!first) first = &d;
  }
  return first && !first->stop;
}

}  // namespace fiber::internal
