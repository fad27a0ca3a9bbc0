//===- gatherjit/Compile.h - What one compile is for and what it cost ----===//
/// \file
/// The machine code is generated for (TargetDesc) and where a compile spent
/// its time (CompileTimes): shared by the JIT and ahead-of-time
/// compilation.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILE_H
#define GATHERJIT_COMPILE_H

#include "gatherjit/OptLevel.h"

#include <string>

namespace gatherjit {

/// The machine code is generated for. An empty Triple is the host's; an
/// empty Cpu with an empty Triple is the host CPU with all its features,
/// otherwise the target's generic CPU. Cpu "host" names the host CPU
/// explicitly. A Triple is normalized as clang does ("x86_64-windows-msvc"
/// is "x86_64-unknown-windows-msvc"); one whose pointers are narrower than
/// 64 bits, and an NVPTX Cpu before sm_70, is an InvalidArgument error.
struct TargetDesc {
  std::string Triple;
  std::string Cpu;
  /// Extra features, LLVM's spelling: "+avx2,-avx512f". A name the target
  /// does not have is an InvalidArgument error.
  std::string Features;
};

/// Where one compile spent its time, in milliseconds. A kernel loaded from
/// the persistent cache has Load set and no Optimize or Codegen.
struct CompileTimes {
  double Emit = 0, Optimize = 0, Codegen = 0, Load = 0, Link = 0;
  double total() const { return Emit + Optimize + Codegen + Load + Link; }
};

} // namespace gatherjit

#endif
