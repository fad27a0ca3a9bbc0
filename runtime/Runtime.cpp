//===- runtime/Runtime.cpp - Compile, cache and run kernels --------------===//
//
// Per cache miss: ValidDesc -canonicalize-> KernelSpec, the compile
// pipeline (compiler/pipeline/Pipeline.h) to an object, perhaps from the
// persistent cache, then -link-> native entry. One TargetMachine and one LLJIT per runtime. Code generation shares the
// TargetMachine, so compiles are serialized; cache lookups are not.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Runtime.h"

#include "compiler/backend/Jit.h"
#include "compiler/backend/Target.h"
#include "compiler/epilogue/Epilogue.h"
#include "compiler/optimize/Optimize.h"
#include "compiler/pipeline/Pipeline.h"
#include "compiler/plan/KernelPlan.h"
#include "compiler/spec/KernelSpec.h"
#include "runtime/CudaDriver.h"
#include "runtime/DiskCache.h"
#include "runtime/FamilyCode.h"
#include "runtime/GenericKernel.h"
#include "runtime/KernelState.h"
#include "runtime/System.h"
#include "runtime/ThreadPool.h"
#include "runtime/TierPlan.h"

#include <llvm/Target/TargetMachine.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <list>
#include <optional>
#include <thread>
#include <unordered_map>

namespace gatherjit {

namespace {
using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point T0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - T0).count();
}
using LinkResult = Expected<std::shared_ptr<const Executable>>;

/// Runs at the quick tier before \p Spec is recompiled at the runtime's
/// level: once it is hot, as a shape is for its specialization. The
/// compile runs on the background thread, and the quick tier's code is slow
/// where it runs often: GatherElements FLOAT32 [1000, 64] by INT64
/// [1000, 16], a load per element (on a target without permuted rows), ran
/// in 22 us at O1 against 7.4 us at O2 (for 10% more rows),
/// the generic loop's 8.7 us for half the rows (`gatherjit gather-elements
/// --specialize compile --repeat 300 --stats`).
uint64_t upgradeAfterRuns(const KernelSpec &Spec) { return hotAfterRuns(Spec); }

/// What the cache charges an entry besides its code: the spec (kept by the
/// entry, its LRU node, the upgrader and the generic loop), the last state
/// handed out with its descriptor, the allocations' overheads.
constexpr uint64_t EntryBytes = 4096;
/// Linked code takes whole pages.
uint64_t codeBytes(size_t ObjectBytes) { return (ObjectBytes + 4095) / 4096 * 4096; }
/// Compiled epilogues kept by key; past it the table starts over.
constexpr size_t EpilogueCapacity = 256;
/// Family kernels kept (one per element size, index type, policy, rank
/// and contiguity in use: few); past it the table starts over.
constexpr size_t FamilyCapacity = 256;
} // namespace

namespace {
using CodeResult = Expected<std::shared_ptr<TieredCode>>;
} // namespace

struct Runtime::Impl {
  RuntimeOptions Options;
  std::unique_ptr<CodeGenerator> Gen; ///< With the target machine.
  std::unique_ptr<Backend> Target;     ///< Gen's backend.
  /// A device runtime's device, and its code generator and backend.
  std::shared_ptr<CudaDevice> Device;
  std::unique_ptr<CodeGenerator> DeviceGen;
  std::unique_ptr<Backend> DeviceTarget;
  std::shared_ptr<JitEngine> Jit;
  std::shared_ptr<ThreadPool> Pool;
  double InitMs = 0;
  bool Log = false;

  std::mutex CompileMutex; ///< Guards Gen and its target machine.
  mutable std::mutex CacheMutex;
  struct Entry {
    std::shared_future<CodeResult> Code;
    std::list<KernelSpec>::iterator LruPos;
    /// The state last handed out for this spec, so that an equal
    /// descriptor's hit needs no allocation.
    std::shared_ptr<const Kernel::State> Last;
    /// The code once made (to tell its tier and charge its upgrades), and
    /// the bytes the cache charges for the entry.
    const TieredCode *Tiered = nullptr;
    uint64_t Bytes = EntryBytes;
  };
  uint64_t CachedBytes = 0; ///< Summed over Cache.
  std::unordered_map<KernelSpec, Entry, KernelSpecHash> Cache;
  /// Compiled epilogues by key (see epilogue()).
  std::mutex EpilogueMutex;
  std::unordered_map<uint64_t, std::shared_ptr<const EpilogueCode>> Epilogues;
  std::list<KernelSpec> Lru; ///< Most recently used first.
  /// A family kernel (see familyCode()): the spec it is compiled from, for
  /// a row family the plan its shapes share, the code (null until compiled,
  /// or if its compile failed) and the shapes seen before.
  struct FamilyEntry {
    KernelSpec Spec;
    std::optional<KernelPlan> Plan;
    std::shared_ptr<const Executable> Code;
    unsigned Shapes = 0;
  };
  std::mutex FamilyMutex;
  /// By family spec; a row family's without its planned rows, one entry
  /// per plan its shapes have.
  std::unordered_map<KernelSpec, std::vector<FamilyEntry>, KernelSpecHash> Families;
  CacheStats Stats;
  std::optional<DiskCache> Disk;
  /// Runs upgrades; stopped first when the runtime goes.
  std::shared_ptr<BackgroundQueue> Upgrades = std::make_shared<BackgroundQueue>();

  /// The warm-up thread (see RuntimeOptions::WarmUp), joined first.
  std::thread WarmUpThread;
  std::atomic<bool> Stopping{false};

  ~Impl() {
    Stopping = true;
    if (WarmUpThread.joinable())
      WarmUpThread.join();
    Upgrades->stop();
  }

  /// Compiles and links a 2x8 FLOAT32 GatherElements at the quick tier and
  /// at the runtime's level, caching and storing nothing.
  void warmUp() {
    TensorDesc T, Idx;
    T.Sizes = Idx.Sizes = {2, 8};
    Idx.Type = DataType::Int64;
    Expected<ValidDesc> V = validate(GatherElementsDesc{T, Idx, T, 1});
    if (!V)
      return;
    const KernelSpec Spec = canonicalize(*V);
    for (OptLevel Level : {kernelLevel(Spec, Options.Opt), Options.Opt}) {
      if (Stopping)
        return;
      Expected<PipelineResult> Object =
          objectFor(Spec, Level, PipelineOutput::Object, /*UseDisk=*/false);
      if (Object)
        (void)Jit->link(Spec.symbolName(), Object->Bytes);
    }
  }

  /// Produces the object for \p Spec: from the persistent cache if it holds
  /// a valid entry, else through the whole pipeline (and stored); with
  /// \p UseDisk false, through the pipeline and not stored.
  Expected<PipelineResult> objectFor(const KernelSpec &Spec, OptLevel Level,
                                     PipelineOutput Output = PipelineOutput::Object,
                                     bool UseDisk = true) {
    std::lock_guard<std::mutex> Lock(CompileMutex);
    // A device runtime's kernels are PTX (the driver keeps its own cache).
    if (Device)
      return runPipeline({{Spec, Spec.symbolName()}}, *DeviceTarget, Level, Output);
    return runPipeline({{Spec, Spec.symbolName()}}, *Target, Level, Output,
                       UseDisk && Disk ? &*Disk : nullptr);
  }

  LinkResult compileSpec(const KernelSpec &Spec, OptLevel Level, CompileTimes &Times,
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
    LinkResult Code = Jit->link(Name, Object->Bytes);
    Times.Link = msSince(T0);
    if (Log)
      std::fprintf(stderr,
                   "gatherjit: %s %s at %s: emit %.3f ms, optimize %.3f ms, "
                   "codegen %.3f ms, load %.3f ms, link %.3f ms\n  spec: %s\n",
                   FromDisk ? "loaded" : "compiled", Name.c_str(), optLevelName(Level),
                   Times.Emit, Times.Optimize, Times.Codegen, Times.Load, Times.Link,
                   Spec.describe().c_str());
    return Code;
  }

  TieredCode::Upgrader upgrader(const KernelSpec &Spec) {
    return [this, Spec](TieredCode &Tiered) { upgrade(Spec, Tiered); };
  }

  /// A device runtime's code of \p Spec: PTX for the device, loaded.
  CodeResult compileForDevice(const KernelSpec &Spec, CompileTimes &Times, uint64_t &Bytes) {
    const std::string Name = Spec.symbolName();
    Expected<PipelineResult> Ptx = objectFor(Spec, Options.Opt);
    if (!Ptx)
      return Ptx.status();
    Times = Ptx->Times;
    Bytes = codeBytes(Ptx->Bytes.size());
    Clock::time_point T0 = Clock::now();
    LinkResult Code = Device->load(std::string(Ptx->Bytes.begin(), Ptx->Bytes.end()), Name, Spec,
                                   planKernel(Spec, DeviceTarget->facts()));
    Times.Link = msSince(T0);
    if (Log)
      std::fprintf(stderr,
                   "gatherjit: compiled %s for %s: emit %.3f ms, optimize %.3f ms, "
                   "codegen %.3f ms, load %.3f ms\n",
                   Name.c_str(), Device->name().c_str(), Times.Emit, Times.Optimize,
                   Times.Codegen, Times.Link);
    if (!Code)
      return Code.status();
    return std::make_shared<TieredCode>(Code.take(), KernelTier::Specialized, Options.Opt, 0,
                                        nullptr, Upgrades);
  }

  /// The first code of \p Spec: the generic loop, or the kernel compiled at
  /// its first level (the quick tier for a small kernel, else the
  /// runtime's level); on a device, the device's kernel.
  CodeResult compileFirst(const KernelSpec &Spec, CompileTimes &Times, bool &FromDisk,
                          bool &Stored, uint64_t &Bytes) {
    if (Device)
      return compileForDevice(Spec, Times, Bytes);
    if (startsGeneric(Spec, Options.Specialization)) {
      const bool Adaptive = Options.Specialization == Specialize::Adaptive;
      std::shared_ptr<const Executable> First = std::make_shared<GenericCode>(Spec);
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
          First = std::make_shared<FamilyCode>(std::move(Code), Spec);
          Tier = KernelTier::Family;
        }
      }
      return std::make_shared<TieredCode>(
          std::move(First), Tier, Tier == KernelTier::Generic ? OptLevel::O0 : Options.Opt,
          SpecializeAfter, upgrader(Spec), Upgrades);
    }
    const OptLevel Level = firstLevel(Spec, Options);
    LinkResult Code = compileSpec(Spec, Level, Times, FromDisk, Stored, Bytes);
    if (!Code)
      return Code.status();
    return std::make_shared<TieredCode>(Code.take(), KernelTier::Specialized, Level,
                                        Level == Options.Opt ? 0 : upgradeAfterRuns(Spec),
                                        upgrader(Spec), Upgrades);
  }

  /// The entry of family \p Family (familyOf's or rowFamilyOf's). A row
  /// family's shapes share one only where their plans agree: the kernel is
  /// compiled from the first one's, and what the plan decides from the
  /// rows (a large output's streaming stores, say) is the same for all.
  /// Called with FamilyMutex held.
  FamilyEntry &familyEntry(const KernelSpec &Family) {
    KernelSpec Key = Family;
    std::optional<KernelPlan> Plan;
    if (Family.PlanRows) {
      Plan = planKernel(Family, Target->facts());
      Key.PlanRows = 0;
    }
    auto It = Families.find(Key);
    if (It == Families.end()) {
      if (Families.size() >= FamilyCapacity)
        Families.clear(); // Kernel handles keep the code they run.
      It = Families.emplace(std::move(Key), std::vector<FamilyEntry>()).first;
    }
    for (FamilyEntry &E : It->second)
      if (E.Plan == Plan)
        return E;
    return It->second.emplace_back(FamilyEntry{Family, Plan, nullptr, 0});
  }

  /// The linked kernel of family \p Family, or null if it is not compiled
  /// yet. With \p Count the caller is a new shape of it: the family's second
  /// queues its compile on the background thread (a process that sees one
  /// shape of a family, a one-shot command line, has no use for it).
  /// \p First, if given, tells whether no shape had counted before.
  std::shared_ptr<const Executable> familyCode(const KernelSpec &Family, bool Count,
                                               bool *First = nullptr) {
    KernelSpec Compile;
    {
      std::lock_guard<std::mutex> Lock(FamilyMutex);
      FamilyEntry &E = familyEntry(Family);
      if (First)
        *First = E.Shapes == 0;
      if (E.Code || !Count || ++E.Shapes != 2)
        return E.Code;
      Compile = E.Spec;
    }
    Upgrades->push([this, Compile] { compileFamily(Compile); });
    return nullptr;
  }

  void compileFamily(const KernelSpec &Family) {
    CompileTimes Times;
    bool FromDisk = false, Stored = false;
    uint64_t Bytes = 0;
    LinkResult Code = compileSpec(Family, Options.Opt, Times, FromDisk, Stored, Bytes);
    {
      std::lock_guard<std::mutex> Lock(CacheMutex);
      Stats.CompileMs += Times.total();
      Stats.DiskLoads += FromDisk;
      Stats.DiskStores += Stored;
      Stats.FamilyKernels += Code.isOk();
    }
    if (!Code) {
      if (Log)
        std::fprintf(stderr, "gatherjit: compiling %s: %s\n", Family.symbolName().c_str(),
                     Code.status().message().c_str());
      return; // Its shapes keep the generic loop.
    }
    std::lock_guard<std::mutex> Lock(FamilyMutex);
    familyEntry(Family).Code = Code.take();
  }

  /// Compiles \p Spec at the runtime's level and switches \p Code to it (on
  /// the background thread), from the generic loop, a family kernel or the
  /// quick tier. A hot shape goes straight to the runtime's level, not the
  /// quick tier: the compile is off the caller's thread, and on small rows
  /// the quick tier's code ran 5x slower than O2's and 2x slower than the
  /// generic loop (`gatherjit bench --shapes`, walk (a)). On failure the
  /// current code keeps running.
  void upgrade(const KernelSpec &Spec, TieredCode &Code) {
    const bool Specializes = Code.tier() != KernelTier::Specialized;
    // A shape that started before its row family was compiled takes that
    // kernel if it is there now, compiling nothing.
    if (std::optional<KernelSpec> Rows = Specializes ? rowFamilyOf(Spec) : std::nullopt)
      if (std::shared_ptr<const Executable> Ready = familyCode(*Rows, /*Count=*/false)) {
        Code.upgrade(std::make_shared<FamilyCode>(std::move(Ready), Spec), KernelTier::Family,
                     Options.Opt, /*NextAfter=*/0);
        return;
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
    if (auto It = Cache.find(Spec); It != Cache.end() && It->second.Tiered == &Code) {
      It->second.Bytes += Bytes;
      CachedBytes += Bytes;
      evictOverflow();
    }
  }

  /// Evicts the least recently used entries while the cache holds more
  /// than its capacity, in entries or bytes; the newest always stays.
  /// Called with CacheMutex held.
  void evictOverflow() {
    while (Cache.size() > 1 &&
           (Cache.size() > Options.CacheCapacity || CachedBytes > Options.CacheBytes)) {
      // Code still held by a Kernel handle is freed when that handle goes.
      auto Victim = Cache.find(Lru.back());
      CachedBytes -= Victim->second.Bytes;
      Cache.erase(Victim);
      Lru.pop_back();
      ++Stats.Evictions;
    }
  }

  /// \p E compiled for this runtime's CPU and the given row lengths; clang
  /// runs once per key. (Entries are small; past EpilogueCapacity the
  /// table starts over, kernels keep what they hold.)
  Expected<std::shared_ptr<const EpilogueCode>> epilogue(const Epilogue &Given, uint64_t RowIn,
                                                         uint64_t RowOut) {
    const Epilogue *EP = &Given;
    Epilogue Forced;
    if (Options.Epilogues.Checked && !Given.Checked) { // Every epilogue checked.
      Forced = Given;
      Forced.Checked = true;
      EP = &Forced;
    }
    const Epilogue &E = *EP;
    const EpilogueTarget Target =
        epilogueTarget((DeviceGen ? DeviceGen : Gen)->targetMachine(), RowIn, RowOut);
    const uint64_t Key = epilogueKey(E, Target);
    if (auto Known = epilogueByKey(Key))
      return Known;
    Expected<std::shared_ptr<const EpilogueCode>> Code = compileEpilogue(E, Target, Options.Epilogues);
    if (!Code)
      return Code;
    std::lock_guard<std::mutex> Lock(EpilogueMutex);
    if (Epilogues.size() >= EpilogueCapacity)
      Epilogues.clear();
    Epilogues.emplace(Key, *Code);
    return Code;
  }

  std::shared_ptr<const EpilogueCode> epilogueByKey(uint64_t Key) {
    std::lock_guard<std::mutex> Lock(EpilogueMutex);
    auto It = Epilogues.find(Key);
    return It == Epilogues.end() ? nullptr : It->second;
  }

  /// Validates \p Desc with \p E's signature (E compiled for the rows of
  /// the descriptor's last dimensions).
  template <class OpDesc>
  Expected<ValidDesc> validateWith(const OpDesc &Desc, const Epilogue &E,
                                   const ValidateOptions &Options) {
    auto Last = [](const TensorDesc &T) { return T.Sizes.empty() ? 1 : T.Sizes.back(); };
    Expected<std::shared_ptr<const EpilogueCode>> Code =
        epilogue(E, Last(Desc.Input), Last(Desc.Output));
    if (!Code)
      return Code.status();
    ValidateOptions With = Options;
    With.Epilogue = (*Code)->Signature;
    return validate(Desc, With);
  }

  /// The spec of \p Desc, with its epilogue's code.
  Expected<KernelSpec> specFor(const ValidDesc &Desc) {
    KernelSpec Spec = canonicalize(Desc);
    if (Spec.hasEpilogue() && !(Spec.Code = epilogueByKey(Spec.Epilogue.Key)))
      return Status::invalidArgument(
          "the descriptor's epilogue was not compiled by this runtime; compile it with "
          "Runtime::compile(descriptor, options, epilogue)");
    return Spec;
  }

  /// A hit for a descriptor equal to the last one compiled for its spec:
  /// the shared state, or null.
  std::shared_ptr<const Kernel::State> lookupEqual(const KernelSpec &Spec, const ValidDesc &Desc) {
    std::lock_guard<std::mutex> Lock(CacheMutex);
    auto It = Cache.find(Spec);
    if (It == Cache.end() || !It->second.Last || !(It->second.Last->Desc == Desc))
      return nullptr;
    ++Stats.Hits;
    Lru.splice(Lru.begin(), Lru, It->second.LruPos);
    return It->second.Last;
  }

  void remember(const std::shared_ptr<const Kernel::State> &State) {
    std::lock_guard<std::mutex> Lock(CacheMutex);
    if (auto It = Cache.find(State->Spec); It != Cache.end())
      It->second.Last = State;
  }

  /// The cached code for \p Spec, compiling it if absent. Concurrent
  /// requests for one spec wait for the first one's compile.
  CodeResult lookupOrCompile(const KernelSpec &Spec, bool &Hit, bool &FromDisk,
                             CompileTimes &Times) {
    std::unique_lock<std::mutex> Lock(CacheMutex);
    auto It = Cache.find(Spec);
    if (It != Cache.end()) {
      ++Stats.Hits;
      Hit = true;
      Lru.splice(Lru.begin(), Lru, It->second.LruPos);
      std::shared_future<CodeResult> Code = It->second.Code;
      Lock.unlock();
      return Code.get();
    }
    ++Stats.Misses;
    Hit = false;
    std::promise<CodeResult> Promise;
    Lru.push_front(Spec);
    Cache.emplace(Spec, Entry{Promise.get_future().share(), Lru.begin(), nullptr});
    CachedBytes += EntryBytes;
    evictOverflow();
    Lock.unlock();

    bool Stored = false;
    uint64_t Bytes = 0;
    CodeResult Result = compileFirst(Spec, Times, FromDisk, Stored, Bytes);
    Promise.set_value(Result);

    Lock.lock();
    Stats.CompileMs += Times.total();
    Stats.DiskLoads += FromDisk;
    Stats.DiskStores += Stored;
    auto Made = Cache.find(Spec);
    if (Made == Cache.end())
      return Result; // Evicted meanwhile (a tiny capacity).
    if (!Result) {
      // Do not cache a failure: a later request tries again.
      CachedBytes -= Made->second.Bytes;
      Lru.erase(Made->second.LruPos);
      Cache.erase(Made);
      return Result;
    }
    Stats.SpecializedAtCompile += (*Result)->tier() == KernelTier::Specialized;
    Made->second.Tiered = Result->get();
    Made->second.Bytes += Bytes;
    CachedBytes += Bytes;
    evictOverflow();
    return Result;
  }
};

Runtime::Runtime(std::unique_ptr<Impl> I) : I(std::move(I)) {}
Runtime::~Runtime() = default;

Expected<std::unique_ptr<Runtime>> Runtime::create(const RuntimeOptions &Options) {
  Clock::time_point T0 = Clock::now();
  auto I = std::make_unique<Impl>();
  I->Options = Options;
  if (I->Options.CacheCapacity == 0)
    I->Options.CacheCapacity = 1;
  // The table's buckets for as many entries as the cache can hold (up to
  // 64 Ki, half a megabyte of buckets): a rehash as it grows would hold
  // the cache's lock through a pass over every entry, inside some new
  // shape's compile().
  I->Cache.reserve(std::min<uint64_t>({I->Options.CacheCapacity,
                                       I->Options.CacheBytes / EntryBytes + 1, 1u << 16}));
  I->Log = envFlag("GATHERJIT_LOG");
  if (!Options.CacheDir.empty())
    I->Disk = DiskCache::open(Options.CacheDir, cacheEnvironment(Options.Opt),
        Options.CacheDirLimit);
  Expected<std::shared_ptr<JitEngine>> Jit = JitEngine::create({Options.PerfMap, Options.Debugger});
  if (!Jit)
    return Jit.status();
  I->Jit = Jit.take();
  I->Pool = std::make_shared<ThreadPool>(Options.Threads);
  // Last: one prepare() started may still be in the making.
  Expected<std::unique_ptr<CodeGenerator>> Gen = createCodeGenerator({}, Options.Opt);
  if (!Gen)
    return Gen.status();
  I->Gen = Gen.take();
  I->Target = backendFor(*I->Gen);
  Expected<std::optional<int>> Ordinal = parseDevice(Options.Device);
  if (!Ordinal)
    return Status::invalidArgument("RuntimeOptions::Device = '" + Options.Device +
                                   "' is not cpu, cuda or cuda:N");
  if (*Ordinal) {
    Expected<std::shared_ptr<CudaDevice>> Device = CudaDevice::open(**Ordinal);
    if (!Device)
      return Device.status();
    I->Device = Device.take();
    Expected<std::unique_ptr<CodeGenerator>> DeviceGen =
        createCodeGenerator({"nvptx64-nvidia-cuda", I->Device->arch(), ""}, Options.Opt);
    if (!DeviceGen)
      return DeviceGen.status();
    I->DeviceGen = DeviceGen.take();
    I->DeviceTarget = backendFor(*I->DeviceGen);
  }
  if (Options.WarmUp)
    I->WarmUpThread = std::thread([Impl = I.get()] { Impl->warmUp(); });
  I->InitMs = msSince(T0);
  return std::unique_ptr<Runtime>(new Runtime(std::move(I)));
}

void Runtime::prepare(const RuntimeOptions &Options) {
  // With the pipeline of a small kernel's first compile.
  prepareHostTarget(Options.Opt, Options.QuickTier ? kernelLevel(KernelSpec(), Options.Opt)
                                                   : Options.Opt);
}

/// Compiles a descriptor validation produced, or passes its error on.
static Expected<Kernel> compileValid(Runtime &R, Expected<ValidDesc> V) {
  if (!V)
    return V.status();
  return R.compile(*V);
}

Expected<Kernel> Runtime::compile(const GatherElementsDesc &Desc,
                                  const ValidateOptions &Options) {
  return compileValid(*this, validate(Desc, Options));
}

Expected<Kernel> Runtime::compile(const GatherDesc &Desc,
                                  const ValidateOptions &Options) {
  return compileValid(*this, validate(Desc, Options));
}

Expected<Kernel> Runtime::compile(const GatherNDDesc &Desc, const ValidateOptions &Options) {
  return compileValid(*this, validate(Desc, Options));
}

Expected<Kernel> Runtime::compile(const GatherElementsDesc &Desc, const ValidateOptions &Options,
                                  const Epilogue &E) {
  return compileValid(*this, I->validateWith(Desc, E, Options));
}

Expected<Kernel> Runtime::compile(const GatherDesc &Desc, const ValidateOptions &Options,
                                  const Epilogue &E) {
  return compileValid(*this, I->validateWith(Desc, E, Options));
}

Expected<Kernel> Runtime::compile(const GatherNDDesc &Desc, const ValidateOptions &Options,
                                  const Epilogue &E) {
  return compileValid(*this, I->validateWith(Desc, E, Options));
}

Expected<Kernel> Runtime::compile(const ValidDesc &Plain, const Epilogue &E, uint64_t RowOut) {
  if (Plain.Epilogue.Kind != EpilogueKind::None)
    return Status::invalidArgument("the descriptor has an epilogue already");
  const uint64_t RowIn = Plain.Input.Sizes.back();
  if (RowOut == 0)
    RowOut = RowIn;
  Expected<std::shared_ptr<const EpilogueCode>> Code = I->epilogue(E, RowIn, RowOut);
  if (!Code)
    return Code.status();
  return compileValid(*this, withEpilogue(Plain, (*Code)->Signature, RowOut));
}

Expected<EpilogueApply> Runtime::epilogueFunction(const Kernel &K) {
  if (!K.S || !K.S->Spec.Code)
    return Status::invalidArgument("the kernel has no epilogue");
  const EpilogueCode &Code = *K.S->Spec.Code;
  char Name[40];
  std::snprintf(Name, sizeof(Name), "gj_epilogue_%016llx",
                static_cast<unsigned long long>(Code.Signature.Key));
  Expected<PipelineResult> Object = [&] {
    std::lock_guard<std::mutex> Lock(I->CompileMutex);
    return runEpiloguePipeline(Code, Name, *I->Target, OptLevel::O1);
  }();
  if (!Object)
    return Object.status();
  LinkResult Linked = I->Jit->link(Name, Object->Bytes);
  if (!Linked)
    return Linked.status();
  std::shared_ptr<const Executable> Fn = Linked.take();
  return EpilogueApply([Fn](const void *In, void *Out) {
    return Fn->runRows(In, nullptr, Out, 0, 1) != EpilogueFaulted;
  });
}

Expected<Kernel> Runtime::compile(const ValidDesc &Desc) {
  Kernel K;
  Expected<KernelSpec> Made = I->specFor(Desc);
  if (!Made)
    return Made.status();
  const KernelSpec &Spec = *Made;
  if (Desc.outputElements() != 0) {
    if (auto Shared = I->lookupEqual(Spec, Desc)) {
      K.S = std::move(Shared);
      K.Hit = true;
      return K;
    }
  }
  auto State = std::make_shared<Kernel::State>();
  State->Desc = Desc;
  State->Spec = Spec;
  State->Pool = I->Pool;
  State->Device = I->Device;
  if (Desc.outputElements() != 0) {
    // A zero-size output is a kernel that does nothing: no code at all.
    CodeResult Code = I->lookupOrCompile(Spec, K.Hit, State->FromDisk, State->Times);
    if (!Code)
      return Code.status();
    State->setCode(Code.take());
    if (K.Hit)
      State->Times = CompileTimes{};
    I->remember(State);
  }
  K.S = std::move(State);
  return K;
}

/// The optimized IR or assembly of \p Spec's kernel (not cached).
static Expected<std::string> render(Runtime::Impl &I, const Expected<KernelSpec> &Spec,
                                    PipelineOutput Output) {
  if (!Spec)
    return Spec.status();
  Expected<PipelineResult> R = I.objectFor(*Spec, firstLevel(*Spec, I.Options), Output);
  if (!R)
    return R.status();
  return std::string(R->Bytes.begin(), R->Bytes.end());
}

Expected<std::string> Runtime::optimizedIR(const ValidDesc &Desc) {
  return render(*I, I->specFor(Desc), PipelineOutput::OptimizedIR);
}

Expected<std::string> Runtime::assembly(const ValidDesc &Desc) {
  return render(*I, I->specFor(Desc), PipelineOutput::Assembly);
}

Expected<std::string> Runtime::optimizedIR(const Kernel &K) {
  return render(*I, K.S->Spec, PipelineOutput::OptimizedIR);
}

Expected<std::string> Runtime::assembly(const Kernel &K) {
  return render(*I, K.S->Spec, PipelineOutput::Assembly);
}

CacheStats Runtime::stats() const {
  std::lock_guard<std::mutex> Lock(I->CacheMutex);
  CacheStats S = I->Stats;
  S.Entries = I->Cache.size();
  S.CacheBytes = I->CachedBytes;
  for (const auto &[Spec, E] : I->Cache) {
    S.GenericEntries += E.Tiered && E.Tiered->tier() == KernelTier::Generic;
    S.FamilyEntries += E.Tiered && E.Tiered->tier() == KernelTier::Family;
  }
  S.LiveKernels = I->Jit->liveCount();
  return S;
}

void Runtime::drainBackground() { I->Upgrades->drain(); }
void Runtime::stopBackground() { I->Upgrades->stop(); }

double Runtime::initMs() const { return I->InitMs; }
const RuntimeOptions &Runtime::options() const { return I->Options; }

} // namespace gatherjit
