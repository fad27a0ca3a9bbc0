//===- gatherjit/Aot.h - Kernels compiled ahead of time ------------------===//
/// \file
/// Compiles validated descriptors into one relocatable object file and a C
/// header, with the same IR and optimization pipeline as the JIT. For each
/// kernel named NAME the object defines (the C ABI; scripts depend on it):
///
///   int64_t NAME(const void *input, const void *indices, void *output);
///   int64_t NAME_range(const void *input, const void *indices, void *output,
///                      int64_t begin, int64_t end);
///   extern const int64_t NAME_rows;
///
/// returning 0, or under Check 1 + the row-major position in the indices
/// tensor of the first out-of-range index among those the output reads (a
/// kernel whose output is empty reads none and returns 0, where
/// Kernel::run checks every index, as ONNX has it), or -1 (EpilogueFaulted) when a
/// checked epilogue made an access outside its regions. The object needs nothing at run
/// time but the C library (memcpy).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_AOT_H
#define GATHERJIT_AOT_H

#include "gatherjit/Compile.h"
#include "gatherjit/Validate.h"

#include <string>
#include <vector>

namespace gatherjit {

struct AotKernel {
  /// A C identifier, unique within one object.
  std::string Name;
  /// The gather; with an epilogue, the plain one it retypes (see
  /// withEpilogue).
  ValidDesc Desc;
  /// A fused epilogue (none if its Function is empty), compiled for the
  /// object's target, and its output rows' length (0: the input's).
  Epilogue Fused = {};
  uint64_t RowOut = 0;
};

/// Where the object will run (the JIT's target description).
using AotTarget = TargetDesc;

struct AotResult {
  /// The object file; for nvptx64-nvidia-cuda, the PTX module's text.
  std::vector<char> Object;
  std::string Header;
  /// The triple and CPU the object was built for.
  std::string Triple, Cpu;
};

/// Compiles \p Kernels into one object and a header whose include guard is
/// derived from \p HeaderName (e.g. "kernels.h"). InvalidArgument for a bad
/// or repeated name, an unknown triple or CPU.
Expected<AotResult> compileAot(const std::vector<AotKernel> &Kernels, const AotTarget &Target,
                               OptLevel Level, const std::string &HeaderName);

/// Writes \p R's object to \p ObjectPath and, unless \p HeaderPath is
/// empty, its header: each staged in a temporary file beside its
/// destination and renamed over it once both are written, so a failure
/// replaces neither. InvalidArgument if both paths name one file.
Status writeAot(const AotResult &R, const std::string &ObjectPath, const std::string &HeaderPath);

/// True if \p Name is a valid C identifier (and not reserved by the ABI's
/// suffixes colliding with another kernel; see compileAot).
bool isCIdentifier(const std::string &Name);

/// Why \p Name may not name a kernel though it is a C identifier (a C or
/// C++ keyword, a C library name or prefix the standard reserves, gj_), or
/// "" if it may.
std::string reservedCName(const std::string &Name);

} // namespace gatherjit

#endif
