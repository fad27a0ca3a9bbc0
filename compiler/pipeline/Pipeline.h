//===- compiler/pipeline/Pipeline.h - Specs to machine code --------------===//
/// \file
/// The one compile pipeline, used by the JIT, ahead-of-time compilation and
/// the IR and assembly printers:
///   KernelSpec -plan(facts)-> KernelPlan -emit-> Module
///     -generate-> object (or assembly, or the optimized IR)
/// where the facts, the emitter and the generation are the target's
/// Backend's (compiler/backend/Backend.h), with an optional object cache
/// consulted before emission, and the time each stage took.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_PIPELINE_PIPELINE_H
#define GATHERJIT_COMPILER_PIPELINE_PIPELINE_H

#include "compiler/backend/Backend.h"
#include "compiler/plan/KernelPlan.h"
#include "compiler/spec/KernelSpec.h"
#include "gatherjit/Compile.h"
#include "gatherjit/Status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatherjit {

/// Where compiled objects persist (the runtime's kernel cache directory).
class ObjectCache {
public:
  virtual ~ObjectCache() = default;
  /// The full key of \p Spec's kernel compiled at \p Level.
  virtual std::string key(const KernelSpec &Spec, OptLevel Level) const = 0;
  virtual std::optional<std::vector<char>> load(const std::string &Key) const = 0;
  /// A failure costs speed, not correctness: the pipeline goes on.
  virtual Status store(const std::string &Key, const std::vector<char> &Object) const = 0;
};

struct PipelineKernel {
  KernelSpec Spec;
  /// Its symbols' name (NAME, NAME_range, NAME_rows).
  std::string Name;
};

struct PipelineResult {
  /// The object file, or the assembly or IR as text.
  std::vector<char> Bytes;
  CompileTimes Times;
  /// The object came from the cache (no optimization or code generation).
  bool FromCache = false;
  /// The object was written to the cache.
  bool Stored = false;
};

/// \p Plain's kernel named \p Name, with the C epilogue \p Fused compiled
/// for \p TM and fused in (none where its Function is empty; \p RowOut as
/// withEpilogue takes it, 0 for the input's row): what ahead-of-time
/// compilation and a device's PTX printer give the pipeline. \p Plain
/// becomes the fused descriptor.
Expected<PipelineKernel> fusedKernel(ValidDesc &Plain, const Epilogue &Fused, uint64_t RowOut,
                                     const llvm::TargetMachine &TM, const std::string &Name);

/// Compiles \p Kernels into one module for \p Target at \p Level (one
/// module at a time per backend). Only a single-kernel object is cached.
/// Fails only on a bug (a module that does not verify, in builds with
/// assertions) or a target that cannot emit the output, as Internal.
Expected<PipelineResult> runPipeline(const std::vector<PipelineKernel> &Kernels, Backend &Target,
                                     OptLevel Level, PipelineOutput Output = PipelineOutput::Object,
                                     const ObjectCache *Cache = nullptr);

/// The epilogue \p Code alone as an object whose NAME_range(in, unused, out,
/// begin, end) applies it once to the element or row at in: the
/// interpreter's reference, compiled and inlined as in a kernel.
Expected<PipelineResult> runEpiloguePipeline(const EpilogueCode &Code, const std::string &Name,
                                             Backend &Target, OptLevel Level);

} // namespace gatherjit

#endif
