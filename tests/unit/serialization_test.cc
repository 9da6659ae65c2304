#include "fiber/serialization.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "fiber/errors.h"
#include "support/allocation_limit.h"

namespace serialization_test {

struct Point {
  int x = 0;
  double y = 0;
  char tag = 0;
  friend bool operator==(const Point&, const Point&) = default;
};

// The std::string member keeps these classes off the memcpy path, so Boost really runs.
struct MemberSerialize {
  std::string name;
  std::vector<int> values;
  double weight = 0;

  template <class Archive>
  void serialize(Archive& archive, unsigned /*version*/) {
    archive& name& values& weight;
  }
  friend bool operator==(const MemberSerialize&, const MemberSerialize&) = default;
};

struct FreeSerialize {
  std::string label;
  std::map<std::string, int> counts;
  friend bool operator==(const FreeSerialize&, const FreeSerialize&) = default;
};

template <class Archive>
void serialize(Archive& archive, FreeSerialize& value, unsigned /*version*/) {
  archive& value.label& value.counts;
}

class PrivateSerialize {
 public:
  PrivateSerialize() = default;
  PrivateSerialize(std::string secret, int level) : secret_(std::move(secret)), level_(level) {}
  const std::string& secret() const { return secret_; }
  int level() const { return level_; }

 private:
  friend class boost::serialization::access;
  template <class Archive>
  void serialize(Archive& archive, unsigned /*version*/) {
    archive& secret_& level_;
  }
  std::string secret_;
  int level_ = 0;
};

struct NotSerializable {
  std::string text;
};

// Boost writes nothing for an object of this class after the first: its elements take no bytes.
struct EmptyBoost {
  template <class Archive>
  void serialize(Archive& /*archive*/, unsigned /*version*/) {}
  friend bool operator==(const EmptyBoost&, const EmptyBoost&) = default;
};

struct NestedBoost {
  std::string label;
  bool flag = false;
  std::vector<std::vector<EmptyBoost>> empties;
  std::vector<std::string> words;

  template <class Archive>
  void serialize(Archive& archive, unsigned /*version*/) {
    archive& label& flag& empties& words;
  }
  friend bool operator==(const NestedBoost&, const NestedBoost&) = default;
};

// Boost writes an unordered container's bucket count beside its size; bools of an array as a block.
struct HashedBoost {
  std::string label;
  std::unordered_map<std::string, int> counts;
  std::unordered_set<uint8_t> small;
  std::unordered_multimap<int, int> pairs;
  std::unordered_multiset<char> letters;
  std::array<bool, 3> flags{};

  template <class Archive>
  void serialize(Archive& archive, unsigned /*version*/) {
    archive& label& counts& small& pairs& letters& flags;
  }
  friend bool operator==(const HashedBoost&, const HashedBoost&) = default;
};

}  // namespace serialization_test

template <>
inline constexpr bool
    fiber::serial::enable_boost_serialization<serialization_test::PrivateSerialize> = true;

namespace serialization_test {
namespace {

using fiber::ProtocolError;
using fiber::serial::from_bytes;
using fiber::serial::serializable_v;
using fiber::serial::to_bytes;

static_assert(!serializable_v<int*>);
static_assert(!serializable_v<const char*>);
static_assert(!serializable_v<std::vector<int*>>);
static_assert(!serializable_v<std::map<std::string, int*>>);
static_assert(!serializable_v<std::optional<int*>>);
static_assert(!serializable_v<NotSerializable>);
static_assert(!serializable_v<std::vector<NotSerializable>>);
static_assert(serializable_v<std::string>);
static_assert(serializable_v<int>);
static_assert(serializable_v<Point>);
static_assert(serializable_v<MemberSerialize>);
static_assert(serializable_v<FreeSerialize>);
static_assert(serializable_v<PrivateSerialize>);
static_assert(serializable_v<std::tuple<int, std::string, std::vector<MemberSerialize>>>);
static_assert(serializable_v<const std::string&>);

template <class T>
T round_trip(const T& value) {
  return from_bytes<T>(to_bytes(value));
}

std::vector<std::byte> concat(std::vector<std::byte> front, const std::vector<std::byte>& back) {
  front.insert(front.end(), back.begin(), back.end());
  return front;
}

std::vector<std::byte> wire_size(uint64_t size) { return to_bytes(size); }

// A decoder handed a corrupt length must refuse it before it allocates: any single allocation
// above this fails the tests below.
constexpr size_t kLargeAllocation = size_t{1} << 20;

// Decodes `bytes` as T, which must throw ProtocolError with `expected` in its message, and must
// not ask for a large allocation on the way.
template <class T>
void expect_refused_without_large_allocation(const std::vector<std::byte>& bytes,
                                             const std::string& expected) {
  fiber::testing::AllocationLimit limit(kLargeAllocation);
  try {
    from_bytes<T>(bytes);
    ADD_FAILURE() << "decoding " << bytes.size() << " corrupt bytes returned";
  } catch (const ProtocolError& error) {
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos)
        << "the error does not name " << expected << ": " << error.what();
  } catch (const std::exception& error) {
    ADD_FAILURE() << "threw " << typeid(error).name()
                  << " instead of ProtocolError: " << error.what();
  }
  EXPECT_EQ(limit.largest_refused(), 0u)
      << "asked for " << limit.largest_refused() << " bytes at once";
}

// Overwrites each 8-byte window of an encoded T, in turn, with each of a few huge lengths: every
// result must decode or be refused with a ProtocolError, never allocate much, never crash.
// Returns how many were refused.
template <class T>
int corrupt_every_length(const std::vector<std::byte>& bytes) {
  int refused = 0;
  for (size_t at = 0; at + 8 <= bytes.size(); ++at) {
    for (const uint64_t huge : {uint64_t{1500000000}, uint64_t{1} << 28, uint64_t{1} << 62}) {
      auto damaged = bytes;
      std::memcpy(damaged.data() + at, &huge, sizeof huge);
      fiber::testing::AllocationLimit limit(kLargeAllocation);
      try {
        from_bytes<T>(damaged);
      } catch (const ProtocolError&) {
        ++refused;
      } catch (const std::exception& error) {
        ADD_FAILURE() << "length " << huge << " at byte " << at << " threw " << typeid(error).name()
                      << ": " << error.what();
      }
      EXPECT_EQ(limit.largest_refused(), 0u)
          << "length " << huge << " at byte " << at << " asked for " << limit.largest_refused()
          << " bytes at once";
    }
  }
  return refused;
}

TEST(SerializationTest, Int) {
  EXPECT_EQ(round_trip(0), 0);
  EXPECT_EQ(round_trip(-123456), -123456);
  EXPECT_EQ(round_trip(std::numeric_limits<int>::max()), std::numeric_limits<int>::max());
  EXPECT_EQ(round_trip(std::numeric_limits<int64_t>::min()), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(to_bytes(42).size(), sizeof(int));
}

TEST(SerializationTest, Double) {
  EXPECT_EQ(round_trip(3.25), 3.25);
  EXPECT_EQ(round_trip(std::numeric_limits<double>::denorm_min()),
            std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(round_trip(std::numeric_limits<double>::infinity()),
            std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(round_trip(std::numeric_limits<double>::quiet_NaN())));
  const double negative_zero = round_trip(-0.0);
  EXPECT_EQ(negative_zero, 0.0);
  EXPECT_TRUE(std::signbit(negative_zero));
}

TEST(SerializationTest, TriviallyCopyableStruct) {
  const Point point{7, -2.5, 'q'};
  const auto bytes = to_bytes(point);
  EXPECT_EQ(bytes.size(), sizeof(Point));
  EXPECT_EQ(from_bytes<Point>(bytes), point);
}

TEST(SerializationTest, String) {
  EXPECT_EQ(round_trip(std::string()), "");
  EXPECT_EQ(to_bytes(std::string()).size(), 8u);
  EXPECT_EQ(round_trip(std::string("hello, world")), "hello, world");

  std::string long_text(100000, '\0');
  for (size_t i = 0; i < long_text.size(); ++i) long_text[i] = static_cast<char>(i * 31 % 256);
  const auto bytes = to_bytes(long_text);
  EXPECT_EQ(bytes.size(), 8 + long_text.size());
  EXPECT_EQ(from_bytes<std::string>(bytes), long_text);
}

TEST(SerializationTest, VectorOfDoubleUsesMemcpyLayout) {
  const std::vector<double> zeros(10);
  EXPECT_EQ(to_bytes(zeros).size(), 8u + 80u);

  const std::vector<double> values{1.5, -2.0, 1e300, 0.0, 42.0};
  const auto bytes = to_bytes(values);
  ASSERT_EQ(bytes.size(), 8 + values.size() * sizeof(double));
  uint64_t count = 0;
  std::memcpy(&count, bytes.data(), sizeof count);
  EXPECT_EQ(count, values.size());
  double third = 0;
  std::memcpy(&third, bytes.data() + 8 + 2 * sizeof(double), sizeof third);
  EXPECT_EQ(third, 1e300);
  EXPECT_EQ(from_bytes<std::vector<double>>(bytes), values);
  EXPECT_TRUE(round_trip(std::vector<double>()).empty());
}

TEST(SerializationTest, VectorOfString) {
  const std::vector<std::string> values{"", "a", std::string(1000, 'z'), "last"};
  EXPECT_EQ(round_trip(values), values);
  EXPECT_TRUE(round_trip(std::vector<std::string>()).empty());
}

TEST(SerializationTest, VectorOfBool) {
  const std::vector<bool> values{true, false, false, true, true, false,
                                 true, false, false, true, true};
  EXPECT_EQ(round_trip(values), values);
  EXPECT_TRUE(round_trip(std::vector<bool>()).empty());
}

TEST(SerializationTest, StdArray) {
  const std::array<int, 4> values{4, -3, 2, 1};
  EXPECT_EQ(to_bytes(values).size(), 4 * sizeof(int));
  EXPECT_EQ(round_trip(values), values);
  const std::array<std::string, 2> strings{"left", "right"};
  EXPECT_EQ(round_trip(strings), strings);
}

TEST(SerializationTest, MapOfStringToVector) {
  const std::map<std::string, std::vector<int>> values{{"", {}}, {"one", {1}}, {"many", {1, 2, 3}}};
  EXPECT_EQ(round_trip(values), values);
}

TEST(SerializationTest, UnorderedMap) {
  std::unordered_map<std::string, double> values;
  for (int i = 0; i < 100; ++i) values["key" + std::to_string(i)] = i * 0.5;
  EXPECT_EQ(round_trip(values), values);
}

TEST(SerializationTest, Set) {
  const std::set<std::string> values{"pear", "apple", "fig"};
  EXPECT_EQ(round_trip(values), values);
  const std::multiset<int> repeated{3, 1, 3, 3, 2};
  EXPECT_EQ(round_trip(repeated), repeated);
}

TEST(SerializationTest, ListAndDeque) {
  const std::list<std::string> list{"x", "y", "z"};
  EXPECT_EQ(round_trip(list), list);
  const std::deque<int> deque{5, 6, 7};
  EXPECT_EQ(round_trip(deque), deque);
}

TEST(SerializationTest, Pair) {
  const std::pair<int, std::string> value{9, "nine"};
  EXPECT_EQ(round_trip(value), value);
}

TEST(SerializationTest, Tuple) {
  const std::tuple<int, std::string, double> value{-1, "minus one", -1.0};
  EXPECT_EQ(round_trip(value), value);
  EXPECT_EQ(round_trip(std::tuple<>()), std::tuple<>());
}

TEST(SerializationTest, Optional) {
  EXPECT_EQ(round_trip(std::optional<std::string>()), std::nullopt);
  EXPECT_EQ(round_trip(std::optional<std::string>("present")),
            std::optional<std::string>("present"));
  EXPECT_EQ(round_trip(std::optional<int>(0)), std::optional<int>(0));
}

TEST(SerializationTest, Variant) {
  using Value = std::variant<int, std::string>;
  const Value number = 17;
  const Value text = std::string("seventeen");
  const Value number_back = round_trip(number);
  ASSERT_EQ(number_back.index(), 0u);
  EXPECT_EQ(std::get<int>(number_back), 17);
  const Value text_back = round_trip(text);
  ASSERT_EQ(text_back.index(), 1u);
  EXPECT_EQ(std::get<std::string>(text_back), "seventeen");
}

TEST(SerializationTest, NestedContainers) {
  using Inner = std::vector<std::optional<std::pair<int, std::string>>>;
  using Nested = std::vector<std::map<std::string, Inner>>;
  const Nested value{
      {{"a", {std::make_pair(1, std::string("one")), std::nullopt}}, {"b", {}}},
      {},
      {{"c", {std::nullopt, std::make_pair(3, std::string("three"))}}},
  };
  EXPECT_EQ(round_trip(value), value);

  const std::map<int, std::variant<int, std::vector<std::string>>> mixed{
      {1, 5}, {2, std::vector<std::string>{"p", "q"}}};
  EXPECT_EQ(round_trip(mixed), mixed);
}

TEST(SerializationTest, BoostMemberSerialize) {
  const MemberSerialize value{"member", {1, 2, 3}, 0.75};
  EXPECT_EQ(round_trip(value), value);
  const std::vector<MemberSerialize> several{value, {"", {}, -1.0}};
  EXPECT_EQ(round_trip(several), several);
}

TEST(SerializationTest, BoostFreeSerialize) {
  const FreeSerialize value{"free", {{"x", 1}, {"y", 2}}};
  EXPECT_EQ(round_trip(value), value);
}

TEST(SerializationTest, BoostPrivateSerialize) {
  const PrivateSerialize back = round_trip(PrivateSerialize("hidden", 3));
  EXPECT_EQ(back.secret(), "hidden");
  EXPECT_EQ(back.level(), 3);
}

TEST(SerializationTest, TruncatedInputThrows) {
  const auto bytes = to_bytes(std::vector<int>{1, 2, 3});
  for (size_t keep = 0; keep < bytes.size(); ++keep) {
    const std::vector<std::byte> truncated(bytes.begin(), bytes.begin() + keep);
    EXPECT_THROW(from_bytes<std::vector<int>>(truncated), ProtocolError) << "kept " << keep;
  }
  const auto strings = to_bytes(std::vector<std::string>{"abc", "defg"});
  const std::vector<std::byte> cut(strings.begin(), strings.end() - 1);
  EXPECT_THROW(from_bytes<std::vector<std::string>>(cut), ProtocolError);
  EXPECT_THROW(from_bytes<int>(std::vector<std::byte>(3)), ProtocolError);
}

TEST(SerializationTest, HugeLengthPrefixThrowsWithoutAllocating) {
  const uint64_t huge = uint64_t{1} << 40;
  const auto prefix_only = wire_size(huge);
  const auto with_tail = concat(wire_size(huge), std::vector<std::byte>(64));
  // A successful allocation of 2^40 elements would exhaust memory long before returning.
  EXPECT_THROW(from_bytes<std::vector<int>>(prefix_only), ProtocolError);
  EXPECT_THROW(from_bytes<std::vector<int>>(with_tail), ProtocolError);
  EXPECT_THROW(from_bytes<std::vector<double>>(with_tail), ProtocolError);
  EXPECT_THROW(from_bytes<std::string>(with_tail), ProtocolError);
  EXPECT_THROW(from_bytes<std::vector<std::string>>(with_tail), ProtocolError);
  EXPECT_THROW(from_bytes<std::vector<bool>>(with_tail), ProtocolError);
  using Map = std::map<std::string, std::vector<int>>;
  EXPECT_THROW(from_bytes<Map>(with_tail), ProtocolError);
  EXPECT_THROW(from_bytes<std::set<int>>(with_tail), ProtocolError);
  EXPECT_THROW(from_bytes<MemberSerialize>(with_tail), ProtocolError);
}

TEST(SerializationTest, TrailingBytesThrow) {
  auto bytes = to_bytes(5);
  bytes.push_back(std::byte{0});
  EXPECT_THROW(from_bytes<int>(bytes), ProtocolError);

  auto strings = to_bytes(std::vector<std::string>{"a"});
  strings.push_back(std::byte{0x7f});
  EXPECT_THROW(from_bytes<std::vector<std::string>>(strings), ProtocolError);
}

TEST(SerializationTest, BadVariantIndexThrows) {
  using Value = std::variant<int, std::string>;
  auto bytes = to_bytes(Value(3));
  const uint64_t bad_index = 2;
  std::memcpy(bytes.data(), &bad_index, sizeof bad_index);
  EXPECT_THROW(from_bytes<Value>(bytes), ProtocolError);

  const uint64_t huge_index = std::numeric_limits<uint64_t>::max();
  std::memcpy(bytes.data(), &huge_index, sizeof huge_index);
  EXPECT_THROW(from_bytes<Value>(bytes), ProtocolError);
}

TEST(SerializationTest, BadOptionalFlagThrows) {
  auto bytes = to_bytes(std::optional<int>(1));
  bytes[0] = std::byte{2};
  EXPECT_THROW(from_bytes<std::optional<int>>(bytes), ProtocolError);
}

TEST(SerializationTest, CorruptBoostPayloadThrows) {
  const auto bytes = to_bytes(MemberSerialize{std::string(64, 'm'), {1, 2}, 1.0});
  uint64_t inner = 0;
  std::memcpy(&inner, bytes.data(), sizeof inner);
  ASSERT_EQ(inner + 8, bytes.size());
  // Keep the outer frame consistent so that Boost itself meets the short archive.
  const uint64_t half = inner / 2;
  std::vector<std::byte> shortened = wire_size(half);
  shortened.insert(shortened.end(), bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(half));
  EXPECT_THROW(from_bytes<MemberSerialize>(shortened), ProtocolError);
}

// Regression: a corrupt length inside the Boost archive used to escape as std::length_error or
// std::bad_alloc instead of ProtocolError, and Boost sized the string (gigabytes) before it read.
TEST(SerializationTest, CorruptLengthInsideBoostPayloadThrowsProtocolError) {
  const MemberSerialize value{std::string(77, 'm'), {4, 5}, 2.0};
  const auto bytes = to_bytes(value);
  ASSERT_EQ(from_bytes<MemberSerialize>(bytes), value);

  // Find the 77 'm' bytes of the name and the 8-byte little-endian length just before them.
  const std::vector<std::byte> name(77, std::byte{'m'});
  const auto name_at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
  ASSERT_NE(name_at, bytes.end());
  ASSERT_GE(name_at - bytes.begin(), 8 + 8);  // past the outer frame's own length prefix
  const auto length_offset = static_cast<size_t>(name_at - bytes.begin()) - 8;
  uint64_t length = 0;
  std::memcpy(&length, bytes.data() + length_offset, sizeof length);
  ASSERT_EQ(length, 77u);

  for (const uint64_t corrupt : {uint64_t{1} << 63, uint64_t{1} << 62, uint64_t{1500000000}}) {
    auto damaged = bytes;
    std::memcpy(damaged.data() + length_offset, &corrupt, sizeof corrupt);
    expect_refused_without_large_allocation<MemberSerialize>(damaged, "MemberSerialize");
  }
}

// Regression (fuzzing): a 50-byte message whose archive claims a 1.5 GB string or a vector of
// 2^28 ints made Boost allocate it before the short archive failed.
TEST(SerializationTest, NoLengthInsideABoostArchiveAllocatesMoreThanItsBytes) {
  const MemberSerialize small{"abcde", {4, 5}, 2.0};
  const auto bytes = to_bytes(small);
  ASSERT_LE(bytes.size(), 64u);
  EXPECT_GT(corrupt_every_length<MemberSerialize>(bytes), 0);

  const NestedBoost nested{"n", true, {{{}, {}, {}}, {}, {{}}}, {"one", "two"}};
  const auto nested_bytes = to_bytes(nested);
  ASSERT_EQ(from_bytes<NestedBoost>(nested_bytes), nested);
  EXPECT_GT(corrupt_every_length<NestedBoost>(nested_bytes), 0);
}

// Elements Boost encodes as nothing are possible, but a whole archive may not hold more
// collection elements than it has bytes (nested collections would multiply them).
TEST(SerializationTest, BoostCollectionsMayNotClaimMoreElementsThanTheirBytes) {
  NestedBoost many;
  many.empties.assign(2, std::vector<EmptyBoost>(3));
  EXPECT_EQ(from_bytes<NestedBoost>(to_bytes(many)), many);

  // One inner collection of empties claims more elements than the archive has bytes.
  many.empties.assign(1, std::vector<EmptyBoost>(200));
  const auto bytes = to_bytes(many);
  ASSERT_LT(bytes.size(), 200u);
  expect_refused_without_large_allocation<NestedBoost>(bytes, "collection of 200 elements");
}

// Bucket counts are not element counts: a container reserved large and then cleared, or a set of
// small keys with more buckets than bytes, is a valid archive.
TEST(SerializationTest, BoostUnorderedContainersRoundTripWhateverTheirBucketCounts) {
  HashedBoost hashed;
  hashed.label = "h";
  hashed.counts.reserve(1000);
  hashed.counts = {{"a", 1}, {"b", 2}};
  for (int key = 0; key < 200; ++key) hashed.small.insert(static_cast<uint8_t>(key));
  hashed.pairs = {{1, 2}, {1, 3}};
  hashed.letters = {'x', 'x', 'y'};
  hashed.flags = {true, false, true};
  const auto bytes = to_bytes(hashed);
  ASSERT_LT(bytes.size(), hashed.counts.bucket_count() + hashed.small.bucket_count());
  EXPECT_EQ(from_bytes<HashedBoost>(bytes), hashed);

  HashedBoost emptied;
  emptied.counts.reserve(5000);
  EXPECT_EQ(from_bytes<HashedBoost>(to_bytes(emptied)), emptied);
  EXPECT_GT(corrupt_every_length<HashedBoost>(to_bytes(hashed)), 0);
}

// Regression (fuzzing, UBSan "load of value 2, which is not a valid value for type 'bool'"): a
// bool was decoded by copying a byte, so any byte was taken.
TEST(SerializationTest, BoolIsDecodedOnlyFromZeroOrOne) {
  EXPECT_TRUE(round_trip(true));
  EXPECT_FALSE(round_trip(false));
  EXPECT_EQ(to_bytes(true), std::vector<std::byte>{std::byte{1}});
  for (const auto bad : {std::byte{2}, std::byte{0x80}, std::byte{0xff}}) {
    expect_refused_without_large_allocation<bool>({bad}, "a bool encoded as");
    expect_refused_without_large_allocation<std::optional<bool>>({std::byte{1}, bad}, "bool");
    auto vector_of_bool = concat(wire_size(2), {std::byte{1}, bad});
    expect_refused_without_large_allocation<std::vector<bool>>(vector_of_bool, "bool");
    auto pair_with_bool = to_bytes(std::pair<int, bool>(7, true));
    pair_with_bool.back() = bad;
    expect_refused_without_large_allocation<std::pair<int, bool>>(pair_with_bool, "bool");
  }
  EXPECT_EQ(round_trip(std::optional<bool>(false)), std::optional<bool>(false));
  EXPECT_EQ(round_trip(std::vector<bool>{true, false, true}),
            (std::vector<bool>{true, false, true}));

  // Inside a Boost archive as well.
  NestedBoost flagged{"flag", true, {}, {}};
  auto bytes = to_bytes(flagged);
  const std::vector<std::byte> label{std::byte{'f'}, std::byte{'l'}, std::byte{'a'},
                                     std::byte{'g'}};
  const auto label_at = std::search(bytes.begin(), bytes.end(), label.begin(), label.end());
  ASSERT_NE(label_at, bytes.end());
  const auto flag_at = static_cast<size_t>(label_at - bytes.begin()) + label.size();
  ASSERT_EQ(bytes[flag_at], std::byte{1});
  bytes[flag_at] = std::byte{2};
  expect_refused_without_large_allocation<NestedBoost>(bytes, "a bool encoded as 2");

  // And in an array of bools, which Boost reads as one block.
  HashedBoost with_flags;
  with_flags.label = "flags";
  with_flags.flags = {true, true, true};
  auto flag_bytes = to_bytes(with_flags);
  // The flags are the class's last member: the archive's last three bytes.
  ASSERT_EQ(flag_bytes[flag_bytes.size() - 2], std::byte{1});
  flag_bytes[flag_bytes.size() - 2] = std::byte{7};
  expect_refused_without_large_allocation<HashedBoost>(flag_bytes, "a bool encoded as 7");
}

// Regression: containers of zero-byte elements used to be refused, because their length prefix
// was checked against one byte per element.
TEST(SerializationTest, ContainersOfZeroByteElementsRoundTrip) {
  const std::vector<std::tuple<>> tuples(3);
  EXPECT_EQ(to_bytes(tuples).size(), 8u);
  EXPECT_EQ(round_trip(tuples), tuples);
  EXPECT_EQ(round_trip(tuples).size(), 3u);

  const std::set<std::tuple<>> set{{}};
  EXPECT_EQ(round_trip(set), set);
  EXPECT_EQ(round_trip(set).size(), 1u);

  const std::vector<std::array<int, 0>> arrays(2);
  EXPECT_EQ(to_bytes(arrays).size(), 8u);
  EXPECT_EQ(round_trip(arrays), arrays);
  EXPECT_EQ(round_trip(arrays).size(), 2u);

  const std::vector<std::tuple<>> many(1000);
  EXPECT_EQ(round_trip(many).size(), 1000u);
  EXPECT_TRUE(round_trip(std::vector<std::tuple<>>()).empty());
}

TEST(SerializationTest, HugeLengthOfZeroByteElementsThrows) {
  for (const uint64_t huge :
       {(uint64_t{1} << 20) + 1, uint64_t{1} << 40, std::numeric_limits<uint64_t>::max()}) {
    const auto prefix = wire_size(huge);
    expect_refused_without_large_allocation<std::vector<std::tuple<>>>(prefix, "std::tuple<>");
    expect_refused_without_large_allocation<std::set<std::tuple<>>>(prefix, "std::tuple<>");
    expect_refused_without_large_allocation<std::vector<std::array<int, 0>>>(prefix,
                                                                             "std::array<int, 0");
    // Types made only of zero-byte parts encode to nothing too.
    expect_refused_without_large_allocation<std::vector<std::pair<std::tuple<>, std::tuple<>>>>(
        prefix, "std::pair");
    expect_refused_without_large_allocation<std::vector<std::tuple<std::array<char, 0>>>>(prefix,
                                                                                          "tuple");
  }
}

// Regression (fuzzing): each container's count of zero-byte elements was capped, but not their
// product: 136 bytes of nested vectors made 268 million elements (256 MB) in 0.9 s.
TEST(SerializationTest, NestedContainersOfZeroByteElementsShareOneBound) {
  using Nested = std::vector<std::vector<std::tuple<>>>;
  const auto nested = [](uint64_t outer, uint64_t inner) {
    std::vector<std::byte> bytes = wire_size(outer);
    for (uint64_t i = 0; i < outer; ++i) bytes = concat(std::move(bytes), wire_size(inner));
    return bytes;
  };
  const auto fuzzed = nested(16, uint64_t{1} << 24);
  EXPECT_EQ(fuzzed.size(), 136u);
  expect_refused_without_large_allocation<Nested>(fuzzed, "std::tuple<>");

  // The bound is on all of them together: 2^20 in 16 vectors decode, one vector more is refused.
  const uint64_t share = fiber::serial::Reader::kMaxZeroByteElements / 16;
  const auto at_bound = from_bytes<Nested>(nested(16, share));
  ASSERT_EQ(at_bound.size(), 16u);
  EXPECT_EQ(at_bound.back().size(), share);
  expect_refused_without_large_allocation<Nested>(nested(17, share), "no bytes");
}

// Regression: a variant with a repeated alternative type did not compile, and must keep its index.
TEST(SerializationTest, VariantWithRepeatedAlternativeKeepsIndex) {
  using Value = std::variant<int, int>;
  const Value first(std::in_place_index<0>, 11);
  const Value second(std::in_place_index<1>, 22);

  const Value first_back = round_trip(first);
  ASSERT_EQ(first_back.index(), 0u);
  EXPECT_EQ(std::get<0>(first_back), 11);

  const Value second_back = round_trip(second);
  ASSERT_EQ(second_back.index(), 1u);
  EXPECT_EQ(std::get<1>(second_back), 22);

  EXPECT_NE(to_bytes(first), to_bytes(Value(std::in_place_index<1>, 11)));

  const std::vector<Value> mixed{first, second, Value(std::in_place_index<1>, -3)};
  const auto mixed_back = round_trip(mixed);
  ASSERT_EQ(mixed_back.size(), 3u);
  EXPECT_EQ(mixed_back[0].index(), 0u);
  EXPECT_EQ(mixed_back[1].index(), 1u);
  EXPECT_EQ(mixed_back[2].index(), 1u);
  EXPECT_EQ(mixed_back, mixed);
}

TEST(SerializationTest, ReaderReadsSequentially) {
  fiber::serial::Writer writer;
  fiber::serial::save(writer, 11);
  fiber::serial::save(writer, std::string("mid"));
  fiber::serial::save(writer, 2.5);
  const auto bytes = writer.take();
  fiber::serial::Reader reader(bytes);
  EXPECT_EQ(fiber::serial::read<int>(reader), 11);
  EXPECT_EQ(fiber::serial::read<std::string>(reader), "mid");
  EXPECT_FALSE(reader.at_end());
  EXPECT_EQ(fiber::serial::read<double>(reader), 2.5);
  EXPECT_TRUE(reader.at_end());
  EXPECT_THROW(fiber::serial::read<char>(reader), ProtocolError);
}

}  // namespace
}  // namespace serialization_test
