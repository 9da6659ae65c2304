// The types the serial fuzz target decodes, with a sample value of each for its seeds.
#pragma once

#include <array>
#include <boost/serialization/string.hpp>
#include <boost/serialization/vector.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace fiber::fuzz {

/// A user's class, which travels through Boost.Serialization and its bounded archive.
struct Sample {
  int id = 0;
  std::vector<std::string> names;
  double weight = 0;
  template <class Archive>
  void serialize(Archive& archive, unsigned) {
    archive& id;
    archive& names;
    archive& weight;
  }
};

/// The common types of a task's arguments and results, and the ones that once made a decode
/// allocate what the input could not justify (elements that encode to nothing).
using Types = std::tuple<int64_t, bool, std::string, std::vector<int>, std::vector<std::string>,
                         std::vector<bool>, std::optional<bool>, std::optional<std::vector<double>>,
                         std::map<std::string, int>, std::unordered_map<int, std::string>,
                         std::set<std::string>, std::pair<std::string, std::vector<int>>,
                         std::tuple<int, std::string, std::optional<int>>,
                         std::variant<int, std::string, std::vector<int>>, std::array<int, 3>,
                         std::vector<std::vector<std::tuple<>>>, std::vector<std::array<int, 0>>,
                         std::vector<std::vector<std::string>>, Sample, std::vector<Sample>>;

/// A value of every type, as a program sends them.
inline Types sample_values() {
  return Types{-42,
               true,
               "a string",
               {1, 2, 3},
               {"a", "bb"},
               {true, false, true},
               false,
               std::vector<double>{0.5, 1.5},
               {{"x", 1}, {"y", 2}},
               {{1, "one"}},
               {"s", "t"},
               {"pair", {4, 5}},
               {7, "seven", 8},
               std::string("variant"),
               {1, 2, 3},
               {{{}, {}}, {}},
               {{}, {}},
               {{"nested"}, {}},
               Sample{3, {"n"}, 0.25},
               {Sample{1, {}, 1.0}, Sample{2, {"m", "n"}, 2.0}}};
}

}  // namespace fiber::fuzz
