//===- compiler/backend/Executable.h - Code a kernel handle runs ---------===//
/// \file
/// What the runtime's cache and Kernel handles hold and run: compiled code
/// for one spec, behind one call. Host code linked by the JIT is one kind
/// (compiler/backend/Jit.h); a device function is another.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_BACKEND_EXECUTABLE_H
#define GATHERJIT_COMPILER_BACKEND_EXECUTABLE_H

#include <cstdint>
#include <memory>

namespace gatherjit {

struct KernelSpec;

class Executable {
public:
  virtual ~Executable() = default;
  /// Runs rows [Begin, End) of the outermost loop (clamped to the kernel's
  /// rows). Returns 0, or under Check 1 + the row-major position in the
  /// indices of the first out-of-range index, or EpilogueFaulted.
  virtual int64_t runRows(const void *Input, const void *Indices, void *Output, int64_t Begin,
                          int64_t End) const = 0;
  /// Starts rows [Begin, End) on a device without waiting for them:
  /// DeviceFailed, or 0 (a bad index is finishLaunches' to report). Code
  /// that runs on the calling thread runs them, as runRows.
  virtual int64_t launchRows(const void *Input, const void *Indices, void *Output, int64_t Begin,
                             int64_t End) const {
    return runRows(Input, Indices, Output, Begin, End);
  }
  /// Waits for the launches on the calling thread's stream (see
  /// StreamScope) and returns 0, DeviceFailed, or 1 + the position of the
  /// first bad index of the first of them, in launch order, that found
  /// one, with *\p Indices set to that launch's indices.
  virtual int64_t finishLaunches(const void **Indices) const {
    (void)Indices;
    return 0;
  }
  /// A family kernel's code (KernelSpec::Family) bound to \p Shape, a spec
  /// of its family, where the code binds shapes itself (a device kernel's
  /// launches pass the shape); null where the caller binds it through
  /// entryAddress (runtime/FamilyCode.h).
  virtual std::shared_ptr<const Executable> forShape(const KernelSpec &Shape) const {
    (void)Shape;
    return nullptr;
  }
  /// The native NAME_range entry, for a caller that knows its signature (a
  /// family kernel's also takes its shape); null for code that has none.
  virtual void *entryAddress() const { return nullptr; }
};

} // namespace gatherjit

#endif
