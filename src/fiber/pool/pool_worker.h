// What a pool worker process runs. Internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fiber::internal {

/// The function a pool worker process runs (as a Process of its own): the initializer, then the
/// chunks its master sends for `pool`, until told to stop or `maxtasks` chunks are done.
void pool_worker_main(uint64_t pool, std::vector<std::byte> initializer, uint64_t maxtasks);

}  // namespace fiber::internal
