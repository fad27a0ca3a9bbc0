//===- tools/gatherjit/CliOptions.h - Strict option values ---------------===//
/// \file
/// Integer options as a person types them. CLI11 alone takes "" as 0,
/// accepts "+1", " 1" and "0x10", and saturates 99999999999999999999 to
/// INT64_MAX; these options take an optional '-' and decimal digits within
/// the option's range, and nothing else.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_CLIOPTIONS_H
#define GATHERJIT_TOOLS_CLIOPTIONS_H

#include "gatherjit/Status.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <string>

namespace gatherjit {

/// A validator for integers in [Min, Max].
inline CLI::Validator integerIn(int64_t Min, int64_t Max) {
  return CLI::Validator(
      [Min, Max](std::string &Text) -> std::string {
        const std::string Range = "an integer in " + std::to_string(Min) + ".." + std::to_string(Max);
        const char *Begin = Text.data(), *End = Text.data() + Text.size();
        const char *Digits = Begin + (Begin != End && *Begin == '-');
        if (Digits == End || std::find_if_not(Digits, End, [](char C) {
                               return C >= '0' && C <= '9';
                             }) != End)
          return quote(Text, 40) + " is not " + Range;
        int64_t Value;
        auto [Ptr, Err] = std::from_chars(Begin, End, Value);
        if (Err != std::errc() || Ptr != End || Value < Min || Value > Max)
          return quote(Text, 40) + " is not " + Range;
        return std::string();
      },
      "INT");
}

} // namespace gatherjit

#endif
