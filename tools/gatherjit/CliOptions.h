//===- tools/gatherjit/CliOptions.h - Strict option values ---------------===//
/// \file
/// Integer options as a person types them. CLI11 alone takes "" as 0,
/// accepts "+1", " 1" and "0x10", and saturates 99999999999999999999 to
/// INT64_MAX; these options take an optional '-' and decimal digits within
/// the option's range, and nothing else. Also the flags several commands
/// share (the fused epilogue's).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_CLIOPTIONS_H
#define GATHERJIT_TOOLS_CLIOPTIONS_H

#include "Problem.h"
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
        const std::string Range =
            "an integer in " + std::to_string(Min) + ".." + std::to_string(Max);
        const char *Begin = Text.data(), *End = Text.data() + Text.size();
        const char *Digits = Begin + (Begin != End && *Begin == '-');
        if (Digits == End ||
            std::find_if_not(Digits, End, [](char C) { return C >= '0' && C <= '9'; }) != End)
          return quote(Text, 40) + " is not " + Range;
        int64_t Value;
        auto [Ptr, Err] = std::from_chars(Begin, End, Value);
        if (Err != std::errc() || Ptr != End || Value < Min || Value > Max)
          return quote(Text, 40) + " is not " + Range;
        return std::string();
      },
      "INT");
}

/// The fused epilogue's flags, on a command that compiles kernels.
inline void addEpilogueFlags(CLI::App *Sub, EpilogueFlags &F) {
  Sub->add_option("--epilogue", F.File,
                  "C source of an epilogue fused into the kernels (see --epilogue-fn)");
  Sub->add_option("--epilogue-fn", F.Function,
                  "the epilogue's function: OUT f(IN x) per element or void f(const IN *row, "
                  "OUT *out) per row, optionally with a last const P *params");
  Sub->add_option("--epilogue-params", F.Params,
                  "a file of the bytes the epilogue's params pointer points at");
  Sub->add_option("--epilogue-row-out", F.RowOut,
                  "a row epilogue's output row length (default: the input's)")
      ->check(integerIn(1, int64_t(1) << 40));
  Sub->add_flag("--epilogue-checked", F.Checked,
                "check every memory access of the epilogue at run time (an access outside its "
                "row, output row, parameters and own variables fails the run)");
}

} // namespace gatherjit

#endif
