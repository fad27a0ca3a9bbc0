//===- bench/GenericKernel.h - The generic precompiled baseline ----------===//
/// \file
/// A gather with run-time sizes and strides, written as a library writes its
/// generic loop (dispatch on element size and index type once, a tight
/// innermost loop, a memcpy for contiguous blocks). It is the fair baseline
/// the specialized kernels are measured against, not the reference: the
/// interpreter is.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_GENERICKERNEL_H
#define GATHERJIT_RUNTIME_GENERICKERNEL_H

#include "compiler/spec/KernelSpec.h"

namespace gatherjit {

/// Runs rows [Begin, End) of \p Spec. Returns 0, or under Check 1 + the
/// position of the first out-of-range index, like a compiled kernel.
int64_t runGeneric(const KernelSpec &Spec, const void *Input, const void *Indices,
                   void *Output, uint64_t Begin, uint64_t End);

} // namespace gatherjit

#endif
