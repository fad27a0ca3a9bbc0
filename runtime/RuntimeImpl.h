//===- runtime/RuntimeImpl.h - The runtime's state -----------------------===//
/// \file
/// Runtime::Impl: the code generators and the JIT, the kernel cache and its
/// statistics, family kernels, compiled epilogues and the background
/// queue. Its functions live by what they do: the tiers a spec's code goes
/// through (runtime/Tiers.cpp), family kernels (runtime/Families.cpp), and
/// the cache, epilogues and the public API (runtime/Runtime.cpp).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_RUNTIMEIMPL_H
#define GATHERJIT_RUNTIME_RUNTIMEIMPL_H

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
#include <condition_variable>
#include <cstdio>
#include <list>
#include <optional>
#include <thread>
#include <unordered_map>

namespace gatherjit {

using Clock = std::chrono::steady_clock;
inline double msSince(Clock::time_point T0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - T0).count();
}
using LinkResult = Expected<std::shared_ptr<const Executable>>;
using CodeResult = Expected<std::shared_ptr<TieredCode>>;

/// What the cache charges an entry besides its code: the spec (one, shared
/// by the entry, its code and its handles), the state kept for its hits
/// with its descriptor, the allocations' overheads.
constexpr uint64_t EntryBytes = 4096;
/// Linked code takes whole pages.
inline uint64_t codeBytes(size_t ObjectBytes) { return (ObjectBytes + 4095) / 4096 * 4096; }
/// Compiled epilogues kept by key; past it the table starts over.
constexpr size_t EpilogueCapacity = 256;
/// Family kernels kept (one per element size, index type, policy, rank
/// and contiguity in use: few); past it the table starts over.
constexpr size_t FamilyCapacity = 256;

/// A spec shared by a cache entry, its code and its handles' states: a new
/// shape's compile() copies its spec once (each copy is 560 bytes of fresh
/// memory, and the cache's entries grow a process's heap a page at a time).
using SharedSpec = std::shared_ptr<const KernelSpec>;
/// The cache's hash and equality, which find an entry by a spec alone.
struct SharedSpecHash {
  using is_transparent = void;
  size_t operator()(const KernelSpec &S) const { return S.hashValue(); }
  size_t operator()(const SharedSpec &S) const { return S->hashValue(); }
};
struct SharedSpecEqual {
  using is_transparent = void;
  static const KernelSpec &spec(const KernelSpec &S) { return S; }
  static const KernelSpec &spec(const SharedSpec &S) { return *S; }
  template <class A, class B> bool operator()(const A &X, const B &Y) const {
    return spec(X) == spec(Y);
  }
};

struct Runtime::Impl {
  RuntimeOptions Options;
  std::unique_ptr<CodeGenerator> Gen; ///< With the target machine.
  std::unique_ptr<Backend> Target;    ///< Gen's backend.
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
  /// Notified, with CacheMutex, whenever a compile that lookupOrCompile
  /// started ends (made, failed or evicted): its spec's other requests wait
  /// for it.
  std::condition_variable CompileEnded;
  struct Entry {
    /// Null while the first request compiles it.
    std::shared_ptr<TieredCode> Code;
    std::list<const KernelSpec *>::iterator LruPos;
    /// The state last handed out for a hit of this spec, so that an equal
    /// descriptor's later hits need no allocation.
    std::shared_ptr<const Kernel::State> Last;
    /// The bytes the cache charges for the entry.
    uint64_t Bytes = EntryBytes;
  };
  uint64_t CachedBytes = 0; ///< Summed over Cache.
  std::unordered_map<SharedSpec, Entry, SharedSpecHash, SharedSpecEqual> Cache;
  /// Compiled epilogues by key (see epilogue()).
  std::mutex EpilogueMutex;
  std::unordered_map<uint64_t, std::shared_ptr<const EpilogueCode>> Epilogues;
  /// The entries' specs (their keys in Cache), most recently used first.
  std::list<const KernelSpec *> Lru;
  /// A family kernel (see familyCode()): the spec it is compiled from, for
  /// a row family the plan its shapes share, the code (null until compiled,
  /// or if its compile failed), the shapes seen before and whether its
  /// compile has begun (it is tried once).
  struct FamilyEntry {
    KernelSpec Spec;
    std::optional<KernelPlan> Plan;
    std::shared_ptr<const Executable> Code;
    unsigned Shapes = 0;
    bool Tried = false;
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

  // The tiers (runtime/Tiers.cpp).

  /// Compiles and links a 2x8 FLOAT32 GatherElements at the quick tier and
  /// at the runtime's level, caching and storing nothing; on a device, its
  /// first kernel (its family's) at the runtime's level, loaded by the
  /// driver.
  void warmUp();
  /// Produces the object for \p Spec: from the persistent cache if it holds
  /// a valid entry, else through the whole pipeline (and stored); with
  /// \p UseDisk false, through the pipeline and not stored.
  Expected<PipelineResult> objectFor(const KernelSpec &Spec, OptLevel Level,
                                     PipelineOutput Output = PipelineOutput::Object,
                                     bool UseDisk = true);
  LinkResult compileSpec(const KernelSpec &Spec, OptLevel Level, CompileTimes &Times,
                         bool &FromDisk, bool &Stored, uint64_t &Bytes);
  TieredCode::Upgrader upgrader(SharedSpec Spec) {
    return [this, Spec = std::move(Spec)](TieredCode &Tiered) { upgrade(Spec, Tiered); };
  }
  /// A device runtime's first code of \p Spec: its family's kernel bound
  /// to it (compiled now if this is the family's first shape), or where
  /// there is none, or the runtime specializes at compile, its own kernel.
  CodeResult compileFirstOnDevice(const SharedSpec &Spec, CompileTimes &Times, bool &FromDisk,
                                  bool &Stored, uint64_t &Bytes);
  /// The first code of \p Spec: the generic loop, or the kernel compiled at
  /// its first level (the quick tier for a small kernel, else the
  /// runtime's level); on a device, the device's kernel.
  CodeResult compileFirst(const SharedSpec &Spec, CompileTimes &Times, bool &FromDisk, bool &Stored,
                          uint64_t &Bytes);
  /// Compiles \p Spec at the runtime's level and switches \p Code to it (on
  /// the background thread), from the generic loop, a family kernel or the
  /// quick tier. A hot shape goes straight to the runtime's level, not the
  /// quick tier: the compile is off the caller's thread, and on small rows
  /// the quick tier's code ran 5x slower than O2's and 2x slower than the
  /// generic loop (`gatherjit bench --shapes`, walk (a)). A shape that
  /// started on the generic loop takes its row family's kernel instead
  /// where that is compiled, and the first shape of a row family compiles
  /// that kernel before its own (see rowFamilyFirst). On failure the
  /// current code keeps running.
  void upgrade(const SharedSpec &Spec, TieredCode &Code);
  /// Row family \p Rows's kernel for a hot shape of it, compiled now (on
  /// the background thread) if its compile has not begun: the family's
  /// first shape, hot before a second came, compiles it before its own
  /// kernel, which would serve it alone, where the family's serves every
  /// later shape at once. \p Alone: no other shape of the family has come.
  std::shared_ptr<const Executable> rowFamilyFirst(const KernelSpec &Rows, bool &Alone);

  // Family kernels (runtime/Families.cpp).

  /// The entry of family \p Family (familyOf's or rowFamilyOf's). A row
  /// family's shapes share one only where their plans agree: the kernel is
  /// compiled from the first one's, and what the plan decides from the
  /// rows (a large output's streaming stores, say) is the same for all.
  /// Called with FamilyMutex held.
  FamilyEntry &familyEntry(const KernelSpec &Family);
  /// The linked kernel of family \p Family, or null if it is not compiled
  /// yet. With \p Count the caller is a new shape of it: the family's second
  /// queues its compile on the background thread unless it has begun (a
  /// process that sees one shape of a family, a one-shot command line, has
  /// no use for it; a row family's first shape, once hot, compiles it
  /// itself: see rowFamilyFirst).
  /// \p First, if given, tells whether no shape had counted before.
  std::shared_ptr<const Executable> familyCode(const KernelSpec &Family, bool Count,
                                               bool *First = nullptr);
  /// Family \p Family's kernel, compiled on this thread and kept in its
  /// entry unless its compile has begun before (the background thread's
  /// jobs run one at a time, so it is then done); null if it failed.
  std::shared_ptr<const Executable> compileFamily(const KernelSpec &Family);
  /// Family \p Family's kernel compiled on this thread, into \p Times,
  /// \p FromDisk and \p Stored, and counted; a failure is logged.
  LinkResult compileFamilyKernel(const KernelSpec &Family, CompileTimes &Times, bool &FromDisk,
                                 bool &Stored);
  /// A device runtime's kernel of family \p Family (familyOf with block
  /// rows), compiled on this thread if no shape has asked for it before;
  /// null if its compile failed.
  std::shared_ptr<const Executable> deviceFamilyCode(const KernelSpec &Family, CompileTimes &Times,
                                                     bool &FromDisk, bool &Stored);

  // The cache and epilogues (runtime/Runtime.cpp).

  /// Evicts the least recently used entries while the cache holds more
  /// than its capacity, in entries or bytes; the newest always stays.
  /// Called with CacheMutex held.
  void evictOverflow();
  /// \p E compiled for this runtime's CPU and the given row lengths; clang
  /// runs once per key. (Entries are small; past EpilogueCapacity the
  /// table starts over, kernels keep what they hold.)
  Expected<std::shared_ptr<const EpilogueCode>> epilogue(const Epilogue &Given, uint64_t RowIn,
                                                         uint64_t RowOut);
  std::shared_ptr<const EpilogueCode> epilogueByKey(uint64_t Key);
  /// Validates \p Desc with \p E's signature (E compiled for the rows of
  /// the descriptor's last dimensions).
  template <class OpDesc>
  Expected<ValidDesc> validateWith(const OpDesc &Desc, const Epilogue &E,
                                   const ValidateOptions &Given) {
    auto Last = [](const TensorDesc &T) { return T.Sizes.empty() ? 1 : T.Sizes.back(); };
    Expected<std::shared_ptr<const EpilogueCode>> Code =
        epilogue(E, Last(Desc.Input), Last(Desc.Output));
    if (!Code)
      return Code.status();
    ValidateOptions With = Given;
    With.Epilogue = (*Code)->Signature;
    return validate(Desc, With);
  }
  /// The spec of \p Desc, with its epilogue's code.
  Expected<KernelSpec> specFor(const ValidDesc &Desc);
  /// A hit for a descriptor equal to the one of the state its spec's entry
  /// keeps (Entry::Last): that state, or null.
  std::shared_ptr<const Kernel::State> lookupEqual(const KernelSpec &Spec, const ValidDesc &Desc);
  void remember(const std::shared_ptr<const Kernel::State> &State);
  /// The cached code for \p Spec, compiling it if absent. Concurrent
  /// requests for one spec wait for the first one's compile, and take its
  /// code; where it failed (nothing is cached) or was evicted, each tries
  /// itself. Neither a miss nor a hit makes a system call where no request
  /// waits: a new shape's path runs cold after a large call, where each
  /// costs microseconds. \p Shared: the entry's spec, for the caller's
  /// state to share.
  CodeResult lookupOrCompile(const KernelSpec &Spec, SharedSpec &Shared, bool &Hit, bool &FromDisk,
                             CompileTimes &Times);
};

} // namespace gatherjit

#endif
