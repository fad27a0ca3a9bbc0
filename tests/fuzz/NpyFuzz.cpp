//===- tests/fuzz/NpyFuzz.cpp - libFuzzer target for the .npy reader -----===//
//
// Any byte string must parse or fail with a status; a parsed array must be
// self-consistent (its data exactly fills its shape) and survive re-encoding.
//
//===----------------------------------------------------------------------===//

#include "Npy.h"

#include <cstdlib>

using namespace gatherjit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  Expected<NpyArray> A = parseNpy(std::string_view(reinterpret_cast<const char *>(Data), Size));
  if (!A)
    return 0;
  if (A->Data.size() != A->elementCount() * A->ElementBytes)
    std::abort();
  (void)A->tensor();
  std::vector<char> C = A->cOrderData();
  if (C.size() != A->Data.size())
    std::abort();
  std::string Again = encodeNpy(A->Descr, A->Shape, C.data(), C.size());
  Expected<NpyArray> B = parseNpy(Again);
  if (!B || B->Shape != A->Shape || B->Data != C)
    std::abort();
  return 0;
}
