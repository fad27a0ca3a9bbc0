//===- gatherjit/Runtime.h - Compile and run specialized kernels ---------===//
/// \file
/// The C++ embedding API. A Runtime validates a descriptor, lowers it to a
/// kernel in which every size and stride is a constant, JIT-compiles it and
/// caches the native code by its canonical spec, so the second compile of an
/// equivalent descriptor is a lookup. Kernel::run takes three pointers and
/// does nothing per call but the loop.
///
/// No LLVM type appears here: a user compiles against this header alone.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_H
#define GATHERJIT_RUNTIME_H

#include "gatherjit/Compile.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/OptLevel.h"
#include "gatherjit/Validate.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatherjit {

/// The code a kernel handle runs now.
enum class KernelTier {
  /// The shape-generic loop built into the library: sizes and strides are
  /// run-time values, nothing was compiled for this descriptor.
  Generic,
  /// Compiled once per family of shapes (element size, index type,
  /// policy, rank, which strides are 0 or 1): sizes and strides are the
  /// kernel's arguments, its inner loop still vectorized.
  Family,
  /// Compiled for this descriptor: every size and stride a constant.
  Specialized,
};
const char *kernelTierName(KernelTier Tier); // "generic", "family", "specialized"

/// When a descriptor's specialized kernel is compiled.
enum class Specialize {
  /// compile() never waits for LLVM: a new shape runs at once, on its
  /// family's kernel if that is compiled, else on the generic loop (and
  /// the family kernel is compiled on the runtime's background thread).
  /// Its specialized kernel is compiled there once the shape is hot (a few
  /// runs, or enough bytes written; runtime/TierPlan.h). Handles switch to
  /// it by themselves. A
  /// kernel so large that specializing pays for itself within one call,
  /// and a kernel with an epilogue, are specialized at compile(). On a
  /// device (RuntimeOptions::Device), which has no generic loop, a new
  /// shape runs its family's kernel, compiled by the family's first shape
  /// on the calling thread, and is specialized in the background once it
  /// has written 1 MiB a call a few times, or run 4096 times.
  Adaptive,
  /// compile() specializes every kernel before it returns: warm-ups,
  /// benchmarks, ahead-of-time-like use.
  AtCompile,
  /// Only the generic loop: no LLVM after compile() (a kernel with an
  /// epilogue is still compiled). On a device, only family kernels.
  Never,
};
const char *specializeName(Specialize Mode); // "adaptive", "compile", "never"
/// Parses specializeName()'s spellings; false for anything else.
bool parseSpecialize(std::string_view Text, Specialize &Mode);

struct RuntimeOptions {
  OptLevel Opt = OptLevel::O2;
  Specialize Specialization = Specialize::Adaptive;
  /// At O2, a kernel that writes at most 64 KiB runs in microseconds but
  /// takes milliseconds to optimize: it is compiled at O1 first, in a
  /// fraction of the time, and recompiled at O2 on a background thread once
  /// it has written about 16 MiB over its runs. Handles pick up the new code
  /// by themselves. False compiles every kernel at O2 straight away.
  bool QuickTier = true;
  /// Bytes the in-memory cache keeps: each kernel's code (rounded up to
  /// pages) and its state. Past it, the least recently used kernels are
  /// evicted (their code freed once no Kernel handle holds it). The generic
  /// tier's entries cost a few hundred bytes, so a walk over tens of
  /// thousands of shapes stays cached.
  uint64_t CacheBytes = uint64_t(64) << 20;
  /// Kernels kept in the cache, whatever their bytes (0 means 1).
  size_t CacheCapacity = size_t(1) << 20;
  /// Threads a large kernel is split across; 0 means all cores, 1 runs
  /// every kernel on the caller's thread.
  unsigned Threads = 0;
  /// Write /tmp/perf-<pid>.map entries so `perf report` names kernels.
  bool PerfMap = false;
  /// Register JIT code with the GDB JIT interface.
  bool Debugger = false;
  /// If set, a directory where compiled kernels persist across processes
  /// (created 0700 if missing). A later runtime with the same LLVM, CPU and
  /// optimization level loads them without optimizing or generating code;
  /// a device runtime's are PTX, for the same device architecture too.
  /// Off by default: an embedder chooses (the command line keeps one in
  /// $XDG_CACHE_HOME/gatherjit).
  std::string CacheDir;
  /// Bytes of entries CacheDir keeps: past it, the least recently used are
  /// removed. 0: no limit.
  uint64_t CacheDirLimit = uint64_t(256) << 20;
  /// Pays a process's one-time compile costs (code paged in, the target's
  /// subtarget tables, the passes' first runs) on a background thread that
  /// create() starts: it compiles and links a small kernel at the quick
  /// tier and at Opt, then drops them (nothing is cached or stored); a
  /// device runtime compiles its small kernel's family kernel (its own
  /// under Specialize::AtCompile) at Opt and loads it through the driver,
  /// which pays the driver's first module load too. A process that creates
  /// its runtime ahead of its first kernel then compiles that kernel in
  /// about the time of any later one; a compile asked for meanwhile waits
  /// for the warm-up step in progress.
  bool WarmUp = false;
  /// How epilogues' compiles are confined (a helper process, its time and
  /// memory; see EpilogueLimits).
  EpilogueLimits Epilogues;
  /// Where kernels run: "cpu", or "cuda" / "cuda:N", a CUDA device through
  /// its driver (loaded at run time; create() answers Unsupported without
  /// one). A device runtime's kernels take device pointers, run on the
  /// calling thread's stream (Kernel::runOnStream) and wait for it; a new
  /// shape runs its family's kernel (see Specialize; there is no generic
  /// loop on a device), and epilogues are fused (element, row and checked
  /// ones).
  std::string Device = "cpu";
};

/// The persistent cache directory the command line and the Python package
/// use by default, as ccache and Triton choose theirs: none under
/// GATHERJIT_NO_CACHE, else GATHERJIT_CACHE_DIR, $XDG_CACHE_HOME/gatherjit
/// or ~/.cache/gatherjit, the first that is set ("" for none).
std::string defaultCacheDir();

/// The bytes that directory keeps (RuntimeOptions::CacheDirLimit) where the
/// command line and the Python package use it: GATHERJIT_CACHE_LIMIT_MIB in
/// MiB (0: no limit) where it is set, else \p Default. An error naming the
/// variable and its value where that is no integer in 0..2^40.
Expected<uint64_t> defaultCacheLimit(uint64_t Default);

struct CacheStats {
  uint64_t Hits = 0;
  uint64_t Misses = 0;
  uint64_t Evictions = 0;
  uint64_t Entries = 0;
  /// Code objects linked now: those of cached kernels and of evicted ones
  /// still held by a Kernel handle. An upgraded kernel keeps its quick code
  /// (another thread may be running it) and counts twice.
  uint64_t LiveKernels = 0;
  /// Misses served from the persistent cache directory, and kernels
  /// written to it.
  uint64_t DiskLoads = 0;
  uint64_t DiskStores = 0;
  /// Kernels recompiled at the runtime's level after starting at the quick
  /// tier (see RuntimeOptions::QuickTier).
  uint64_t Upgrades = 0;
  /// Kernels that started at the generic tier and were specialized in the
  /// background, and misses specialized at compile() (Specialize::AtCompile,
  /// a call too large for the generic loop, an epilogue).
  uint64_t Specializations = 0;
  uint64_t SpecializedAtCompile = 0;
  /// Family kernels compiled (each serves every shape of its family).
  uint64_t FamilyKernels = 0;
  /// Cached entries running the generic loop now, those running a family
  /// kernel, and the bytes the cache charges for all entries (see
  /// RuntimeOptions::CacheBytes).
  uint64_t GenericEntries = 0;
  uint64_t FamilyEntries = 0;
  uint64_t CacheBytes = 0;
  /// Milliseconds spent compiling (or loading), summed over every miss and
  /// upgrade.
  double CompileMs = 0;
};

class Runtime;
class CachedKernels;

/// A compiled kernel for one validated descriptor. Cheap to copy; the code
/// stays valid while any copy is alive, even after eviction from the cache.
class Kernel {
public:
  Kernel() = default;

  /// Runs the kernel on buffers that hold the descriptor's tensors. Large
  /// kernels are split across the runtime's threads. Under Check, returns
  /// IndexOutOfRange naming the first out-of-range index (an empty output's
  /// indices are checked too, as ONNX has it); the output is then
  /// unspecified. An output whose bytes overlap the input's or the
  /// indices' (the same buffer, or any part of it, as the descriptors'
  /// sizes and strides span them) is computed through a temporary: the
  /// result is the one disjoint buffers give, and a failed Check leaves
  /// the output untouched.
  Status run(const void *Input, const void *Indices, void *Output) const;
  /// run() on \p Stream (a CUstream) for a device runtime's kernel, which
  /// waits for it; a CPU kernel ignores it.
  Status runOnStream(const void *Input, const void *Indices, void *Output, void *Stream) const;
  /// Starts a device runtime's kernel on \p Stream (a CUstream; null: the
  /// default stream) and returns without waiting: the buffers must stay as
  /// they are until finishStream. A CPU kernel runs at once, as run().
  Status launchOnStream(const void *Input, const void *Indices, void *Output, void *Stream) const;
  /// Waits for \p Stream and reports the first of this kernel's launches
  /// on it since the last finish, in launch order, that found a bad index
  /// (Check): IndexOutOfRange naming its first, read from its indices.
  /// OK for a CPU kernel.
  Status finishStream(void *Stream) const;
  /// Runs rows [Begin, End) of the outermost loop on the calling thread.
  /// An output that overlaps the input or indices is InvalidArgument here.
  Status runRows(const void *Input, const void *Indices, void *Output, uint64_t Begin,
                 uint64_t End) const;

  const ValidDesc &desc() const;
  /// The outermost loop's trip count (0 for an empty output).
  uint64_t rows() const;
  /// The native symbol, e.g. gj_b4_i64_r2_check_...; empty for an empty
  /// output, which needs no code.
  const std::string &symbolName() const;
  /// True if this handle came from the in-memory cache without compiling.
  bool cacheHit() const;
  /// True if this kernel's code was loaded from the persistent cache.
  bool fromDiskCache() const;
  /// This kernel's compile time (zero on a cache hit).
  const CompileTimes &compileTimes() const;
  /// The level of the code that runs now: O1 for a small kernel at the
  /// quick tier, the runtime's level once upgraded (O0 for an empty output,
  /// which has no code).
  OptLevel optLevel() const;
  /// The tier of the code that runs now (Specialized for an empty output,
  /// which needs no code).
  KernelTier tier() const;

private:
  friend class Runtime;
  friend class CachedKernels;
  struct State;
  std::shared_ptr<const State> S;
  bool Hit = false; ///< This handle came from the cache.
};

class Runtime {
public:
  /// Sets up the JIT (target machine, ORC). Fails with Internal if the host
  /// target cannot be initialized.
  static Expected<std::unique_ptr<Runtime>> create(const RuntimeOptions &Options = {});
  ~Runtime();

  /// Starts, on a thread of its own, the costliest part of a process's
  /// first create() with \p Options and of its first compile: the host's
  /// target machine, its code generator's tables for this CPU and the
  /// code generator's pipeline a small kernel is compiled with first
  /// (about 2.5 ms). A program that calls this early, long before its
  /// first kernel, finds them made; create() waits for them if they are
  /// not yet. Once per process: later calls do nothing.
  static void prepare(const RuntimeOptions &Options = {});

  /// Validates and compiles. Validation failures are InvalidArgument or
  /// Unsupported with the validator's message; a failing compile is
  /// Internal. Safe to call from many threads at once: one spec is compiled
  /// once however many threads ask for it.
  Expected<Kernel> compile(const GatherElementsDesc &Desc, const ValidateOptions &Options = {});
  Expected<Kernel> compile(const GatherDesc &Desc, const ValidateOptions &Options = {});
  Expected<Kernel> compile(const GatherNDDesc &Desc, const ValidateOptions &Options = {});
  Expected<Kernel> compile(const ValidDesc &Desc);
  /// The same, the kernel keeping \p Desc itself where it keeps a copy.
  Expected<Kernel> compile(ValidDesc &&Desc);

  /// The same, with \p E fused into the kernel. The output's type is the
  /// epilogue's OUT; a row epilogue's output rows may differ in length from
  /// the input's. A bad epilogue is InvalidArgument with one line
  /// "FILE:LINE:COL: error: ..."; without clang's libraries, Unsupported.
  Expected<Kernel> compile(const GatherElementsDesc &Desc, const ValidateOptions &Options,
                           const Epilogue &E);
  Expected<Kernel> compile(const GatherDesc &Desc, const ValidateOptions &Options,
                           const Epilogue &E);
  Expected<Kernel> compile(const GatherNDDesc &Desc, const ValidateOptions &Options,
                           const Epilogue &E);

  /// Fuses \p E into the plain gather \p Plain (see withEpilogue): its
  /// output takes the epilogue's type and, for a row epilogue, rows of
  /// \p RowOut elements (0: as many as the input's rows).
  Expected<Kernel> compile(const ValidDesc &Plain, const Epilogue &E, uint64_t RowOut = 0);

  /// The epilogue of \p K alone, compiled the same way and called per
  /// element or row, without the gather: the interpreter's reference.
  Expected<EpilogueApply> epilogueFunction(const Kernel &K);

  /// The optimized LLVM IR, or the machine code as assembly (a device's
  /// PTX), of the kernel for \p Desc (not cached), at the level its first
  /// compile has: the quick tier's for a small kernel on the host.
  Expected<std::string> optimizedIR(const ValidDesc &Desc);
  Expected<std::string> assembly(const ValidDesc &Desc);
  /// The same for a kernel, with its epilogue if it has one.
  Expected<std::string> optimizedIR(const Kernel &K);
  Expected<std::string> assembly(const Kernel &K);

  CacheStats stats() const;
  /// Waits until the background thread has compiled every specialization
  /// and upgrade asked for so far (for benchmarks and tests that want the
  /// hot shapes' code in place).
  void drainBackground();
  /// Stops the background thread: the compile under way finishes, queued
  /// ones are dropped, and later hot shapes keep their code. Call it (or
  /// destroy the runtime) before the process exits: LLVM's own static
  /// objects may be destroyed at exit while a compile still uses them.
  void stopBackground();
  /// Milliseconds create() spent setting up the JIT.
  double initMs() const;
  const RuntimeOptions &options() const;

  struct Impl;

private:
  explicit Runtime(std::unique_ptr<Impl> I);
  /// compile(Desc), moving from \p Owned (Desc itself) where non-null.
  Expected<Kernel> compileDesc(const ValidDesc &Desc, ValidDesc *Owned);
  std::unique_ptr<Impl> I;
};

} // namespace gatherjit

#endif
