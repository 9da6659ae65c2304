// What a pool worker process does: run the initializer, say it is ready, then run the chunks the
// master sends, answering each with its results (or the exception one item raised).
#include <chrono>
#include <cstring>
#include <exception>
#include <string>

#include "fiber/pool/pool_worker.h"

#include "fiber/detail/job.h"
#include "fiber/detail/task_chunk.h"
#include "fiber/function_ref.h"
#include "fiber/invoke.h"
#include "fiber/pool/pool_inbox.h"
#include "fiber/pool/pool_messages.h"
#include "fiber/worker/master_link.h"

namespace fiber::internal {
namespace {

/// The type name and message of the exception being handled.
std::pair<std::string, std::string> current_exception_account() {
  std::string message;
  try {
    throw;
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
  }
  return {detail::current_exception_type_name(), std::move(message)};
}

/// Runs one chunk: every item through the same invoker, results appended in order.
PoolOutcome run_chunk(const detail::Bytes& payload, serial::Writer& out) {
  const auto started = std::chrono::steady_clock::now();
  wire::PoolResult::begin_results(out);
  try {
    serial::Reader reader(payload);
    const detail::ChunkHead head = detail::read_chunk_head(reader);
    auto& modules = detail::ModuleTable::instance();
    const auto invoker = reinterpret_cast<detail::Invoker>(modules.decode(head.invoker));
    void* fn = head.fn.module_id == 0 ? nullptr : modules.decode(head.fn);
    for (uint32_t i = 0; i < head.count; ++i) invoker(fn, reader, &out);
  } catch (...) {
    const auto [type, message] = current_exception_account();
    out.buffer().clear();
    wire::PoolResult::write_raised(out, type, message);
    return PoolOutcome::kRaised;
  }
  const auto compute_ns =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - started)
                                .count());
  wire::PoolResult::finish_results(out, compute_ns);
  return PoolOutcome::kResults;
}

}  // namespace

void pool_worker_main(uint64_t pool, std::vector<std::byte> initializer, uint64_t maxtasks) {
  MasterLink& link = MasterLink::current();
  PoolInbox& inbox = PoolInbox::current();
  if (!initializer.empty()) {
    try {
      serial::Reader reader(initializer);
      detail::run_task(detail::load_task(reader), nullptr);
    } catch (...) {
      const auto [type, message] = current_exception_account();
      link.send(wire::PoolReady{pool, true, type, message}.encode());
      return;
    }
  }
  wire::PoolReady ready;
  ready.pool = pool;
  link.send(ready.encode());
  uint64_t done = 0;
  wire::PoolResult result;
  result.pool = pool;
  serial::Writer out;
  // Whether the chunk taken next was announced started by the last result (next_started).
  bool announced = false;
  for (;;) {
    PoolDelivery delivery = inbox.next(pool);
    if (delivery.stop) return;
    // The master counts a lost chunk against max_task_retries only when it knows the chunk
    // started: a pod killed with chunks in transit or queued did them no harm. Said before
    // the chunk runs, so that one that kills its worker is counted.
    if (!announced) link.send(wire::PoolStarted{delivery.task, pool}.encode());
    out.buffer().clear();
    result.task = delivery.task;
    result.outcome = run_chunk(delivery.chunk, out);
    const bool last = maxtasks > 0 && ++done >= maxtasks;
    // A chunk queued here already runs next: its result says so, no message of its own.
    result.next_started = announced = !last && inbox.has_chunk(pool);
    // The writer's buffer travels as the result's body and comes back for the next chunk.
    result.body = std::move(out.buffer());
    link.send(result.encode());
    out.buffer() = std::move(result.body);
    if (last) return;
  }
}

}  // namespace fiber::internal
