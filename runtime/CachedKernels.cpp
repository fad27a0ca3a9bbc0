//===- runtime/CachedKernels.cpp - Kernels from the cache, without LLVM ---===//

#include "runtime/CachedKernels.h"

#include "compiler/backend/ObjectLoader.h"
#include "runtime/GenericKernel.h"
#include "runtime/KernelState.h"
#include "runtime/System.h"
#include "runtime/TierPlan.h"

#include <chrono>
#include <cstdio>

namespace gatherjit {

CachedKernels::CachedKernels(DiskCache Disk, const RuntimeOptions &Options)
    : Disk(std::move(Disk)), Options(Options), Pool(std::make_shared<ThreadPool>(Options.Threads)) {
}

std::optional<CachedKernels> CachedKernels::open(const RuntimeOptions &Options) {
  if (Options.CacheDir.empty())
    return std::nullopt;
  std::optional<DiskCache> Disk =
      DiskCache::open(Options.CacheDir, cacheEnvironment(Options.Opt), Options.CacheDirLimit,
                      /*Quiet=*/true);
  if (!Disk)
    return std::nullopt;
  return CachedKernels(std::move(*Disk), Options);
}

std::optional<Kernel> CachedKernels::find(const ValidDesc &Desc) const {
  const auto T0 = std::chrono::steady_clock::now();
  const auto Shared = std::make_shared<const KernelSpec>(canonicalize(Desc));
  const KernelSpec &Spec = *Shared;
  if (Spec.hasEpilogue())
    return std::nullopt;
  auto State = std::make_shared<Kernel::State>();
  State->Desc = Desc;
  State->Spec = Shared;
  State->Pool = Pool;
  State->FromDisk = true;
  if (Desc.outputElements() != 0) {
    const std::string Name = Spec.symbolName();
    // The runtime's level first (an upgraded kernel), then the first tier
    // if it is another.
    const OptLevel Levels[] = {Options.Opt, firstLevel(Spec, Options)};
    for (int L = 0; L < (Levels[1] == Levels[0] ? 1 : 2) && !State->Code; ++L) {
      std::optional<std::vector<char>> Object = Disk.load(Disk.key(Spec, Levels[L]));
      if (!Object)
        continue;
      Expected<std::shared_ptr<const Executable>> Code =
          loadKernelObject(std::string_view(Object->data(), Object->size()), Name);
      if (Code)
        State->setCode(std::make_shared<TieredCode>(Code.take(), KernelTier::Specialized, Levels[L],
                                                    /*UpgradeAfter=*/0, nullptr,
                                                    std::weak_ptr<BackgroundQueue>()));
    }
    if (!State->Code)
      return std::nullopt;
  }
  State->Times.Load =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - T0).count();
  if (envFlag("GATHERJIT_LOG") && State->Code)
    std::fprintf(stderr,
                 "gatherjit: loaded %s at %s without LLVM: load and link %.3f ms\n  spec: %s\n",
                 State->symbol().c_str(), optLevelName(State->Code->level()), State->Times.Load,
                 Spec.describe().c_str());
  Kernel K;
  K.S = std::move(State);
  return K;
}

std::optional<Kernel> CachedKernels::generic(const ValidDesc &Desc, const RuntimeOptions &Options,
                                             uint64_t Runs) {
  const auto Spec = std::make_shared<const KernelSpec>(canonicalize(Desc));
  if (!startsGeneric(*Spec, Options.Specialization) ||
      (Options.Specialization == Specialize::Adaptive && Runs >= specializeAfterRuns(*Spec)))
    return std::nullopt;
  auto State = std::make_shared<Kernel::State>();
  State->Desc = Desc;
  State->Spec = Spec;
  State->Pool = std::make_shared<ThreadPool>(Options.Threads);
  if (Desc.outputElements() != 0)
    State->setCode(std::make_shared<TieredCode>(
        std::make_shared<GenericCode>(Spec), KernelTier::Generic, OptLevel::O0,
        /*UpgradeAfter=*/0, nullptr, std::weak_ptr<BackgroundQueue>()));
  Kernel K;
  K.S = std::move(State);
  return K;
}

} // namespace gatherjit
