// The master's answer to a worker's request, whichever service it went to. Internal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fiber/wire/message_codec.h"

namespace fiber::internal::wire {

/// Master -> worker: the answer to request `request`. Encoding lends `payload`; decoding from a
/// non-const message takes it.
struct Reply {
  FIBER_WIRE_MESSAGE(Reply, Kind::kReply)
  uint64_t request = 0;
  Outcome outcome = Outcome::kItem;
  uint64_t value = 0;              ///< kValue: the number.
  std::vector<std::byte> payload;  ///< kItem: the item; kEof and kError: the reason, as text.

  static void fields(auto& self, auto& f) {
    f.id(self.request);
    f.flags(self.outcome);
    f.aux(self.value);
    f.rest(self.payload);
  }
  void validate() const;
  std::string text() const {
    return std::string(reinterpret_cast<const char*>(payload.data()), payload.size());
  }
};

}  // namespace fiber::internal::wire
