//===- runtime/KernelState.h - What a Kernel handle holds ----------------===//
#ifndef GATHERJIT_RUNTIME_KERNELSTATE_H
#define GATHERJIT_RUNTIME_KERNELSTATE_H

#include "compiler/spec/KernelSpec.h"
#include "gatherjit/Runtime.h"
#include "runtime/ThreadPool.h"
#include "runtime/TieredCode.h"

#include <memory>
#include <string>

namespace gatherjit {

/// Everything a Kernel handle needs, shared by the handles of one
/// descriptor: a cache hit for an equal descriptor copies one pointer.
struct Kernel::State {
  ValidDesc Desc;
  KernelSpec Spec;
  std::shared_ptr<TieredCode> Code; ///< Null for an empty output.
  std::string Symbol;
  bool FromDisk = false;
  CompileTimes Times; ///< Of the compile that made Code, if this one did.
  uint64_t Rows = 0;
  /// True if run() splits the rows across the pool (decided once: a tiny
  /// kernel's run is a few nanoseconds).
  bool Split = false;
  std::shared_ptr<ThreadPool> Pool;
};

} // namespace gatherjit

#endif
