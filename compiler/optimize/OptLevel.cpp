//===- compiler/optimize/OptLevel.cpp - Optimization level names ---------===//

#include "gatherjit/OptLevel.h"

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

} // namespace gatherjit
