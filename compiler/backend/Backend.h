//===- compiler/backend/Backend.h - One target behind one interface -------===//
/// \file
/// The seam between the pipeline and a code generation target. A Backend
/// answers the facts its plans follow (TargetFacts), emits a kernel into a
/// module as the plan says, and turns the module into its artefact (an
/// object file for a CPU; text for a target that makes text). The pipeline
/// (compiler/pipeline/Pipeline.h) knows nothing else of the target:
///
///   spec --plan(facts)--> plan --emit--> module --generate--> artefact
///        --load--> Executable
///
/// backendFor picks the backend from the target machine, as Halide's
/// CodeGen_LLVM::new_for_target does: the host CPU backend (x86-64,
/// AArch64), whose objects the JIT's linker loads (compiler/backend/Jit.h)
/// or AOT writes, and the GPU backend (nvptx64), whose PTX text a device's
/// driver loads (runtime/CudaDriver.h) or AOT writes. What loads a
/// backend's artefacts is its ArtefactLoader, given where it is made.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_BACKEND_BACKEND_H
#define GATHERJIT_COMPILER_BACKEND_BACKEND_H

#include "compiler/backend/Executable.h"
#include "compiler/plan/KernelPlan.h"
#include "compiler/spec/KernelSpec.h"
#include "gatherjit/Compile.h"
#include "gatherjit/Status.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace gatherjit {

class CodeGenerator;

enum class PipelineOutput { Object, Assembly, OptimizedIR };

/// Turns a backend's artefacts into code a Kernel runs: the JIT's linker
/// for host objects, a device's driver for PTX.
class ArtefactLoader {
public:
  virtual ~ArtefactLoader() = default;
  /// Loads \p Artefact, the object of kernel \p Name (of \p Spec, planned
  /// by \p Plan), and returns its entry.
  virtual Expected<std::shared_ptr<const Executable>> load(const std::string &Name,
                                                           const std::vector<char> &Artefact,
                                                           const KernelSpec &Spec,
                                                           const KernelPlan &Plan) = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  /// What plans for this target follow.
  const TargetFacts &facts() const { return Facts; }
  /// Adds the kernel of \p Spec, run as \p Plan says, to \p M under \p Name
  /// (NAME, NAME_range, NAME_rows). A spec with an epilogue calls
  /// NAME.epilogue, linked into \p M already.
  virtual void emit(const KernelSpec &Spec, const KernelPlan &Plan, const std::string &Name,
                    llvm::Module &M) const = 0;
  /// Configures \p M for the target, optimizes it at \p Level and generates
  /// \p Output, adding the optimizer's and code generator's times to
  /// \p Times. Fails only on a bug or an output the target cannot make.
  virtual Expected<std::vector<char>> generate(llvm::Module &M, OptLevel Level,
                                               PipelineOutput Output, CompileTimes &Times) = 0;
  /// Loads \p Object, generate()'s object of kernel \p Name for \p Spec,
  /// through the backend's loader; Unsupported for a backend that has
  /// none (one that only writes its artefacts, as AOT's).
  Expected<std::shared_ptr<const Executable>>
  load(const std::string &Name, const std::vector<char> &Object, const KernelSpec &Spec) const;
  /// Loads through \p To from now on.
  void setLoader(ArtefactLoader *To) { Loader = To; }

protected:
  explicit Backend(const TargetFacts &Facts) : Facts(Facts) {}

private:
  TargetFacts Facts;
  ArtefactLoader *Loader = nullptr;
};

/// What both backends' generate() does with their code generator \p Gen:
/// configure \p M for its machine, optimize at \p Level, and make
/// \p Output (for NVPTX, an object is the PTX text).
Expected<std::vector<char>> generateWith(CodeGenerator &Gen, llvm::Module &M, OptLevel Level,
                                         PipelineOutput Output, CompileTimes &Times);

/// The facts of \p TM: its cache line (the system's, when \p TM is for
/// this host and the system says; 64 bytes otherwise) and the widest
/// vector its CPU has (64 bytes with AVX-512, 32 with AVX, 16 for SSE and
/// AArch64's NEON).
TargetFacts targetFacts(const llvm::TargetMachine &TM);

/// The backend for \p Gen's target machine (the GPU backend for nvptx64,
/// the host CPU backend otherwise), loading through \p Loader if given;
/// \p Gen and \p Loader outlive it.
std::unique_ptr<Backend> backendFor(CodeGenerator &Gen, ArtefactLoader *Loader = nullptr);

/// A GPU's facts: 128-byte lines (L2 sectors of 32 bytes, four to a line),
/// 16-byte vectors, one thread per element.
TargetFacts gpuFacts();

/// The GPU backend (compiler/backend/GpuBackend.cpp) for \p Gen, an
/// nvptx64 target machine: PTX text as its artefact, for every output.
std::unique_ptr<Backend> gpuBackend(CodeGenerator &Gen);

/// The GPU's thread schedule with its grid run on the host by \p HostGen
/// (a loop over the grid's threads), as a CPU kernel: proves the device
/// kernel's arithmetic and policies on machines without a GPU.
std::unique_ptr<Backend> simulatedGridBackend(CodeGenerator &HostGen);

} // namespace gatherjit

#endif
