// One encoder and one decoder for every message of the runtime protocol, driven by the field
// list each message struct declares once. Internal.
//
// A message declares its kind and its fields, in the order they travel:
//
//   struct QueueSize {
//     FIBER_WIRE_MESSAGE(QueueSize, Kind::kQueueSize)
//     uint64_t request = 0;
//     uint64_t queue = 0;
//     static void fields(auto& self, auto& f) { f.id(self.request); f.aux(self.queue); }
//   };
//
// and gets encode() and decode() from it, the same on both sides. The protocol version
// (protocol_version()) is a digest of every message's field list: adding, moving, removing or
// retyping a field changes it, and a worker of another version is refused at its handshake.
//
// Where a field travels:
//   id(x), aux(x)    the envelope's two 64-bit words (an integer or an enum);
//   flags(x)         the low 24 bits of its 32-bit word (an integer or an enum);
//   bits(b, ...)     bools in the word's top 8 bits; a decoder refuses any other bit set;
//   body(x)          the payload, in order: whatever serial::save takes, a struct that declares
//                    fields() (of body() only), a std::chrono::duration, a detail::TaskSpec,
//                    or an optional of these;
//   rest(x)          after the body, the payload's remaining bytes (detail::Bytes, or a span
//                    into the received message); a message without body fields lends them on
//                    encode (no copy), and decode from a non-const bridge::Received takes them;
//   current_protocol(p)  the decoder reads the fields after this only where p is this
//                    build's protocol_version() (a Hello of another protocol is read as far as
//                    its protocol, to be refused for it).
// A decoder refuses bytes left over. A message (or body struct) may declare
// `void validate() const`, which decode calls and which throws ProtocolError naming the fault.
#pragma once

#include <chrono>
#include <concepts>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fiber/errors.h"
#include "fiber/invoke.h"
#include "fiber/wire/outgoing.h"

namespace fiber::internal::wire {

/// The envelope's flags word: a value in the low bits, bools in the top ones.
inline constexpr int kFlagValueBits = 24;
inline constexpr int kFlagBits = 32 - kFlagValueBits;

namespace codec {

class Encoder;

template <class T>
concept HasFields = requires(T& value, Encoder& encoder) {
  T::fields(value, encoder);
};

template <class T>
concept HasValidate = requires(const T& value) {
  value.validate();
};

template <class T>
inline constexpr bool is_duration = false;
template <class R, class P>
inline constexpr bool is_duration<std::chrono::duration<R, P>> = true;

template <class T>
inline constexpr bool is_optional = false;
template <class T>
inline constexpr bool is_optional<std::optional<T>> = true;

/// The integer a header field is: itself, or an enum's underlying type.
template <class T>
struct WordNumber {
  using type = T;
};
template <class T>
requires std::is_enum_v<T>
struct WordNumber<T> {
  using type = std::underlying_type_t<T>;
};

/// A header word's value: integers keep their two's complement bits, enums their number.
template <class T>
uint64_t to_word(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return static_cast<uint64_t>(static_cast<std::underlying_type_t<T>>(value));
  } else {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                  "a header word holds an integer or an enum; use bits() for bools");
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  }
}

/// The value of a word `bits` wide, refused (naming `slot` and `kind`) where T cannot hold it.
template <class T>
T from_word(uint64_t word, int bits, const char* slot, Kind kind) {
  using Number = typename WordNumber<T>::type;
  // A signed field was sign-extended into the word; read it back at the word's width.
  int64_t signed_word = static_cast<int64_t>(word);
  if (bits < 64 && std::is_signed_v<Number> && (word >> (bits - 1)) & 1)
    signed_word = static_cast<int64_t>(word | (~uint64_t{0} << bits));
  const bool fits =
      std::is_signed_v<Number> ? std::in_range<Number>(signed_word) : std::in_range<Number>(word);
  if (!fits) {
    throw ProtocolError(std::string("a ") + kind_name(static_cast<uint32_t>(kind)) + " message's " +
                        slot + " word " + std::to_string(word) + " is out of range");
  }
  if constexpr (std::is_signed_v<Number>) {
    return static_cast<T>(static_cast<Number>(signed_word));
  } else {
    return static_cast<T>(static_cast<Number>(word));
  }
}

template <class T>
void save_body(serial::Writer& writer, const T& value);
template <class T>
void load_body(serial::Reader& reader, T& value);

/// Fills an Outgoing from a message's fields.
class Encoder {
 public:
  explicit Encoder(Outgoing& out) : out_(out) {}

  template <class T>
  void id(const T& value) {
    out_.id = to_word(value);
  }
  template <class T>
  void aux(const T& value) {
    out_.aux = to_word(value);
  }
  template <class T>
  void flags(const T& value) {
    out_.flags |= static_cast<uint32_t>(to_word(value)) & ((1u << kFlagValueBits) - 1);
  }
  template <class... B>
  requires(std::same_as<B, bool>&&...) void bits(const B&... values) {
    static_assert(sizeof...(B) <= kFlagBits, "at most 8 bools travel in the flags word");
    uint32_t bit = 1u << kFlagValueBits;
    ((out_.flags |= values ? bit : 0u, bit <<= 1), ...);
  }
  template <class T>
  void body(const T& value) {
    save_body(out_.body, value);
    has_body_ = true;
  }
  void rest(std::span<const std::byte> bytes) {
    if (has_body_) {
      out_.body.write_bytes(bytes.data(), bytes.size());
    } else {
      out_.borrowed = bytes;
      out_.uses_borrowed = true;
    }
  }
  bool current_protocol(uint32_t) const { return true; }

 private:
  Outgoing& out_;
  bool has_body_ = false;
};

/// Reads a message's fields back from what arrived.
class Decoder {
 public:
  /// `takeable`: the payload, where the caller gives it up (rest() then moves it).
  Decoder(const bridge::Received& in, std::vector<std::byte>* takeable)
      : in_(in), reader_(in.payload), takeable_(takeable) {}

  template <class T>
  void id(T& value) {
    value = from_word<T>(in_.envelope.id, 64, "id", kind());
  }
  template <class T>
  void aux(T& value) {
    value = from_word<T>(in_.envelope.aux, 64, "aux", kind());
  }
  template <class T>
  void flags(T& value) {
    value = from_word<T>(in_.envelope.flags & ((1u << kFlagValueBits) - 1), kFlagValueBits, "flags",
                         kind());
  }
  template <class... B>
  requires(std::same_as<B, bool>&&...) void bits(B&... values) {
    const uint32_t word = in_.envelope.flags >> kFlagValueBits;
    if (word >> sizeof...(B)) {
      throw ProtocolError(std::string("a ") + kind_name(in_.envelope.kind) +
                          " message sets unknown flag bits " + std::to_string(word));
    }
    int bit = 0;
    ((values = ((word >> bit++) & 1u) != 0), ...);
    bits_read_ = true;
  }
  template <class T>
  void body(T& value) {
    load_body(reader_, value);
  }
  void rest(std::vector<std::byte>& bytes) {
    if (takeable_ && reader_.remaining() == in_.payload.size()) {
      bytes = std::move(*takeable_);
      reader_ = serial::Reader({});
      return;
    }
    const auto span = reader_.read_span(reader_.remaining());
    bytes.assign(span.begin(), span.end());
  }
  /// Points into the received message, which must outlive the field.
  void rest(std::span<const std::byte>& bytes) { bytes = reader_.read_span(reader_.remaining()); }
  bool current_protocol(uint32_t protocol) {
    if (protocol != protocol_version()) stopped_ = true;
    return !stopped_;
  }

  /// Refuses bytes or flag bits the message does not have.
  void finish() const {
    if (stopped_) return;
    if (!bits_read_ && (in_.envelope.flags >> kFlagValueBits) != 0) {
      throw ProtocolError(std::string("a ") + kind_name(in_.envelope.kind) +
                          " message sets flag bits it does not have");
    }
    if (!reader_.at_end()) {
      throw ProtocolError(std::string("a ") + kind_name(in_.envelope.kind) + " message has " +
                          std::to_string(reader_.remaining()) + " bytes left over");
    }
  }

 private:
  Kind kind() const { return static_cast<Kind>(in_.envelope.kind); }

  const bridge::Received& in_;
  serial::Reader reader_;
  std::vector<std::byte>* takeable_;
  bool bits_read_ = false;
  bool stopped_ = false;
};

/// Writes a message's field list as text: where each field travels and its type.
class Signature {
 public:
  template <class T>
  void id(const T&) {
    add("id", type_of<T>());
  }
  template <class T>
  void aux(const T&) {
    add("aux", type_of<T>());
  }
  template <class T>
  void flags(const T&) {
    add("flags", type_of<T>());
  }
  template <class... B>
  void bits(const B&...) {
    add("bits", std::to_string(sizeof...(B)));
  }
  template <class T>
  void body(const T& value) {
    add("body", type_of<T>());
    if constexpr (HasFields<T>) {
      text_ += '{';
      T::fields(value, *this);
      text_ += '}';
    }
  }
  template <class T>
  void rest(const T&) {
    add("rest", "bytes");
  }
  bool current_protocol(uint32_t) {
    add("current_protocol", "");
    return true;
  }

  const std::string& text() const { return text_; }

 private:
  template <class T>
  static std::string type_of() {
    return serial::detail::type_name<T>();
  }
  void add(const char* slot, const std::string& type) {
    text_ += slot;
    text_ += ':';
    text_ += type;
    text_ += ';';
  }

  std::string text_;
};

/// Writes a body struct's fields (body() only) into the payload.
class BodyEncoder {
 public:
  explicit BodyEncoder(serial::Writer& writer) : writer_(writer) {}
  template <class T>
  void body(const T& value) {
    save_body(writer_, value);
  }

 private:
  serial::Writer& writer_;
};

template <class T>
void save_body(serial::Writer& writer, const T& value) {
  if constexpr (HasFields<T>) {
    BodyEncoder encoder(writer);
    T::fields(value, encoder);
  } else if constexpr (is_duration<T>) {
    serial::save(writer, static_cast<int64_t>(value.count()));
  } else if constexpr (std::is_same_v<T, detail::TaskSpec>) {
    detail::save_task(writer, value);
    serial::save(writer, value.produces);
  } else if constexpr (is_optional<T>) {
    serial::save(writer, value.has_value());
    if (value) save_body(writer, *value);
  } else {
    serial::save(writer, value);
  }
}

/// Reads what save_body wrote, through the same Reader (a body struct's fields in place).
class BodyDecoder {
 public:
  explicit BodyDecoder(serial::Reader& reader) : reader_(reader) {}
  template <class T>
  void body(T& value) {
    load_body(reader_, value);
  }

 private:
  serial::Reader& reader_;
};

template <class T>
void load_body(serial::Reader& reader, T& value) {
  if constexpr (HasFields<T>) {
    BodyDecoder decoder(reader);
    T::fields(value, decoder);
    if constexpr (HasValidate<T>) value.validate();
  } else if constexpr (is_duration<T>) {
    value = T(serial::read<int64_t>(reader));
  } else if constexpr (std::is_same_v<T, detail::TaskSpec>) {
    value = detail::load_task(reader);
    serial::load(reader, value.produces);
  } else if constexpr (is_optional<T>) {
    if (serial::read<bool>(reader)) {
      load_body(reader, value.emplace());
    } else {
      value.reset();
    }
  } else {
    serial::load(reader, value);
  }
}

}  // namespace codec

/// `message` as it goes out.
template <class M>
Outgoing encode(const M& message) {
  Outgoing out(M::kKind);
  codec::Encoder encoder(out);
  M::fields(message, encoder);
  return out;
}

/// The message of type M that arrived as `in`; throws ProtocolError on another kind or a
/// malformed message. `takeable`: the payload, where the caller gives it up.
template <class M>
M decode_from(const bridge::Received& in, std::vector<std::byte>* takeable) {
  expect_kind(in, M::kKind);
  M message;
  codec::Decoder decoder(in, takeable);
  M::fields(message, decoder);
  decoder.finish();
  if constexpr (codec::HasValidate<M>) message.validate();
  return message;
}

/// M's field list as text (protocol_version() digests them).
template <class M>
std::string signature() {
  M message{};
  codec::Signature text;
  M::fields(std::as_const(message), text);
  return text.text();
}

}  // namespace fiber::internal::wire

/// Declares, inside a message struct, its kind and the encode() and decode() its fields() give.
#define FIBER_WIRE_MESSAGE(Type, message_kind)                                                  \
  static constexpr ::fiber::internal::Kind kKind = message_kind;                                \
  ::fiber::internal::Outgoing encode() const { return ::fiber::internal::wire::encode(*this); } \
  static Type decode(const ::fiber::bridge::Received& in) {                                     \
    return ::fiber::internal::wire::decode_from<Type>(in, nullptr);                             \
  }                                                                                             \
  /** Takes the payload where a field holds the message's remaining bytes. */                   \
  static Type decode(::fiber::bridge::Received& in) {                                           \
    return ::fiber::internal::wire::decode_from<Type>(in, &in.payload);                         \
  }
