#include "fiber/detail/bounded_iarchive.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cwchar>

// The archive templates' out-of-line members, instantiated here for BoundedIArchive as Boost does
// for its own archives in libboost_serialization.
#include <boost/archive/detail/archive_serializer_map.hpp>
#include <boost/archive/impl/archive_serializer_map.ipp>
#include <boost/archive/impl/basic_binary_iarchive.ipp>
#include <boost/archive/impl/basic_binary_iprimitive.ipp>

#include "fiber/errors.h"

namespace boost::archive {
template class detail::archive_serializer_map<fiber::serial::detail::BoundedIArchive>;
template class basic_binary_iprimitive<fiber::serial::detail::BoundedIArchive, char,
                                       std::char_traits<char>>;
template class basic_binary_iarchive<fiber::serial::detail::BoundedIArchive>;
template class binary_iarchive_impl<fiber::serial::detail::BoundedIArchive, char,
                                    std::char_traits<char>>;
}  // namespace boost::archive

namespace fiber::serial::detail {

SpanStreamBuffer::SpanStreamBuffer(std::span<const std::byte> bytes) {
  // std::streambuf's get area is non-const by signature only: nothing here writes through it.
  auto* begin = const_cast<char*>(reinterpret_cast<const char*>(bytes.data()));
  setg(begin, begin, begin + bytes.size());
}

BoundedIArchive::BoundedIArchive(SpanStreamBuffer& buffer)
    : Impl(buffer, boost::archive::no_header), buffer_(buffer), elements_left_(buffer.remaining()) {
  init(boost::archive::no_header);
}

bool bool_from_byte(uint8_t byte) {
  if (byte > 1) throw ProtocolError("a bool encoded as " + std::to_string(byte));
  return byte == 1;
}

void BoundedIArchive::require_bytes_for(size_t count, size_t element_size, const char* what) const {
  if (count > buffer_.remaining() / element_size) {
    throw ProtocolError("a " + std::string(what) + " of " + std::to_string(count) +
                        " elements exceeds the " + std::to_string(buffer_.remaining()) +
                        " bytes left in the archive");
  }
}

void BoundedIArchive::load_override(boost::serialization::collection_size_type& count) {
  Impl::load_override(count);
  const auto requested = static_cast<size_t>(count);
  if (bucket_count_after_ > 0 && --bucket_count_after_ == 0) {
    count = boost::serialization::collection_size_type(std::min(requested, last_collection_size_));
    return;
  }
  // One budget for the whole archive, so that nested collections cannot multiply their lengths,
  // and never more than the bytes not read yet.
  const size_t can_hold = std::min(elements_left_, buffer_.remaining());
  if (requested > can_hold) {
    throw ProtocolError("a collection of " + std::to_string(requested) +
                        " elements exceeds what the archive's " + std::to_string(can_hold) +
                        " unclaimed bytes can hold");
  }
  elements_left_ -= requested;
  last_collection_size_ = requested;
}

void BoundedIArchive::load_array(boost::serialization::array_wrapper<bool>& array,
                                 unsigned version) {
  Primitive::load_array(array, version);
  for (size_t i = 0; i < array.count(); ++i) {
    uint8_t byte = 0;
    std::memcpy(&byte, array.address() + i, sizeof byte);
    bool_from_byte(byte);
  }
}

void BoundedIArchive::load(bool& value) {
  uint8_t byte = 0;
  load_binary(&byte, sizeof byte);
  value = bool_from_byte(byte);
}
void BoundedIArchive::load(std::string& text) {
  size_t length = 0;
  load(length);
  require_bytes_for(length, 1, "string");
  text.resize(length);
  if (length > 0) load_binary(text.data(), length);
}

void BoundedIArchive::load(std::wstring& text) {
  size_t length = 0;
  load(length);
  require_bytes_for(length, sizeof(wchar_t), "wide string");
  text.resize(length);
  if (length > 0) load_binary(text.data(), length * sizeof(wchar_t));
}

}  // namespace fiber::serial::detail
