//===- tests/fuzz/DescFuzz.cpp - libFuzzer target for descriptor JSON ----===//
//
// Parses descriptor JSON and validates it; a descriptor that validates is
// canonical enough to run: the interpreter runs it on zeroed buffers of the
// sizes validation proved, which must not read or write outside them.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/DescriptorJson.h"
#include "gatherjit/Interpreter.h"

#include <vector>

using namespace gatherjit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  Expected<JsonDescriptor> D =
      parseDescriptorJson(std::string_view(reinterpret_cast<const char *>(Data), Size));
  if (!D)
    return 0;
  Expected<ValidDesc> V = D->validate();
  if (!V)
    return 0;
  // Keep the fuzzer fast: run only small problems.
  const uint64_t Limit = 1 << 16;
  const uint64_t InN = requiredElements(V->Input), IdxN = requiredElements(V->Indices),
                 OutN = requiredElements(V->Output);
  if (InN > Limit || IdxN > Limit || OutN > Limit || V->outputElements() > Limit)
    return 0;
  std::vector<char> In(InN * V->Input.elementBytes()), Idx(IdxN * V->Indices.elementBytes()),
      Out(OutN * V->Output.elementBytes());
  (void)interpret(*V, In.data(), Idx.data(), Out.data());
  return 0;
}
