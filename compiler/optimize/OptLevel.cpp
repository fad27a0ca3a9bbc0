//===- compiler/optimize/OptLevel.cpp - Optimization levels (no LLVM) ----===//

#include "gatherjit/OptLevel.h"

#include "compiler/optimize/Optimize.h"
#include "compiler/spec/KernelSpec.h"

namespace gatherjit {

const char *optLevelName(OptLevel Level) {
  switch (Level) {
  case OptLevel::O0:
    return "O0";
  case OptLevel::O1:
    return "O1";
  case OptLevel::O2:
    return "O2";
  case OptLevel::O3:
    return "O3";
  }
  return "?";
}

std::optional<OptLevel> parseOptLevel(std::string_view Name) {
  if (Name.size() == 2 && (Name[0] == 'O' || Name[0] == 'o'))
    Name.remove_prefix(1);
  if (Name.size() != 1 || Name[0] < '0' || Name[0] > '3')
    return std::nullopt;
  return static_cast<OptLevel>(Name[0] - '0');
}

OptLevel kernelLevel(const KernelSpec &Spec, OptLevel Requested) {
  // A family kernel serves shapes of every size: the runtime's level.
  if (Requested == OptLevel::O2 && !Spec.Family && Spec.outputBytes() <= QuickKernelBytes)
    return OptLevel::O1;
  return Requested;
}

} // namespace gatherjit
