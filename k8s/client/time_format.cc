#include "k8s/client/time_format.h"

#include <cstdio>
#include <stdexcept>
#include <string>

namespace fiber::k8s {
namespace {

using std::chrono::days;
using std::chrono::floor;
using std::chrono::microseconds;
using std::chrono::seconds;

struct Broken {
  int year;
  unsigned month, day, hour, minute, second;
  long long micros;
};

Broken break_down(SystemTime time) {
  const auto micros_since_epoch = floor<microseconds>(time.time_since_epoch());
  const auto day_start = floor<days>(micros_since_epoch);
  const std::chrono::year_month_day date{std::chrono::sys_days{day_start}};
  const auto in_day = micros_since_epoch - day_start;
  const auto total_seconds = floor<seconds>(in_day).count();
  return Broken{static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()),
                static_cast<unsigned>(total_seconds / 3600),
                static_cast<unsigned>(total_seconds / 60 % 60),
                static_cast<unsigned>(total_seconds % 60),
                (in_day - seconds(total_seconds)).count()};
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads exactly `count` digits at `pos`.
bool read_number(std::string_view text, std::size_t& pos, std::size_t count, int& value) {
  if (pos + count > text.size()) return false;
  value = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const char c = text[pos + i];
    if (!is_digit(c)) return false;
    value = value * 10 + (c - '0');
  }
  pos += count;
  return true;
}

bool expect(std::string_view text, std::size_t& pos, char wanted) {
  if (pos >= text.size()) return false;
  const char c = text[pos];
  const bool matches =
      c == wanted || (wanted == 'T' && (c == 't' || c == ' ')) || (wanted == 'Z' && c == 'z');
  if (matches) ++pos;
  return matches;
}

}  // namespace

std::string format_time(SystemTime time) {
  const Broken b = break_down(time);
  char text[32];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02u:%02u:%02uZ", b.year, b.month, b.day, b.hour,
                b.minute, b.second);
  return text;
}

std::string format_micro_time(SystemTime time) {
  const Broken b = break_down(time);
  char text[40];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02u:%02u:%02u.%06lldZ", b.year, b.month, b.day,
                b.hour, b.minute, b.second, b.micros);
  return text;
}

std::optional<SystemTime> parse_time(std::string_view text) {
  std::size_t pos = 0;
  int year, month, day, hour, minute, second;
  if (!read_number(text, pos, 4, year) || !expect(text, pos, '-') ||
      !read_number(text, pos, 2, month) || !expect(text, pos, '-') ||
      !read_number(text, pos, 2, day) || !expect(text, pos, 'T') ||
      !read_number(text, pos, 2, hour) || !expect(text, pos, ':') ||
      !read_number(text, pos, 2, minute) || !expect(text, pos, ':') ||
      !read_number(text, pos, 2, second)) {
    return std::nullopt;
  }
  long long micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const std::size_t first_digit = pos;
    long long scale = 100000;
    while (pos < text.size() && is_digit(text[pos])) {
      micros += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == first_digit) return std::nullopt;
  }
  int offset_minutes = 0;
  if (expect(text, pos, 'Z')) {
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    int offset_hours, offset_mins;
    if (!read_number(text, pos, 2, offset_hours) || !expect(text, pos, ':') ||
        !read_number(text, pos, 2, offset_mins) || offset_hours > 23 || offset_mins > 59) {
      return std::nullopt;
    }
    offset_minutes = sign * (offset_hours * 60 + offset_mins);
  } else {
    return std::nullopt;
  }
  if (pos != text.size()) return std::nullopt;

  const std::chrono::year_month_day date{std::chrono::year{year},
                                         std::chrono::month{static_cast<unsigned>(month)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  // 60 allows a leap second; like Go, it is folded into the next minute.
  if (!date.ok() || hour > 23 || minute > 59 || second > 60) return std::nullopt;
  const auto since_epoch = std::chrono::sys_days{date}.time_since_epoch() +
                           std::chrono::hours(hour) + std::chrono::minutes(minute) +
                           seconds(second) + microseconds(micros) -
                           std::chrono::minutes(offset_minutes);
  // A time point counts nanoseconds in 64 bits: from 1677 to 2262. A later or earlier date
  // (valid RFC 3339 up to 9999) is refused, not wrapped around.
  using Micros = std::chrono::microseconds;
  if (since_epoch > std::chrono::duration_cast<Micros>(SystemTime::duration::max()) ||
      since_epoch < std::chrono::duration_cast<Micros>(SystemTime::duration::min()))
    return std::nullopt;
  return SystemTime{std::chrono::duration_cast<SystemTime::duration>(since_epoch)};
}

SystemTime parse_time_or_throw(std::string_view text) {
  if (auto time = parse_time(text)) return *time;
  throw std::invalid_argument("not an RFC 3339 timestamp: \"" + std::string(text) + "\"");
}

}  // namespace fiber::k8s
