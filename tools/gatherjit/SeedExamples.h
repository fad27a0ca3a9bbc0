//===- tools/gatherjit/SeedExamples.h - The seed documents' examples -----===//
/// \file
/// Every example of the seed documents (DirectML GatherElements and Gather,
/// ONNX GatherElements) with the exact output the document prints. The demo
/// runs them and the tests assert them.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TOOLS_SEEDEXAMPLES_H
#define GATHERJIT_TOOLS_SEEDEXAMPLES_H

#include "gatherjit/Validate.h"

#include <string>
#include <vector>

namespace gatherjit {

struct SeedExample {
  std::string Name;
  std::string Note; ///< Where the example departs from its document, why.
  Expected<ValidDesc> Desc = Status::internal("unset");
  std::vector<float> Input;
  std::vector<int64_t> Indices;
  std::vector<float> ExpectedOutput;
  std::vector<uint64_t> ExpectedShape;

  /// The indices encoded in the descriptor's index type.
  std::vector<char> indexBytes() const;
};

std::vector<SeedExample> seedExamples();

} // namespace gatherjit

#endif
