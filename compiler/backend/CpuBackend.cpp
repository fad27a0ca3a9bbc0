//===- compiler/backend/CpuBackend.cpp - The host CPU backend -------------===//
//
// x86-64 and AArch64: the row emitter (compiler/emit/), the kernel
// optimization pipeline (compiler/optimize/) and LLVM's code generator for
// objects and assembly (compiler/backend/Target.h).
//
//===----------------------------------------------------------------------===//

#include "compiler/backend/Backend.h"

#include "compiler/backend/Target.h"
#include "compiler/emit/EmitKernel.h"
#include "compiler/optimize/Optimize.h"

#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <chrono>
#include <unistd.h>

namespace gatherjit {
namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point T0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - T0).count();
}

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(CodeGenerator &Gen) : Backend(targetFacts(Gen.targetMachine())), Gen(Gen) {}

  void emit(const KernelSpec &Spec, const KernelPlan &Plan, const std::string &Name,
            llvm::Module &M) const override {
    emitKernelInto(Spec, Plan, Name, M);
  }

  Expected<std::vector<char>> generate(llvm::Module &M, OptLevel Level, PipelineOutput Output,
                                       CompileTimes &Times) override {
    return generateWith(Gen, M, Level, Output, Times);
  }

private:
  CodeGenerator &Gen;
};

} // namespace

Expected<std::vector<char>> generateWith(CodeGenerator &Gen, llvm::Module &M, OptLevel Level,
                                         PipelineOutput Output, CompileTimes &Times) {
  llvm::TargetMachine &TM = Gen.targetMachine();
  configureModule(M, TM);
  Clock::time_point T0 = Clock::now();
  if (Status S = optimize(M, TM, Level); !S)
    return S;
  Times.Optimize += msSince(T0);
  T0 = Clock::now();
  std::vector<char> Bytes;
  switch (Output) {
  case PipelineOutput::OptimizedIR: {
    std::string Text;
    llvm::raw_string_ostream OS(Text);
    M.print(OS, nullptr);
    OS.flush();
    Bytes.assign(Text.begin(), Text.end());
    return Bytes; // No code generated.
  }
  case PipelineOutput::Assembly: {
    Expected<std::string> Asm = Gen.assembly(M, Level);
    if (!Asm)
      return Asm.status();
    Bytes.assign(Asm->begin(), Asm->end());
    break;
  }
  case PipelineOutput::Object: {
    Expected<llvm::SmallVector<char, 0>> Obj = Gen.object(M, Level);
    if (!Obj)
      return Obj.status();
    Bytes.assign(Obj->begin(), Obj->end());
    break;
  }
  }
  Times.Codegen += msSince(T0);
  return Bytes;
}

TargetFacts targetFacts(const llvm::TargetMachine &TM) {
  const llvm::Triple &T = TM.getTargetTriple();
  if (T.isNVPTX())
    return gpuFacts();
  TargetFacts F;
  if (T.normalize() == llvm::Triple::normalize(llvm::sys::getProcessTriple())) {
    // This machine's line, where the system tells it.
    const long Line = ::sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
    if (Line >= 16 && Line <= 256 && (Line & (Line - 1)) == 0)
      F.CacheLineBytes = static_cast<unsigned>(Line);
    F.LastLevelCacheBytes = hostLastLevelCacheBytes();
  }
  const llvm::MCSubtargetInfo *STI = TM.getMCSubtargetInfo();
  if (T.isX86()) {
    const bool Avx512 = STI->checkFeatures("+avx512f");
    F.VectorBytes = Avx512 ? 64 : STI->checkFeatures("+avx") ? 32 : 16;
    F.PermuteBytes = Avx512 ? 64 : 0; // vpermd / vpermi2d and their 64-bit forms
    // A row prefetcher (measured on Intel's cores and AMD's Zen 4,
    // KernelPlan.cpp), and Intel's masked byte stores: on Zen 4 a take of
    // 500 FLOAT32 rows of 1 KiB into an output 16 bytes past a line took
    // 25.0-25.8 us a call with them against 16.0-16.1 without (from
    // Python, three alternating runs).
    const bool Zen = isZen(TM.getTargetCPU());
    F.PrefetcherFollowsRows = true;
    F.MaskedByteStores = !Zen && STI->checkFeatures("+avx512bw");
    F.WideLoopBytes = !Zen && STI->checkFeatures("+avx512fp16") ? 64 : 0;
    F.NarrowLoopBytes = !Zen && STI->checkFeatures("+avx512fp16") ? 16 : 0;
    // Where gathers pay on some operands only (LoopPlan.cpp): where the
    // target machine allows them and the user did not choose gathers (or
    // scalar loads) for every kernel.
    const bool Chosen = STI->checkFeatures("+prefer-no-gather") ||
                        TM.getTargetFeatureString().contains("-prefer-no-gather");
    F.GathersOnlyFromMemory = Zen && Avx512 && !Chosen;
    F.GathersLoseBeyondCore = !Zen && STI->checkFeatures("+avx512fp16") && !Chosen;
  } else
    F.VectorBytes = 16;
  F.VectorBytes = std::min(F.VectorBytes, F.CacheLineBytes);
  return F;
}

std::unique_ptr<Backend> backendFor(CodeGenerator &Gen, ArtefactLoader *Loader) {
  std::unique_ptr<Backend> B = Gen.targetMachine().getTargetTriple().isNVPTX()
                                   ? gpuBackend(Gen)
                                   : std::make_unique<CpuBackend>(Gen);
  B->setLoader(Loader);
  return B;
}

Expected<std::shared_ptr<const Executable>> Backend::load(const std::string &Name,
                                                          const std::vector<char> &Object,
                                                          const KernelSpec &Spec) const {
  if (!Loader)
    return Status::unsupported("this backend's objects are written, not loaded (" + Name + ")");
  return Loader->load(Name, Object, Spec, planKernel(Spec, facts()));
}

} // namespace gatherjit
