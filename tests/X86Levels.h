//===- tests/X86Levels.h - The portable x86-64 levels a test runs code of -===//
//
// x86-64's portable levels, each a plan of its own (no vector gathers at
// x86-64 and -v2, AVX2's at -v3, AVX-512's at -v4), and the feature this
// machine must have to run code made for one.
//
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TESTS_X86LEVELS_H
#define GATHERJIT_TESTS_X86LEVELS_H

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include <iostream>

namespace gatherjit::test {

struct X86Level {
  const char *Cpu;
  const char *Feature;
};

inline constexpr X86Level X86Levels[] = {
    {"x86-64", "sse2"}, {"x86-64-v2", "sse4.2"}, {"x86-64-v3", "avx2"}, {"x86-64-v4", "avx512bw"}};

/// True if this machine runs \p L's code; else says which level is skipped.
inline bool runsHere(const X86Level &L) {
  if (llvm::sys::getHostCPUFeatures().lookup(L.Feature))
    return true;
  std::cout << "[ SKIPPED  ] " << L.Cpu << ": this machine lacks " << L.Feature << "\n";
  return false;
}

} // namespace gatherjit::test

#endif
