//===- runtime/Tiers.cpp - The tiers a kernel's code goes through --------===//
//
// A spec's first code (the generic loop, its family's kernel, or a kernel
// compiled at its first level), and the upgrades that replace it on the
// background thread once it is hot.
//
//===----------------------------------------------------------------------===//

#include "runtime/RuntimeImpl.h"

#include "runtime/FamilyCode.h"
#include "runtime/GenericKernel.h"
#include "runtime/TierPlan.h"

#include <cstdio>

namespace gatherjit {
namespace {

/// Runs at the quick tier before \p Spec is recompiled at the runtime's
/// level: once it is hot, as a shape is for its specialization. The
/// compile runs on the background thread, and the quick tier's code is slow
/// where it runs often: GatherElements FLOAT32 [1000, 64] by INT64
/// [1000, 16], a load per element (on a target without permuted rows), ran
/// in 22 us at O1 against 7.4 us at O2 (for 10% more rows), the generic
/// loop's 8.7 us for half the rows (`gatherjit gather-elements
/// --specialize compile --repeat 300 --stats`).
uint64_t upgradeAfterRuns(const KernelSpec &Spec) { return hotAfterRuns(Spec); }

} // namespace

void Runtime::Impl::warmUp() {
  TensorDesc T, Idx;
  T.Sizes = Idx.Sizes = {2, 8};
  Idx.Type = DataType::Int64;
  Expected<ValidDesc> V = validate(GatherElementsDesc{T, Idx, T, 1});
  if (!V)
    return;
  const KernelSpec Spec = canonicalize(*V);
  if (Device) {
    // A device's first compile: its family's kernel (its own, where every
    // kernel is specialized at compile), at the runtime's level, loaded by
    // the driver, whose first module load in a process costs the most.
    const std::optional<KernelSpec> Family = Options.Specialization == Specialize::AtCompile
                                                 ? std::nullopt
                                                 : familyOf(Spec, /*BlockRows=*/true);
    const KernelSpec &First = Family ? *Family : Spec;
    if (Stopping)
      return;
    Expected<PipelineResult> Object =
        objectFor(First, Options.Opt, PipelineOutput::Object, /*UseDisk=*/false);
    if (Object)
      (void)DeviceTarget->load(First.symbolName(), Object->Bytes, First);
    return;
  }
  for (OptLevel Level : {kernelLevel(Spec, Options.Opt), Options.Opt}) {
    if (Stopping)
      return;
    Expected<PipelineResult> Object =
        objectFor(Spec, Level, PipelineOutput::Object, /*UseDisk=*/false);
    if (Object)
      (void)Target->load(Spec.symbolName(), Object->Bytes, Spec);
  }
}

Expected<PipelineResult> Runtime::Impl::objectFor(const KernelSpec &Spec, OptLevel Level,
                                                  PipelineOutput Output, bool UseDisk) {
  std::lock_guard<std::mutex> Lock(CompileMutex);
  // A device runtime's kernels are PTX, which the driver compiles for the
  // device (keeping what it compiled in a cache of its own).
  return runPipeline({{Spec, Spec.symbolName()}}, Device ? *DeviceTarget : *Target, Level, Output,
                     UseDisk && Disk ? &*Disk : nullptr);
}

LinkResult Runtime::Impl::compileSpec(const KernelSpec &Spec, OptLevel Level, CompileTimes &Times,
                                      bool &FromDisk, bool &Stored, uint64_t &Bytes) {
  const std::string Name = Spec.symbolName();
  Expected<PipelineResult> Object = objectFor(Spec, Level);
  if (!Object)
    return Object.status();
  Times = Object->Times;
  Bytes = codeBytes(Object->Bytes.size());
  FromDisk = Object->FromCache;
  Stored = Object->Stored;
  Clock::time_point T0 = Clock::now();
  // A device runtime's PTX is loaded by the driver, host code by the JIT.
  LinkResult Code = (Device ? DeviceTarget : Target)->load(Name, Object->Bytes, Spec);
  Times.Link = msSince(T0);
  if (Log)
    std::fprintf(stderr,
                 "gatherjit: %s %s at %s for %s: emit %.3f ms, optimize %.3f ms, "
                 "codegen %.3f ms, load %.3f ms, link %.3f ms\n  spec: %s\n",
                 FromDisk ? "loaded" : "compiled", Name.c_str(), optLevelName(Level),
                 Device ? Device->name().c_str() : "the host", Times.Emit, Times.Optimize,
                 Times.Codegen, Times.Load, Times.Link, Spec.describe().c_str());
  return Code;
}

CodeResult Runtime::Impl::compileFirstOnDevice(const SharedSpec &Shared, CompileTimes &Times,
                                               bool &FromDisk, bool &Stored, uint64_t &Bytes) {
  const KernelSpec &Spec = *Shared;
  // A shape whose family kernel is loaded runs it at once; a hot shape is
  // specialized in the background, as on the CPU.
  const Specialize Mode = Options.Specialization;
  if (Mode != Specialize::AtCompile)
    if (const std::optional<KernelSpec> Family = familyOf(Spec, /*BlockRows=*/true))
      if (std::shared_ptr<const Executable> Code =
              deviceFamilyCode(*Family, Times, FromDisk, Stored))
        return std::make_shared<TieredCode>(
            bindFamily(std::move(Code), Shared), KernelTier::Family, Options.Opt,
            Mode == Specialize::Adaptive ? deviceSpecializeAfterRuns(Spec) : 0, upgrader(Shared),
            Upgrades);
  LinkResult Code = compileSpec(Spec, Options.Opt, Times, FromDisk, Stored, Bytes);
  if (!Code)
    return Code.status();
  return std::make_shared<TieredCode>(Code.take(), KernelTier::Specialized, Options.Opt, 0, nullptr,
                                      Upgrades);
}

CodeResult Runtime::Impl::compileFirst(const SharedSpec &Shared, CompileTimes &Times,
                                       bool &FromDisk, bool &Stored, uint64_t &Bytes) {
  if (Device)
    return compileFirstOnDevice(Shared, Times, FromDisk, Stored, Bytes);
  const KernelSpec &Spec = *Shared;
  if (startsGeneric(Spec, Options.Specialization)) {
    const bool Adaptive = Options.Specialization == Specialize::Adaptive;
    std::shared_ptr<const Executable> First = std::make_shared<GenericCode>(Shared);
    KernelTier Tier = KernelTier::Generic;
    uint64_t SpecializeAfter = Adaptive ? specializeAfterRuns(Spec) : 0;
    if (Adaptive) {
      // Its row family first: that code is the specialized kernel's but
      // for the rows' count, so a shape running it is not specialized.
      // The family of every size counts only the row families its
      // shapes start, so a walk that changes only the rows (a batch
      // size, a sequence length) never compiles it.
      const std::optional<KernelSpec> Rows = rowFamilyOf(Spec);
      bool NewRowFamily = true;
      std::shared_ptr<const Executable> Code =
          Rows ? familyCode(*Rows, /*Count=*/true, &NewRowFamily) : nullptr;
      if (Code)
        SpecializeAfter = 0;
      else if (const std::optional<KernelSpec> Sizes = familyOf(Spec))
        Code = familyCode(*Sizes, /*Count=*/NewRowFamily);
      if (Code) {
        First = bindFamily(std::move(Code), Shared);
        Tier = KernelTier::Family;
      }
    }
    return std::make_shared<TieredCode>(std::move(First), Tier,
                                        Tier == KernelTier::Generic ? OptLevel::O0 : Options.Opt,
                                        SpecializeAfter, upgrader(Shared), Upgrades);
  }
  const OptLevel Level = firstLevel(Spec, Options);
  LinkResult Code = compileSpec(Spec, Level, Times, FromDisk, Stored, Bytes);
  if (!Code)
    return Code.status();
  return std::make_shared<TieredCode>(Code.take(), KernelTier::Specialized, Level,
                                      Level == Options.Opt ? 0 : upgradeAfterRuns(Spec),
                                      upgrader(Shared), Upgrades);
}

void Runtime::Impl::upgrade(const SharedSpec &Shared, TieredCode &Code) {
  const KernelSpec &Spec = *Shared;
  const bool Specializes = Code.tier() != KernelTier::Specialized;
  // A shape that started before its row family was compiled takes that
  // kernel (compiling it first if no compile of it has begun: the
  // family's first shape): the specialized kernel's code but for the
  // rows' count. Only a shape still alone in its family goes on to its
  // own kernel; in a walk over the rows it is one shape of many, as the
  // later ones are. (A device has no row families.)
  if (std::optional<KernelSpec> Rows = Specializes && !Device ? rowFamilyOf(Spec) : std::nullopt) {
    bool Alone = false;
    if (std::shared_ptr<const Executable> Ready = rowFamilyFirst(*Rows, Alone)) {
      Code.upgrade(bindFamily(std::move(Ready), Shared), KernelTier::Family, Options.Opt,
                   /*NextAfter=*/0);
      // (A runtime going away waits for this job: it compiles no more.)
      if (!Alone || Stopping)
        return;
    }
  }
  const OptLevel Level = Options.Opt;
  CompileTimes Times;
  bool FromDisk = false, Stored = false;
  uint64_t Bytes = 0;
  LinkResult Next = compileSpec(Spec, Level, Times, FromDisk, Stored, Bytes);
  std::lock_guard<std::mutex> Lock(CacheMutex);
  Stats.CompileMs += Times.total();
  Stats.DiskLoads += FromDisk;
  Stats.DiskStores += Stored;
  if (!Next) {
    if (Log)
      std::fprintf(stderr, "gatherjit: upgrading %s: %s\n", Spec.symbolName().c_str(),
                   Next.status().message().c_str());
    return;
  }
  Code.upgrade(Next.take(), KernelTier::Specialized, Level, /*NextAfter=*/0);
  ++(Specializes ? Stats.Specializations : Stats.Upgrades);
  // The older code stays linked while the entry lives: charge both.
  if (auto It = Cache.find(Spec); It != Cache.end() && It->second.Code.get() == &Code) {
    It->second.Bytes += Bytes;
    CachedBytes += Bytes;
    evictOverflow();
  }
}

} // namespace gatherjit
