//===- runtime/KernelState.h - What a Kernel handle holds ----------------===//
#ifndef GATHERJIT_RUNTIME_KERNELSTATE_H
#define GATHERJIT_RUNTIME_KERNELSTATE_H

#include "compiler/optimize/Optimize.h"
#include "compiler/spec/KernelSpec.h"
#include "gatherjit/Runtime.h"
#include "gatherjit/Validate.h"
#include "runtime/CudaDriver.h"
#include "runtime/ThreadPool.h"
#include "runtime/TieredCode.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>

namespace gatherjit {

/// Everything a Kernel handle needs, shared by the handles of one
/// descriptor: a cache hit for an equal descriptor copies one pointer.
struct Kernel::State {
  ValidDesc Desc;
  /// One spec for the cache's entry, its code and its handles' states.
  std::shared_ptr<const KernelSpec> Spec;
  std::shared_ptr<TieredCode> Code; ///< Null for an empty output.
  /// The spec's symbol name, made on first use (Kernel::symbolName): a new
  /// shape's compile() formats no string.
  mutable std::once_flag SymbolOnce;
  mutable std::string Symbol;
  const std::string &symbol() const {
    std::call_once(SymbolOnce, [this] { Symbol = Spec->symbolName(); });
    return Symbol;
  }
  bool FromDisk = false;
  CompileTimes Times; ///< Of the compile that made Code, if this one did.
  uint64_t Rows = 0;
  /// True if run() splits the rows across the pool (decided once: a tiny
  /// kernel's run is a few nanoseconds).
  bool Split = false;
  std::shared_ptr<ThreadPool> Pool;
  /// The device a device runtime's kernel runs on (its buffers are device
  /// memory); null on the CPU.
  std::shared_ptr<CudaDevice> Device;

  /// The bytes each buffer spans from its first element (Kernel::run
  /// compares them to find an output that overlaps an operand).
  uint64_t InputBytes = 0, IndicesBytes = 0, OutputBytes = 0;

  /// Sets the code of the spec's kernel, and what runs derive from it.
  void setCode(std::shared_ptr<TieredCode> C) {
    Code = std::move(C);
    Rows = Spec->rows();
    InputBytes = requiredElements(Desc.Input) * Desc.Input.elementBytes();
    IndicesBytes = requiredElements(Desc.Indices) * Desc.Indices.elementBytes();
    OutputBytes = requiredElements(Desc.Output) * Desc.Output.elementBytes();
    // Each output element is a read from the input, or each row where rows
    // are copied whole.
    const uint64_t Elements = Spec->elements();
    const uint64_t Reads = Spec->innerIsBlock() && Spec->Rank
                               ? Elements / std::max<uint64_t>(1, Spec->Sizes[Spec->Rank - 1])
                               : Elements;
    Split = !Device && Rows >= 2 && Pool->worthSplitting(Spec->outputBytes(), Reads, InputBytes);
  }

  /// True if \p Output's bytes share any byte with \p Input's or
  /// \p Indices'.
  bool outputOverlaps(const void *Input, const void *Indices, const void *Output) const {
    auto Overlap = [](const void *A, uint64_t ABytes, const void *B, uint64_t BBytes) {
      const auto X = reinterpret_cast<uintptr_t>(A), Y = reinterpret_cast<uintptr_t>(B);
      return ABytes && BBytes && X < Y + BBytes && Y < X + ABytes;
    };
    return Overlap(Output, OutputBytes, Input, InputBytes) ||
           Overlap(Output, OutputBytes, Indices, IndicesBytes);
  }
};

/// The level a runtime with \p Options first compiles \p Spec at: the
/// quick tier for a small kernel, else the runtime's level.
inline OptLevel firstLevel(const KernelSpec &Spec, const RuntimeOptions &Options) {
  return Options.QuickTier ? kernelLevel(Spec, Options.Opt) : Options.Opt;
}

} // namespace gatherjit

#endif
