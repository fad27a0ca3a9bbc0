//===- tests/fuzz/JsonLimitsFuzz.cpp - libFuzzer target: deep, large JSON ===//
//
// Descriptor JSON built to exhaust the parser: the fuzzer's text wrapped in
// up to tens of thousands of brackets, or repeated past the size limit.
// Parsing must return (never overflow the stack or allocate without
// bound), refuse what is over the limits, and quote what it refuses in a
// bounded message.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/DescriptorJson.h"

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>

using namespace gatherjit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  FuzzedDataProvider P(Data, Size);
  const unsigned Mode = P.ConsumeIntegralInRange<unsigned>(0, 2);
  const size_t Count = P.ConsumeIntegralInRange<size_t>(0, 50000);
  const char Open = P.ConsumeBool() ? '[' : '{';
  const std::string Core = P.ConsumeRemainingBytesAsString();
  std::string Text;
  if (Mode == 0) {
    // Nested: brackets around the fuzzer's text.
    Text = std::string(Count, Open) + Core + std::string(Count, Open == '[' ? ']' : '}');
  } else if (Mode == 1) {
    // Large: the text repeated, often past the limit.
    for (size_t I = 0; I < Count && Text.size() <= MaxDescriptorBytes + 16; ++I)
      Text += Core.empty() ? std::string(64, ' ') : Core;
  } else {
    // A long string value the error message must cut.
    Text = "{\"operator\": \"" + std::string(Count, 'G') + Core + "\"}";
  }
  Expected<JsonDescriptor> D = parseDescriptorJson(Text);
  if (Text.size() > MaxDescriptorBytes && D)
    std::abort();
  if (Mode == 0 && Count > MaxDescriptorDepth && D)
    std::abort();
  if (!D && D.status().message().size() > 4096)
    std::abort();
  return 0;
}
