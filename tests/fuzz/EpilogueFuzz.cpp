//===- tests/fuzz/EpilogueFuzz.cpp - libFuzzer target for epilogue sources ===//
//
// Compiles fuzzed C sources as epilogues the way every host does, through
// the helper process: whatever the source (a crash of clang, a blow-up, a
// directive reaching for files), the fuzzer's process must go on, and the
// answer is a module or one clean error line (for odd-sized inputs, compiled
// checked). The helper is the one named
// by GATHERJIT_EPILOGUE_HELPER (a build with clang's libraries; the fuzz
// build has none).
//
//===----------------------------------------------------------------------===//

#include "compiler/epilogue/Epilogue.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

using namespace gatherjit;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  Epilogue E;
  E.Source.assign(reinterpret_cast<const char *>(Data), Size);
  // Mutations put NUL bytes everywhere, which the first check refuses: as
  // line breaks they reach clang.
  std::replace(E.Source.begin(), E.Source.end(), '\0', '\n');
  E.Function = "f";
  E.Checked = Size % 2 == 1; // Half the inputs through checked mode's rewrite.
  const EpilogueTarget Target = {"x86_64-unknown-linux-gnu", "", "", 4, 4};
  EpilogueLimits Limits;
  Limits.Seconds = 10;
  Limits.MemoryBytes = uint64_t(1) << 30;
  Expected<std::shared_ptr<const EpilogueCode>> Code = compileEpilogue(E, Target, Limits);
  if (Code) {
    if ((*Code)->Bitcode.empty())
      std::abort();
    return 0;
  }
  const Status S = Code.status();
  const std::string &Message = S.message();
  if (Message.empty() || Message.find('\n') != std::string::npos ||
      S.code() == ErrorCode::Internal) {
    std::fprintf(stderr, "epilogue fuzz: unclean error: %s\n", Message.c_str());
    std::abort();
  }
  return 0;
}
