#pragma once

#include <cstddef>
#include <string_view>

// How many times `what` occurs in `text` (a PTX module: barriers, loads of a kind).
inline std::size_t occurrences(std::string_view text, std::string_view what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string_view::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}
