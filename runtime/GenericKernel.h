//===- runtime/GenericKernel.h - Tier 0: one loop for every shape --------===//
/// \file
/// A gather with run-time sizes and strides, written as a library writes its
/// generic loop: dispatch once on element size, index type, policy and tuple
/// form, then a tight innermost loop, or a memcpy per contiguous block. It
/// exists before any descriptor is seen, so a new shape runs at once (the
/// runtime's generic tier, see RuntimeOptions::Specialization) while its
/// specialized kernel is compiled in the background; the benchmarks measure
/// the specialized kernels against it. The interpreter stays the reference.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_GENERICKERNEL_H
#define GATHERJIT_RUNTIME_GENERICKERNEL_H

#include "compiler/backend/Executable.h"
#include "compiler/spec/KernelSpec.h"

#include <memory>

namespace gatherjit {

/// Runs rows [Begin, End) of \p Spec (clamped to its rows). Returns 0, or
/// under Check 1 + the position of the first out-of-range index, like a
/// compiled kernel. \p Spec must have no epilogue.
int64_t runGeneric(const KernelSpec &Spec, const void *Input, const void *Indices, void *Output,
                   uint64_t Begin, uint64_t End);

/// The generic loop bound to one spec: what a kernel handle runs before its
/// specialized code exists.
class GenericCode final : public Executable {
public:
  explicit GenericCode(std::shared_ptr<const KernelSpec> S) : Spec(std::move(S)) {}
  int64_t runRows(const void *Input, const void *Indices, void *Output, int64_t Begin,
                  int64_t End) const override {
    return runGeneric(*Spec, Input, Indices, Output, static_cast<uint64_t>(Begin),
                      static_cast<uint64_t>(End));
  }

private:
  const std::shared_ptr<const KernelSpec> Spec;
};

} // namespace gatherjit

#endif
