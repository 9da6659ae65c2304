// Turning values into bytes and back for messages between processes.
//
// Trivially copyable types and contiguous containers of them are copied with memcpy; standard
// containers, tuples, optionals and variants are walked element by element; any other class type
// goes through Boost.Serialization (a `serialize` member or free function). A type that fits none
// of these is rejected at compile time with a message that says what to add.
//
// Decoding trusts nothing it reads: a length may not ask for more elements than the bytes left
// can hold, elements that encode to no bytes at all are limited in total over one decode, a bool
// must be 0 or 1, and every refusal is a ProtocolError that names the type being decoded.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include <boost/archive/binary_oarchive.hpp>
#include <boost/core/demangle.hpp>
#include <boost/serialization/array.hpp>
#include <boost/serialization/deque.hpp>
#include <boost/serialization/list.hpp>
#include <boost/serialization/map.hpp>
#include <boost/serialization/set.hpp>
#include <boost/serialization/string.hpp>
#include <boost/serialization/unordered_map.hpp>
#include <boost/serialization/unordered_set.hpp>
#include <boost/serialization/utility.hpp>
#include <boost/serialization/vector.hpp>

#include "fiber/detail/bounded_iarchive.h"
#include "fiber/errors.h"

namespace fiber::serial {

/// Appends encoded values to a growing byte buffer.
class Writer {
 public:
  void write_bytes(const void* data, size_t size) {
    if (size == 0) return;
    const auto* bytes = static_cast<const std::byte*>(data);
    buffer_.insert(buffer_.end(), bytes, bytes + size);
  }
  void write_size(size_t size) {
    const auto wire = static_cast<uint64_t>(size);
    write_bytes(&wire, sizeof wire);
  }
  void reserve(size_t size) { buffer_.reserve(size); }
  size_t size() const noexcept { return buffer_.size(); }
  std::vector<std::byte>& buffer() noexcept { return buffer_; }
  const std::vector<std::byte>& buffer() const noexcept { return buffer_; }
  std::vector<std::byte> take() noexcept { return std::move(buffer_); }

 private:
  std::vector<std::byte> buffer_;
};

/// Reads values back from a byte range; every read is bounds-checked and throws ProtocolError on
/// a short or corrupt buffer instead of reading past its end.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes)
      : next_(bytes.data()), end_(bytes.data() + bytes.size()) {}

  void read_bytes(void* out, size_t size) {
    if (size == 0) return;  // `out` may be the null data() of an empty container
    require(size);
    std::memcpy(out, next_, size);
    next_ += size;
  }
  std::span<const std::byte> read_span(size_t size) {
    require(size);
    std::span<const std::byte> span(next_, size);
    next_ += size;
    return span;
  }
  /// Elements that encode to no bytes (empty tuples and arrays, handles with nothing to send)
  /// one decode may create in all, over every container it reads: the input cannot vouch for
  /// their count, and nested containers would otherwise multiply it.
  static constexpr uint64_t kMaxZeroByteElements = uint64_t{1} << 20;

  /// Reads a length prefix and checks that at least `size * min_element_size` bytes remain, so a
  /// corrupt length cannot make the caller allocate gigabytes; a length of elements of no bytes
  /// (`min_element_size` 0) is charged to kMaxZeroByteElements instead.
  size_t read_size(size_t min_element_size = 1) {
    uint64_t wire = 0;
    read_bytes(&wire, sizeof wire);
    if (min_element_size > 0) {
      if (wire > remaining() / min_element_size) {
        throw ProtocolError("corrupt message: a length of " + std::to_string(wire) +
                            " elements exceeds the " + std::to_string(remaining()) + " bytes left");
      }
    } else {
      if (wire > zero_byte_elements_left_) {
        throw ProtocolError("corrupt message: a length of " + std::to_string(wire) +
                            " elements of no bytes exceeds the " +
                            std::to_string(zero_byte_elements_left_) +
                            " such elements one message may still hold");
      }
      zero_byte_elements_left_ -= wire;
    }
    return static_cast<size_t>(wire);
  }
  size_t remaining() const noexcept { return static_cast<size_t>(end_ - next_); }
  bool at_end() const noexcept { return next_ == end_; }

 private:
  void require(size_t size) const {
    if (size > remaining()) {
      throw ProtocolError("corrupt message: needed " + std::to_string(size) + " more bytes, " +
                          std::to_string(remaining()) + " left");
    }
  }
  const std::byte* next_;
  const std::byte* end_;
  uint64_t zero_byte_elements_left_ = kMaxZeroByteElements;
};

/// Specialise to true for a class whose Boost `serialize` member is private (reachable through
/// `friend class boost::serialization::access`), which no compile-time test can see.
template <class T>
inline constexpr bool enable_boost_serialization = false;

namespace detail {

template <class T, template <class...> class Template>
inline constexpr bool is_specialization = false;
template <template <class...> class Template, class... Args>
inline constexpr bool is_specialization<Template<Args...>, Template> = true;

template <class T>
inline constexpr bool is_std_array = false;
template <class T, size_t N>
inline constexpr bool is_std_array<std::array<T, N>> = true;

template <class T>
concept WireHandle = requires(const T& value, Writer& writer, Reader& reader) {
  value.fiber_save(writer);
  { T::fiber_load(reader) } -> std::same_as<T>;
};

/// Views (std::span, std::string_view) are trivially copyable, but what they copy is a pointer
/// into this process's memory.
template <class T>
inline constexpr bool is_view = false;
template <class T, size_t N>
inline constexpr bool is_view<std::span<T, N>> = true;
template <class C, class Tr>
inline constexpr bool is_view<std::basic_string_view<C, Tr>> = true;

template <class T>
concept Memcpyable = std::is_trivially_copyable_v<T> && !is_view<T> && !std::is_pointer_v<T> &&
                     !std::is_member_pointer_v<T> && !std::is_array_v<T> && !is_std_array<T> &&
                     !is_specialization<T, std::pair> && !is_specialization<T, std::tuple> &&
                     !is_specialization<T, std::optional> && !is_specialization<T, std::variant>;

template <class T>
concept SequenceContainer = is_specialization<T, std::vector> || is_specialization<T, std::list> ||
    is_specialization<T, std::deque> || is_specialization<T, std::basic_string>;

template <class T>
concept AssociativeContainer =
    is_specialization<T, std::map> || is_specialization<T, std::multimap> ||
    is_specialization<T, std::unordered_map> || is_specialization<T, std::unordered_multimap> ||
    is_specialization<T, std::set> || is_specialization<T, std::multiset> ||
    is_specialization<T, std::unordered_set> || is_specialization<T, std::unordered_multiset>;

template <class T>
concept BoostSerializable = std::is_class_v<T> && std::is_default_constructible_v<T> &&(
    enable_boost_serialization<T> ||
    requires(T & value, boost::archive::binary_oarchive& out, BoundedIArchive& in) {
      value.serialize(out, 0u);
      value.serialize(in, 0u);
    } ||
    requires(T & value, boost::archive::binary_oarchive& out, BoundedIArchive& in) {
      serialize(out, value, 0u);
      serialize(in, value, 0u);
    });

/// The type's name as written in C++, for error messages.
template <class T>
std::string type_name() {
  return boost::core::demangle(typeid(T).name());
}

}  // namespace detail

template <class T>
struct is_serializable;

/// True when values of T can travel between processes.
template <class T>
inline constexpr bool serializable_v = is_serializable<std::remove_cvref_t<T>>::value;

template <class T>
struct is_serializable : std::bool_constant<detail::WireHandle<T> || detail::Memcpyable<T> ||
                                            detail::BoostSerializable<T>> {};
template <class T, class A>
struct is_serializable<std::vector<T, A>> : std::bool_constant<serializable_v<T>> {};
template <class T, class A>
struct is_serializable<std::list<T, A>> : std::bool_constant<serializable_v<T>> {};
template <class T, class A>
struct is_serializable<std::deque<T, A>> : std::bool_constant<serializable_v<T>> {};
template <class C, class Tr, class A>
struct is_serializable<std::basic_string<C, Tr, A>>
    : std::bool_constant<std::is_trivially_copyable_v<C>> {};
template <class T, size_t N>
struct is_serializable<std::array<T, N>> : std::bool_constant<serializable_v<T>> {};
template <class K, class V, class... R>
struct is_serializable<std::map<K, V, R...>>
    : std::bool_constant<serializable_v<K> && serializable_v<V>> {};
template <class K, class V, class... R>
struct is_serializable<std::multimap<K, V, R...>>
    : std::bool_constant<serializable_v<K> && serializable_v<V>> {};
template <class K, class V, class... R>
struct is_serializable<std::unordered_map<K, V, R...>>
    : std::bool_constant<serializable_v<K> && serializable_v<V>> {};
template <class K, class V, class... R>
struct is_serializable<std::unordered_multimap<K, V, R...>>
    : std::bool_constant<serializable_v<K> && serializable_v<V>> {};
template <class K, class... R>
struct is_serializable<std::set<K, R...>> : std::bool_constant<serializable_v<K>> {};
template <class K, class... R>
struct is_serializable<std::multiset<K, R...>> : std::bool_constant<serializable_v<K>> {};
template <class K, class... R>
struct is_serializable<std::unordered_set<K, R...>> : std::bool_constant<serializable_v<K>> {};
template <class K, class... R>
struct is_serializable<std::unordered_multiset<K, R...>> : std::bool_constant<serializable_v<K>> {};
template <class A, class B>
struct is_serializable<std::pair<A, B>>
    : std::bool_constant<serializable_v<A> && serializable_v<B>> {};
template <class... Ts>
struct is_serializable<std::tuple<Ts...>> : std::bool_constant<(serializable_v<Ts> && ...)> {};
template <class T>
struct is_serializable<std::optional<T>> : std::bool_constant<serializable_v<T>> {};
template <class... Ts>
struct is_serializable<std::variant<Ts...>>
    : std::bool_constant<(serializable_v<Ts> && ...) &&
                         (std::is_default_constructible_v<Ts> && ...)> {};

/// Compile-time gate with the message users see when they pass something that cannot travel.
template <class T>
constexpr void require_serializable() {
  static_assert(!detail::is_view<std::remove_cvref_t<T>>,
                "fibermpi: a view (std::span, std::string_view) cannot be sent to another "
                "process: it points into this process's memory. Take the container "
                "(std::vector, std::string) as the parameter instead.");
  static_assert(serializable_v<T>,
                "fibermpi: this type cannot be sent to another process. Use a trivially copyable "
                "type (no pointers), a standard container/string/pair/tuple/optional/variant of "
                "sendable types, or a class with a Boost.Serialization serialize() member or free "
                "function (for a private member, specialise "
                "fiber::serial::enable_boost_serialization<T> = true).");
}

template <class T>
void save(Writer& writer, const T& value);
template <class T>
void load(Reader& reader, T& value);

namespace detail {

template <class T>
constexpr size_t min_encoded_size();

template <class Tuple, size_t... I>
constexpr size_t min_encoded_size_of_tuple(std::index_sequence<I...>) {
  return (size_t{0} + ... + min_encoded_size<std::tuple_element_t<I, Tuple>>());
}

/// Fewest bytes one encoded T can take, as save<T> writes it. 0 (empty tuples and arrays, and
/// whatever holds only those; handles, whose encoding may be empty) makes a length prefix
/// unverifiable against the bytes left, so such elements are charged to
/// Reader::kMaxZeroByteElements instead.
template <class T>
constexpr size_t min_encoded_size() {
  if constexpr (WireHandle<T>) {
    return 0;
  } else if constexpr (Memcpyable<T>) {
    return sizeof(T);
  } else if constexpr (is_specialization<T, std::pair>) {
    return min_encoded_size<typename T::first_type>() + min_encoded_size<typename T::second_type>();
  } else if constexpr (is_specialization<T, std::tuple>) {
    return min_encoded_size_of_tuple<T>(std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (is_std_array<T>) {
    return std::tuple_size_v<T> * min_encoded_size<typename T::value_type>();
  } else if constexpr (is_specialization<T, std::optional>) {
    return 1;
  } else {
    return sizeof(uint64_t);  // a length prefix or a variant's index
  }
}

template <class Container>
void save_elements(Writer& writer, const Container& container) {
  writer.write_size(container.size());
  for (const auto& element : container) save(writer, element);
}

template <class Tuple, size_t... I>
void save_tuple(Writer& writer, const Tuple& tuple, std::index_sequence<I...>) {
  (save(writer, std::get<I>(tuple)), ...);
}
template <class Tuple, size_t... I>
void load_tuple(Reader& reader, Tuple& tuple, std::index_sequence<I...>) {
  (load(reader, std::get<I>(tuple)), ...);
}

/// Reads the length of a Container, whose elements take at least `min_element_size` bytes each;
/// a refused length names the container's type.
template <class Container>
size_t read_length(Reader& reader, size_t min_element_size) {
  try {
    return reader.read_size(min_element_size);
  } catch (const ProtocolError& error) {
    throw ProtocolError(std::string(error.what()) + " (decoding a " + type_name<Container>() + ")");
  }
}

template <class Variant, size_t I = 0>
void load_variant_alternative(Reader& reader, Variant& variant, uint64_t index) {
  if constexpr (I < std::variant_size_v<Variant>) {
    if (index == I) {
      std::variant_alternative_t<I, Variant> alternative{};
      load(reader, alternative);
      variant.template emplace<I>(std::move(alternative));
      return;
    }
    load_variant_alternative<Variant, I + 1>(reader, variant, index);
  } else {
    throw ProtocolError("corrupt message: variant index " + std::to_string(index) +
                        " out of range for a " + type_name<Variant>());
  }
}

template <class Map>
void load_map(Reader& reader, Map& map) {
  map.clear();
  const size_t count = read_length<Map>(reader, min_encoded_size<typename Map::key_type>() +
                                                    min_encoded_size<typename Map::mapped_type>());
  for (size_t i = 0; i < count; ++i) {
    typename Map::key_type key{};
    typename Map::mapped_type mapped{};
    load(reader, key);
    load(reader, mapped);
    map.emplace(std::move(key), std::move(mapped));
  }
}

template <class Set>
void load_set(Reader& reader, Set& set) {
  set.clear();
  const size_t count = read_length<Set>(reader, min_encoded_size<typename Set::key_type>());
  for (size_t i = 0; i < count; ++i) {
    typename Set::key_type key{};
    load(reader, key);
    set.emplace(std::move(key));
  }
}

}  // namespace detail

/// Appends the encoding of `value` to `writer`.
template <class T>
void save(Writer& writer, const T& value) {
  require_serializable<T>();
  if constexpr (detail::WireHandle<T>) {
    value.fiber_save(writer);
  } else if constexpr (std::is_same_v<T, bool>) {
    const uint8_t byte = value ? 1 : 0;
    writer.write_bytes(&byte, sizeof byte);
  } else if constexpr (detail::Memcpyable<T>) {
    writer.write_bytes(&value, sizeof(T));
  } else if constexpr (detail::SequenceContainer<T>) {
    using Element = typename T::value_type;
    if constexpr ((detail::is_specialization<T, std::vector> ||
                   detail::is_specialization<T, std::basic_string>)&&detail::Memcpyable<Element> &&
                  !std::is_same_v<Element, bool>) {
      writer.write_size(value.size());
      writer.write_bytes(value.data(), value.size() * sizeof(Element));
    } else {
      detail::save_elements(writer, value);
    }
  } else if constexpr (detail::is_std_array<T>) {
    for (const auto& element : value) save(writer, element);
  } else if constexpr (detail::AssociativeContainer<T>) {
    writer.write_size(value.size());
    for (const auto& element : value) {
      if constexpr (requires { typename T::mapped_type; }) {
        save(writer, element.first);
        save(writer, element.second);
      } else {
        save(writer, element);
      }
    }
  } else if constexpr (detail::is_specialization<T, std::pair>) {
    save(writer, value.first);
    save(writer, value.second);
  } else if constexpr (detail::is_specialization<T, std::tuple>) {
    detail::save_tuple(writer, value, std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (detail::is_specialization<T, std::optional>) {
    const uint8_t present = value.has_value() ? 1 : 0;
    save(writer, present);
    if (value) save(writer, *value);
  } else if constexpr (detail::is_specialization<T, std::variant>) {
    writer.write_size(value.index());
    std::visit([&writer](const auto& alternative) { save(writer, alternative); }, value);
  } else {
    std::ostringstream stream(std::ios::binary);
    {
      boost::archive::binary_oarchive archive(stream, boost::archive::no_header);
      archive << value;
    }
    const std::string bytes = std::move(stream).str();
    writer.write_size(bytes.size());
    writer.write_bytes(bytes.data(), bytes.size());
  }
}

/// Decodes a value written by save<T> into `value`.
template <class T>
void load(Reader& reader, T& value) {
  require_serializable<T>();
  if constexpr (detail::WireHandle<T>) {
    value = T::fiber_load(reader);
  } else if constexpr (std::is_same_v<T, bool>) {
    uint8_t byte = 0;
    reader.read_bytes(&byte, sizeof byte);
    value = detail::bool_from_byte(byte);
  } else if constexpr (detail::Memcpyable<T>) {
    reader.read_bytes(&value, sizeof(T));
  } else if constexpr (detail::SequenceContainer<T>) {
    using Element = typename T::value_type;
    if constexpr ((detail::is_specialization<T, std::vector> ||
                   detail::is_specialization<T, std::basic_string>)&&detail::Memcpyable<Element> &&
                  !std::is_same_v<Element, bool>) {
      const size_t count = detail::read_length<T>(reader, sizeof(Element));
      value.resize(count);
      reader.read_bytes(value.data(), count * sizeof(Element));
    } else {
      const size_t count =
          detail::read_length<T>(reader, detail::min_encoded_size<typename T::value_type>());
      value.clear();
      for (size_t i = 0; i < count; ++i) {
        typename T::value_type element{};
        load(reader, element);
        value.push_back(std::move(element));
      }
    }
  } else if constexpr (detail::is_std_array<T>) {
    for (auto& element : value) load(reader, element);
  } else if constexpr (detail::AssociativeContainer<T>) {
    if constexpr (requires { typename T::mapped_type; }) {
      detail::load_map(reader, value);
    } else {
      detail::load_set(reader, value);
    }
  } else if constexpr (detail::is_specialization<T, std::pair>) {
    load(reader, value.first);
    load(reader, value.second);
  } else if constexpr (detail::is_specialization<T, std::tuple>) {
    detail::load_tuple(reader, value, std::make_index_sequence<std::tuple_size_v<T>>{});
  } else if constexpr (detail::is_specialization<T, std::optional>) {
    uint8_t present = 0;
    load(reader, present);
    if (present > 1) {
      throw ProtocolError("corrupt message: bad presence flag " + std::to_string(present) +
                          " of a " + detail::type_name<T>());
    }
    if (present) {
      typename T::value_type inner{};
      load(reader, inner);
      value = std::move(inner);
    } else {
      value.reset();
    }
  } else if constexpr (detail::is_specialization<T, std::variant>) {
    uint64_t index = 0;
    reader.read_bytes(&index, sizeof index);
    detail::load_variant_alternative(reader, value, index);
  } else {
    const size_t size = detail::read_length<T>(reader, 1);
    detail::SpanStreamBuffer buffer(reader.read_span(size));
    try {
      detail::BoundedIArchive archive(buffer);
      archive >> value;
    } catch (const std::exception& e) {
      // The archive's own refusals, and Boost's archive_exception for a short or malformed one.
      throw ProtocolError("corrupt message: decoding a " + detail::type_name<T>() +
                          " with Boost.Serialization failed: " + e.what());
    }
  }
}

/// Decodes and returns one value of type T.
template <class T>
T read(Reader& reader) {
  T value{};
  load(reader, value);
  return value;
}

/// Encodes one value into a fresh buffer.
template <class T>
std::vector<std::byte> to_bytes(const T& value) {
  Writer writer;
  save(writer, value);
  return writer.take();
}

/// Decodes a buffer holding exactly one value of type T.
template <class T>
T from_bytes(std::span<const std::byte> bytes) {
  Reader reader(bytes);
  T value = read<T>(reader);
  if (!reader.at_end()) {
    throw ProtocolError("corrupt message: " + std::to_string(reader.remaining()) +
                        " bytes left over after decoding");
  }
  return value;
}

}  // namespace fiber::serial
