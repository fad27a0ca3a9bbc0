//===- runtime/CachedKernels.h - Kernels from the cache, without LLVM -----===//
/// \file
/// Finds the kernel of a descriptor in the kernel cache and links it with
/// compiler/backend/ObjectLoader.h: what the command line's gatherjit does before it
/// hands a run to the compiler (tools/gatherjit/main.cpp). It finds what a
/// Runtime with the same options stored: the runtime's level first (an
/// upgraded kernel), then the first tier.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_CACHEDKERNELS_H
#define GATHERJIT_RUNTIME_CACHEDKERNELS_H

#include "gatherjit/Runtime.h"
#include "runtime/DiskCache.h"

#include <memory>
#include <optional>

namespace gatherjit {

class ThreadPool;

class CachedKernels {
public:
  /// The cache of \p Options.CacheDir; std::nullopt if there is none or it
  /// cannot be used. Quiet: whoever compiles instead warns.
  static std::optional<CachedKernels> open(const RuntimeOptions &Options);

  /// The kernel of \p Desc, or std::nullopt if the cache holds none that
  /// can be linked here (or \p Desc has an epilogue, which needs clang).
  std::optional<Kernel> find(const ValidDesc &Desc) const;

  /// The kernel of \p Desc on the generic loop, where a runtime with
  /// \p Options would start it there and \p Runs calls would not make it
  /// hot: a run that needs no compiler. std::nullopt otherwise (an
  /// epilogue, Specialize::AtCompile, a call large enough to specialize
  /// first, or runs enough to specialize in the background).
  static std::optional<Kernel> generic(const ValidDesc &Desc, const RuntimeOptions &Options,
                                       uint64_t Runs);

private:
  CachedKernels(DiskCache Disk, const RuntimeOptions &Options);
  DiskCache Disk;
  RuntimeOptions Options;
  std::shared_ptr<ThreadPool> Pool;
};

} // namespace gatherjit

#endif
