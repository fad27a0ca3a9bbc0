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

struct RuntimeOptions {
  OptLevel Opt = OptLevel::O2;
  /// At O2, a kernel that writes at most 64 KiB runs in microseconds but
  /// takes milliseconds to optimize: it is compiled at O1 first, in a
  /// fraction of the time, and recompiled at O2 on a background thread once
  /// it has written about 16 MiB over its runs. Handles pick up the new code
  /// by themselves. False compiles every kernel at O2 straight away.
  bool QuickTier = true;
  /// Kernels kept in the cache; the least recently used beyond it are
  /// evicted (their code freed once no Kernel handle holds it).
  size_t CacheCapacity = 256;
  /// Threads a large kernel is split across; 0 means all cores, 1 runs
  /// every kernel on the caller's thread.
  unsigned Threads = 0;
  /// Write /tmp/perf-<pid>.map entries so `perf report` names kernels.
  bool PerfMap = false;
  /// Register JIT code with the GDB JIT interface.
  bool Debugger = false;
  /// If set, a directory where compiled kernels persist across processes
  /// (created 0700 if missing). A later runtime with the same LLVM, CPU and
  /// optimization level loads them without optimizing or generating code.
  /// Off by default: an embedder chooses (the command line keeps one in
  /// $XDG_CACHE_HOME/gatherjit).
  std::string CacheDir;
  /// Bytes of entries CacheDir keeps: past it, the least recently used are
  /// removed. 0: no limit.
  uint64_t CacheDirLimit = uint64_t(256) << 20;
  /// Pays a process's one-time compile costs (code paged in, the target's
  /// subtarget tables, the passes' first runs) on a background thread that
  /// create() starts: it compiles and links a small kernel at the quick
  /// tier and at Opt, then drops them (nothing is cached or stored). A
  /// process that creates its runtime ahead of its first kernel then
  /// compiles that kernel in about the time of any later one; a compile
  /// asked for meanwhile waits for the warm-up step in progress.
  bool WarmUp = false;
};

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
  /// IndexOutOfRange naming the first out-of-range index; the output is
  /// then unspecified.
  Status run(const void *Input, const void *Indices, void *Output) const;
  /// Runs rows [Begin, End) of the outermost loop on the calling thread.
  Status runRows(const void *Input, const void *Indices, void *Output,
                 uint64_t Begin, uint64_t End) const;

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
  Expected<Kernel> compile(const GatherElementsDesc &Desc,
                           const ValidateOptions &Options = {});
  Expected<Kernel> compile(const GatherDesc &Desc,
                           const ValidateOptions &Options = {});
  Expected<Kernel> compile(const GatherNDDesc &Desc,
                           const ValidateOptions &Options = {});
  Expected<Kernel> compile(const ValidDesc &Desc);

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

  /// The optimized LLVM IR, or the machine code as assembly, of the kernel
  /// for \p Desc (not cached).
  Expected<std::string> optimizedIR(const ValidDesc &Desc);
  Expected<std::string> assembly(const ValidDesc &Desc);
  /// The same for a kernel, with its epilogue if it has one.
  Expected<std::string> optimizedIR(const Kernel &K);
  Expected<std::string> assembly(const Kernel &K);

  CacheStats stats() const;
  /// Milliseconds create() spent setting up the JIT.
  double initMs() const;
  const RuntimeOptions &options() const;

  struct Impl;

private:
  explicit Runtime(std::unique_ptr<Impl> I);
  std::unique_ptr<Impl> I;
};

} // namespace gatherjit

#endif
