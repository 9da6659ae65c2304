// The Boost.Serialization input archive that fibermpi decodes class payloads with.
//
// It reads Boost's binary format unchanged, but never trusts a length inside the archive further
// than the bytes that arrived can justify: Boost sizes a string or a collection from the length it
// reads before it reads the elements, so one corrupt length in a 50-byte message would otherwise
// allocate gigabytes. It also refuses a bool encoded as anything but 0 or 1.
#pragma once

#include <cstddef>
#include <span>
#include <streambuf>
#include <string>

#include <boost/archive/basic_binary_iarchive.hpp>
#include <boost/archive/basic_binary_iprimitive.hpp>
#include <boost/archive/binary_iarchive_impl.hpp>
#include <boost/archive/detail/register_archive.hpp>
#include <boost/serialization/array_optimization.hpp>
#include <boost/serialization/collection_size_type.hpp>

namespace fiber::serial::detail {

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

 private:
  /// Throws ProtocolError unless `count` elements of `element_size` bytes each fit the bytes left.
  void require_bytes_for(size_t count, size_t element_size, const char* what) const;

  SpanStreamBuffer& buffer_;
  size_t elements_left_;
};

}  // namespace fiber::serial::detail

// Needed by classes exported for serialization through base-class pointers.
BOOST_SERIALIZATION_REGISTER_ARCHIVE(fiber::serial::detail::BoundedIArchive)
// binary_oarchive writes arrays of bitwise types as one block; reading them needs the same choice.
BOOST_SERIALIZATION_USE_ARRAY_OPTIMIZATION(fiber::serial::detail::BoundedIArchive)
