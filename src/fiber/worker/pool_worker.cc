// What a pool worker process does: run the initializer, say it is ready, then run the chunks the
// master sends, answering each with its results (or the exception one item raised).
#include <chrono>
#include <cstring>
#include <exception>
#include <string>

#include "fiber/worker/pool_worker.h"

#include "fiber/detail/job.h"
#include "fiber/detail/task_chunk.h"
#include "fiber/function_ref.h"
#include "fiber/invoke.h"
#include "fiber/runtime/runtime.h"
#include "fiber/wire/message_kind.h"
#include "fiber/worker/master_link.h"

namespace fiber::detail {
namespace {

void save_current_exception(serial::Writer& writer) {
  std::string message;
  try {
    throw;
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
  }
  serial::save(writer, current_exception_type_name());
  serial::save(writer, message);
}

/// Runs one chunk: every item through the same invoker, results appended in order.
PoolOutcome run_chunk(const Bytes& payload, serial::Writer& out) {
  const auto started = std::chrono::steady_clock::now();
  // The compute time leads the results; its slot is reserved now and filled in at the end.
  const uint64_t compute_ns_slot = 0;
  out.write_bytes(&compute_ns_slot, sizeof compute_ns_slot);
  try {
    serial::Reader reader(payload);
    const ChunkHead head = read_chunk_head(reader);
    auto& modules = ModuleTable::instance();
    const auto invoker = reinterpret_cast<Invoker>(modules.decode(head.invoker));
    void* fn = head.fn.module_id == 0 ? nullptr : modules.decode(head.fn);
    for (uint32_t i = 0; i < head.count; ++i) invoker(fn, reader, &out);
  } catch (...) {
    out.buffer().clear();
    save_current_exception(out);
    return PoolOutcome::kRaised;
  }
  const auto compute_ns =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - started)
                                .count());
  std::memcpy(out.buffer().data(), &compute_ns, sizeof compute_ns);
  return PoolOutcome::kResults;
}

}  // namespace

void pool_worker_main(uint64_t pool, std::vector<std::byte> initializer, uint64_t maxtasks) {
  MasterLink& link = Runtime::instance().worker();
  if (!initializer.empty()) {
    try {
      serial::Reader reader(initializer);
      run_task(load_task(reader), nullptr);
    } catch (...) {
      serial::Writer error;
      save_current_exception(error);
      link.send(Kind::kPoolReady, 0, pool, 1, error.buffer());
      return;
    }
  }
  link.send(Kind::kPoolReady, 0, pool, 0, {});
  uint64_t done = 0;
  serial::Writer out;
  for (;;) {
    bridge::Received message = link.next_pool_message(pool);
    if (static_cast<Kind>(message.envelope.kind) == Kind::kPoolStop) return;
    out.buffer().clear();
    const PoolOutcome outcome = run_chunk(message.payload, out);
    link.send(Kind::kPoolResult, message.envelope.id, pool, static_cast<uint32_t>(outcome),
              out.buffer());
    if (maxtasks > 0 && ++done >= maxtasks) return;
  }
}

}  // namespace fiber::detail
