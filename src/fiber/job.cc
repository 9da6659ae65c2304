#include "fiber/detail/job.h"

#include <utility>

namespace fiber::detail {

std::optional<Job::Made> Job::make_chunk(Bytes& out, bool& became_ready) {
  became_ready = false;
  if (!wants_chunk() || !source) return std::nullopt;
  uint32_t items = 0;
  try {
    items = source->next(out);
  } catch (...) {
    became_ready = end_inputs(std::current_exception());
    return std::nullopt;
  }
  if (items == 0) {
    became_ready = end_inputs(nullptr);
    return std::nullopt;
  }
  Made made{chunks_made++, items_made, items};
  items_made += items;
  // A source that knows this was its last chunk ends the inputs now: the job is ready with that
  // chunk's outcome, not only once another pass of the pool has a free worker to ask for more
  // (none may come: a pool whose only worker was lost with a poison task).
  if (const auto left = source->chunks_left(); left && *left == 0) end_inputs(nullptr);
  return made;
}

bool Job::end_inputs(const std::exception_ptr& why) {
  if (inputs_done) return false;
  const bool was_ready = ready();
  inputs_done = true;
  source.reset();
  resume = nullptr;
  if (why) {
    // The inputs stop here: a chunk of no items carries the reason to the caller.
    const Made stop{chunks_made++, items_made, 0};
    ChunkOutcome outcome;
    outcome.error = why;
    complete(stop, std::move(outcome));
  }
  return !was_ready && ready();
}

bool Job::complete(const Made& chunk, ChunkOutcome outcome) {
  const bool was_ready = ready();
  if (!outcome.error && sink) {
    try {
      sink->store(chunk.chunk, chunk.first_item, chunk.items, outcome.results, outcome.offset);
    } catch (...) {
      outcome.error = std::current_exception();
    }
  }
  if (outcome.error) {
    if (!first_error) first_error = outcome.error;
    if (sink) sink->fail(chunk.chunk, chunk.first_item, chunk.items, outcome.error);
    // A job that fails as a whole reads no more inputs.
    if (fails_as_whole) end_inputs(nullptr);
  }
  ++completed;
  if (on_chunk) on_chunk(chunk.items);
  return !was_ready && ready();
}

bool Job::consumed(uint64_t items) {
  items_consumed += items;
  return resume && items_made - items_consumed <= window_items / 2;
}

}  // namespace fiber::detail
