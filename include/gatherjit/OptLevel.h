//===- gatherjit/OptLevel.h - Optimization levels ------------------------===//
/// \file
/// The optimization levels of the JIT and of ahead-of-time compilation.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_OPTLEVEL_H
#define GATHERJIT_OPTLEVEL_H

#include <optional>
#include <string_view>

namespace gatherjit {

/// O0: no optimization. O1: the quick tier (clean-up only, fast code
/// generation). O2 (the default): loop optimization and vectorization, with
/// small kernels starting at O1 (see RuntimeOptions::QuickTier). O3: LLVM's
/// full default pipeline.
enum class OptLevel { O0, O1, O2, O3 };
const char *optLevelName(OptLevel Level); // "O0".."O3"
/// Parses "O0".."O3" (or "0".."3"); std::nullopt otherwise.
std::optional<OptLevel> parseOptLevel(std::string_view Name);

} // namespace gatherjit

#endif
