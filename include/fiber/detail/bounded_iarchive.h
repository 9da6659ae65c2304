// The Boost.Serialization input archive that fibermpi decodes class payloads with.
//
// It reads Boost's binary format unchanged, but never trusts a length inside the archive further
// than the bytes that arrived can justify: Boost sizes a string or a collection from the length it
// reads before it reads the elements, so one corrupt length in a 50-byte message would otherwise
// allocate gigabytes. It also refuses a bool encoded as anything but 0 or 1.
//
// What remains: a collection may still be sized at up to one element per byte left before its
// elements are read (an element's size in memory over its least encoded size is the factor), and
// a collection of objects that serialize nothing may not hold more elements than the archive has
// bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <streambuf>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <boost/archive/basic_binary_iarchive.hpp>
#include <boost/archive/basic_binary_iprimitive.hpp>
#include <boost/archive/binary_iarchive_impl.hpp>
#include <boost/archive/detail/register_archive.hpp>
#include <boost/serialization/array_optimization.hpp>
#include <boost/serialization/array_wrapper.hpp>
#include <boost/serialization/collection_size_type.hpp>
#include <boost/serialization/serialization.hpp>
#include <boost/serialization/unordered_map.hpp>
#include <boost/serialization/unordered_set.hpp>

namespace fiber::serial::detail {

/// The bool a received byte encodes: 0 or 1, anything else is a ProtocolError (copying the byte
/// into a bool would take any value).
bool bool_from_byte(uint8_t byte);

/// A read-only stream buffer over bytes that stay owned by the caller (no copy).
class SpanStreamBuffer : public std::streambuf {
 public:
  explicit SpanStreamBuffer(std::span<const std::byte> bytes);
  /// Bytes not read yet.
  size_t remaining() const noexcept { return static_cast<size_t>(egptr() - gptr()); }
};

class BoundedIArchive
    : public boost::archive::binary_iarchive_impl<BoundedIArchive, char, std::char_traits<char>> {
  using Impl = boost::archive::binary_iarchive_impl<BoundedIArchive, char, std::char_traits<char>>;
  using Primitive =
      boost::archive::basic_binary_iprimitive<BoundedIArchive, char, std::char_traits<char>>;

 public:
  /// Reads one archive written by binary_oarchive with no_header from `buffer`. The lengths of all
  /// its collections together may not exceed the buffer's size: every element of a collection
  /// Boost writes takes at least one byte, except those of classes that serialize nothing.
  explicit BoundedIArchive(SpanStreamBuffer& buffer);

 protected:
  friend class boost::archive::detail::interface_iarchive<BoundedIArchive>;
  friend class boost::archive::basic_binary_iarchive<BoundedIArchive>;
  friend class boost::archive::load_access;

  template <class T>
  void load_override(T& value) {
    Impl::load_override(value);
  }
  void load_override(boost::serialization::collection_size_type& count);

 public:
  // Public: Boost's own templates call them on the most derived archive.
  using Primitive::load;
  void load(bool& value);
  void load(std::string& text);
  void load(std::wstring& text);
  using Primitive::load_array;
  /// Arrays of bool (bool[N], std::array<bool, N>) are read as one block: each byte is checked.
  void load_array(boost::serialization::array_wrapper<bool>& array, unsigned version);

  /// Boost writes an unordered container's bucket count right after its size: a hint, not a
  /// number of elements. The next two collection sizes read are those; the second is not charged
  /// and is capped at the first (a rehash that large is never needed to hold the elements).
  void expect_bucket_count() noexcept { bucket_count_after_ = 2; }

 private:
  /// Throws ProtocolError unless `count` elements of `element_size` bytes each fit the bytes left.
  void require_bytes_for(size_t count, size_t element_size, const char* what) const;

  SpanStreamBuffer& buffer_;
  size_t elements_left_;
  size_t last_collection_size_ = 0;
  int bucket_count_after_ = 0;  ///< collection sizes still to read before the bucket count
};

// Found through the archive's namespace, and an exact match for the version argument Boost passes,
// so they win over Boost's own loads of these containers, which they wrap.
template <class Key, class Value, class Hash, class Equal, class Allocator>
void load(BoundedIArchive& archive, std::unordered_map<Key, Value, Hash, Equal, Allocator>& map,
          boost::serialization::version_type version) {
  archive.expect_bucket_count();
  boost::serialization::load(archive, map, static_cast<unsigned>(version));
}
template <class Key, class Value, class Hash, class Equal, class Allocator>
void load(BoundedIArchive& archive,
          std::unordered_multimap<Key, Value, Hash, Equal, Allocator>& map,
          boost::serialization::version_type version) {
  archive.expect_bucket_count();
  boost::serialization::load(archive, map, static_cast<unsigned>(version));
}
template <class Key, class Hash, class Equal, class Allocator>
void load(BoundedIArchive& archive, std::unordered_set<Key, Hash, Equal, Allocator>& set,
          boost::serialization::version_type version) {
  archive.expect_bucket_count();
  boost::serialization::load(archive, set, static_cast<unsigned>(version));
}
template <class Key, class Hash, class Equal, class Allocator>
void load(BoundedIArchive& archive, std::unordered_multiset<Key, Hash, Equal, Allocator>& set,
          boost::serialization::version_type version) {
  archive.expect_bucket_count();
  boost::serialization::load(archive, set, static_cast<unsigned>(version));
}

}  // namespace fiber::serial::detail

// Needed by classes exported for serialization through base-class pointers.
BOOST_SERIALIZATION_REGISTER_ARCHIVE(fiber::serial::detail::BoundedIArchive)
// binary_oarchive writes arrays of bitwise types as one block; reading them needs the same choice.
BOOST_SERIALIZATION_USE_ARRAY_OPTIMIZATION(fiber::serial::detail::BoundedIArchive)
