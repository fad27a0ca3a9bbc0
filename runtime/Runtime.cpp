//===- runtime/Runtime.cpp - Compile, cache and run kernels --------------===//
//
// Per cache miss: ValidDesc -canonicalize-> KernelSpec, then the code its
// tier calls for (runtime/Tiers.cpp): the generic loop, a family kernel, or
// the compile pipeline (compiler/pipeline/Pipeline.h) to an object, perhaps
// from the persistent cache, linked by the JIT (compiler/backend/Jit.h).
// A runtime's code generator has one TargetMachine, so its compiles are
// serialized; cache lookups are not.
//
//===----------------------------------------------------------------------===//

#include "runtime/RuntimeImpl.h"

#include "runtime/System.h"

#include <llvm/Target/TargetMachine.h>

#include <cstdio>
#include <new>
#include <system_error>
#include <thread>

namespace gatherjit {

void Runtime::Impl::evictOverflow() {
  while (Cache.size() > 1 &&
         (Cache.size() > Options.CacheCapacity || CachedBytes > Options.CacheBytes)) {
    // Code still held by a Kernel handle is freed when that handle goes.
    auto Victim = Cache.find(*Lru.back());
    CachedBytes -= Victim->second.Bytes;
    Cache.erase(Victim);
    Lru.pop_back();
    ++Stats.Evictions;
  }
}

Expected<std::shared_ptr<const EpilogueCode>>
Runtime::Impl::epilogue(const Epilogue &Given, uint64_t RowIn, uint64_t RowOut) {
  const Epilogue *EP = &Given;
  Epilogue Forced;
  if (Options.Epilogues.Checked && !Given.Checked) { // Every epilogue checked.
    Forced = Given;
    Forced.Checked = true;
    EP = &Forced;
  }
  const Epilogue &E = *EP;
  const EpilogueTarget For =
      epilogueTarget((DeviceGen ? DeviceGen : Gen)->targetMachine(), RowIn, RowOut);
  const uint64_t Key = epilogueKey(E, For);
  if (auto Known = epilogueByKey(Key))
    return Known;
  Expected<std::shared_ptr<const EpilogueCode>> Code = compileEpilogue(E, For, Options.Epilogues);
  if (!Code)
    return Code;
  std::lock_guard<std::mutex> Lock(EpilogueMutex);
  if (Epilogues.size() >= EpilogueCapacity)
    Epilogues.clear();
  Epilogues.emplace(Key, *Code);
  return Code;
}

std::shared_ptr<const EpilogueCode> Runtime::Impl::epilogueByKey(uint64_t Key) {
  std::lock_guard<std::mutex> Lock(EpilogueMutex);
  auto It = Epilogues.find(Key);
  return It == Epilogues.end() ? nullptr : It->second;
}

Expected<KernelSpec> Runtime::Impl::specFor(const ValidDesc &Desc) {
  KernelSpec Spec = canonicalize(Desc);
  if (Spec.hasEpilogue() && !(Spec.Code = epilogueByKey(Spec.Epilogue.Key)))
    return Status::invalidArgument(
        "the descriptor's epilogue was not compiled by this runtime; compile it with "
        "Runtime::compile(descriptor, options, epilogue)");
  return Spec;
}

std::shared_ptr<const Kernel::State> Runtime::Impl::lookupEqual(const KernelSpec &Spec,
                                                                const ValidDesc &Desc) {
  std::lock_guard<std::mutex> Lock(CacheMutex);
  auto It = Cache.find(Spec);
  if (It == Cache.end() || !It->second.Last || !(It->second.Last->Desc == Desc))
    return nullptr;
  ++Stats.Hits;
  Lru.splice(Lru.begin(), Lru, It->second.LruPos);
  return It->second.Last;
}

void Runtime::Impl::remember(const std::shared_ptr<const Kernel::State> &State) {
  std::lock_guard<std::mutex> Lock(CacheMutex);
  if (auto It = Cache.find(*State->Spec); It != Cache.end())
    It->second.Last = State;
}

CodeResult Runtime::Impl::lookupOrCompile(const KernelSpec &Spec, SharedSpec &Shared, bool &Hit,
                                          bool &FromDisk, CompileTimes &Times) {
  std::unique_lock<std::mutex> Lock(CacheMutex);
  for (auto It = Cache.find(Spec); It != Cache.end(); It = Cache.find(Spec)) {
    if (It->second.Code) {
      ++Stats.Hits;
      Hit = true;
      Lru.splice(Lru.begin(), Lru, It->second.LruPos);
      Shared = It->first;
      return It->second.Code;
    }
    CompileEnded.wait(Lock); // Another request compiles it.
  }
  ++Stats.Misses;
  Hit = false;
  Shared = std::make_shared<const KernelSpec>(Spec);
  auto Made = Cache.emplace(Shared, Entry{}).first;
  Lru.push_front(Shared.get());
  Made->second.LruPos = Lru.begin();
  CachedBytes += EntryBytes;
  evictOverflow();
  Lock.unlock();

  bool Stored = false;
  uint64_t Bytes = 0;
  CodeResult Result = compileFirst(Shared, Times, FromDisk, Stored, Bytes);

  Lock.lock();
  CompileEnded.notify_all();
  Stats.CompileMs += Times.total();
  Stats.DiskLoads += FromDisk;
  Stats.DiskStores += Stored;
  Made = Cache.find(Spec);
  if (Made == Cache.end() || Made->second.Code)
    return Result; // Evicted meanwhile (a tiny capacity), perhaps made again.
  if (!Result) {
    // Do not cache a failure: a later request tries again.
    CachedBytes -= Made->second.Bytes;
    Lru.erase(Made->second.LruPos);
    Cache.erase(Made);
    return Result;
  }
  Stats.SpecializedAtCompile += (*Result)->tier() == KernelTier::Specialized;
  Made->second.Code = *Result;
  Made->second.Bytes += Bytes;
  CachedBytes += Bytes;
  evictOverflow();
  return Result;
}

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
  I->Cache.reserve(std::min<uint64_t>(
      {I->Options.CacheCapacity, I->Options.CacheBytes / EntryBytes + 1, 1u << 16}));
  I->Log = envFlag("GATHERJIT_LOG");
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
  I->Target = backendFor(*I->Gen, I->Jit.get());
  Expected<std::optional<int>> Ordinal = parseDevice(Options.Device);
  if (!Ordinal)
    return Status::invalidArgument("RuntimeOptions::Device = '" + Options.Device +
                                   "' is not cpu, cuda or cuda:N");
  if (*Ordinal) {
    Expected<std::shared_ptr<CudaDevice>> Device = CudaDevice::open(**Ordinal);
    if (!Device)
      return Device.status();
    I->Device = Device.take();
    Expected<std::unique_ptr<CodeGenerator>> DeviceGen = createCodeGenerator(
        {"nvptx64-nvidia-cuda", ptxArchFor(I->Device->arch()), ""}, Options.Opt);
    if (!DeviceGen)
      return DeviceGen.status();
    I->DeviceGen = DeviceGen.take();
    I->DeviceTarget = backendFor(*I->DeviceGen, I->Device.get());
  }
  if (!Options.CacheDir.empty()) {
    // A device's kernels are PTX for its architecture, kept beside the
    // host's under keys of their own.
    std::string DeviceTarget;
    if (I->DeviceGen) {
      const llvm::TargetMachine &TM = I->DeviceGen->targetMachine();
      DeviceTarget = TM.getTargetTriple().str() + " " + TM.getTargetCPU().str() + " " +
                     TM.getTargetFeatureString().str();
    }
    I->Disk = DiskCache::open(Options.CacheDir, cacheEnvironment(Options.Opt, DeviceTarget),
                              Options.CacheDirLimit);
  }
  // Its background thread, if it will compile in the background: a new
  // shape's compile() would otherwise create it (tens of microseconds).
  if (Options.Specialization != Specialize::Never)
    I->Upgrades->start();
  if (Options.WarmUp) {
    // Only a head start: without a thread, or without the memory to
    // finish, the first kernel's compile does the same work.
    try {
      I->WarmUpThread = std::thread([Impl = I.get()] {
        try {
          Impl->warmUp();
        } catch (const std::bad_alloc &) {
        }
      });
    } catch (const std::system_error &) {
    }
  }
  I->InitMs = msSince(T0);
  return std::unique_ptr<Runtime>(new Runtime(std::move(I)));
}

void Runtime::prepare(const RuntimeOptions &Options) {
  // With the pipeline of a small kernel's first compile.
  prepareHostTarget(Options.Opt,
                    Options.QuickTier ? kernelLevel(KernelSpec(), Options.Opt) : Options.Opt);
}

/// Compiles a descriptor validation produced, or passes its error on.
static Expected<Kernel> compileValid(Runtime &R, Expected<ValidDesc> V) {
  if (!V)
    return V.status();
  return R.compile(std::move(*V));
}

Expected<Kernel> Runtime::compile(const GatherElementsDesc &Desc, const ValidateOptions &Options) {
  return compileValid(*this, validate(Desc, Options));
}

Expected<Kernel> Runtime::compile(const GatherDesc &Desc, const ValidateOptions &Options) {
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
  if (!K.S || !K.S->Spec->Code)
    return Status::invalidArgument("the kernel has no epilogue");
  const EpilogueCode &Code = *K.S->Spec->Code;
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

Expected<Kernel> Runtime::compile(const ValidDesc &Desc) { return compileDesc(Desc, nullptr); }

Expected<Kernel> Runtime::compile(ValidDesc &&Desc) { return compileDesc(Desc, &Desc); }

Expected<Kernel> Runtime::compileDesc(const ValidDesc &Desc, ValidDesc *Owned) {
  Kernel K;
  Expected<KernelSpec> Made = I->specFor(Desc);
  if (!Made)
    return Made.status();
  const KernelSpec &Spec = *Made;
  const bool Empty = Desc.outputElements() == 0;
  if (!Empty) {
    if (auto Shared = I->lookupEqual(Spec, Desc)) {
      K.S = std::move(Shared);
      K.Hit = true;
      return K;
    }
  }
  auto State = std::make_shared<Kernel::State>();
  if (Owned)
    State->Desc = std::move(*Owned); // (Desc is *Owned: not read again.)
  else
    State->Desc = Desc;
  State->Pool = I->Pool;
  State->Device = I->Device;
  if (Empty) {
    // A zero-size output is a kernel that does nothing: no code at all.
    State->Spec = std::make_shared<const KernelSpec>(std::move(*Made));
  } else {
    CodeResult Code = I->lookupOrCompile(Spec, State->Spec, K.Hit, State->FromDisk, State->Times);
    if (!Code)
      return Code.status();
    State->setCode(Code.take());
    // A state is kept for the spec's next equal descriptor once one came
    // again: a walk over new shapes keeps no state per shape.
    if (K.Hit) {
      State->Times = CompileTimes{};
      I->remember(State);
    }
  }
  K.S = std::move(State);
  return K;
}

/// The optimized IR or assembly of \p Spec's kernel (not cached), at the
/// level its first compile has (a device's kernels have no quick tier).
static Expected<std::string> render(Runtime::Impl &I, const Expected<KernelSpec> &Spec,
                                    PipelineOutput Output) {
  if (!Spec)
    return Spec.status();
  const OptLevel Level = I.Device ? I.Options.Opt : firstLevel(*Spec, I.Options);
  Expected<PipelineResult> R = I.objectFor(*Spec, Level, Output);
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
  return render(*I, *K.S->Spec, PipelineOutput::OptimizedIR);
}

Expected<std::string> Runtime::assembly(const Kernel &K) {
  return render(*I, *K.S->Spec, PipelineOutput::Assembly);
}

CacheStats Runtime::stats() const {
  std::lock_guard<std::mutex> Lock(I->CacheMutex);
  CacheStats S = I->Stats;
  S.Entries = I->Cache.size();
  S.CacheBytes = I->CachedBytes;
  for (const auto &[Spec, E] : I->Cache) {
    S.GenericEntries += E.Code && E.Code->tier() == KernelTier::Generic;
    S.FamilyEntries += E.Code && E.Code->tier() == KernelTier::Family;
  }
  S.LiveKernels = I->Jit->liveCount();
  return S;
}

void Runtime::drainBackground() { I->Upgrades->drain(); }
void Runtime::stopBackground() { I->Upgrades->stop(); }

double Runtime::initMs() const { return I->InitMs; }
const RuntimeOptions &Runtime::options() const { return I->Options; }

} // namespace gatherjit
