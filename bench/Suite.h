//===- bench/Suite.h - The benchmark suite as a library ------------------===//
/// \file
/// Measures every case of bench/Cases.h on each engine (the interpreter, the
/// generic precompiled kernel, the specialized kernel on one thread and on
/// N), next to a memcpy bandwidth and the random reads of a few measured in the
/// same run, plus compile latencies. `gatherjit bench` prints and plots
/// what this returns; bench/GatherBench.cpp times the same calls under
/// Google Benchmark.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_BENCH_SUITE_H
#define GATHERJIT_BENCH_SUITE_H

#include "Cases.h"

#include "compiler/spec/KernelSpec.h"
#include "gatherjit/Runtime.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gatherjit::bench {

/// A case's descriptor, buffers and the interpreter's output.
struct PreparedCase {
  const BenchCase *Case = nullptr;
  ValidDesc Desc;
  /// What the generic kernel takes at run time, as a library would.
  KernelSpec Spec;
  BenchData Data;
  Buffer Reference;
  /// Bytes one call moves: 2 x output bytes + index bytes.
  double movedBytes() const { return 2.0 * Data.OutputBytes + Data.Indices.size(); }
};
Expected<PreparedCase> prepareCase(const BenchCase &C);

/// The engines, as the JSON rows name them.
enum class Engine { Interp, Generic, Jit };
const char *engineName(Engine E);

/// One call of \p E on \p P; false if it failed. \p K is the compiled
/// kernel for Engine::Jit.
bool runOnce(const PreparedCase &P, Engine E, const Kernel &K, void *Out);

/// The median times of one call of each of \p Calls in nanoseconds, timed
/// in interleaved rounds (one batch of each per round), so that a change in
/// the shared machine's load moves them all alike and their ratios hold.
/// Each call runs its argument's count of calls; tiny calls are timed in
/// batches so the clock's cost does not count. Sampling stops after
/// \p MinSeconds per call (at least 3 or 7 rounds, at most 200). \p Evict,
/// if given, runs untimed before each batch: every call then starts from
/// the same caches, whichever ran before it.
std::vector<double> interleavedMedianNs(const std::vector<std::function<void(uint64_t)>> &Calls,
                                        double MinSeconds = 0.25,
                                        const std::function<void()> &Evict = {});

/// The median time of one call of \p Call in nanoseconds.
template <typename F> double medianNs(F &&Call, double MinSeconds = 0.25) {
  return interleavedMedianNs({[&](uint64_t N) {
                               for (uint64_t I = 0; I < N; ++I)
                                 Call();
                             }},
                             MinSeconds)[0];
}

/// The small kernels compile latency is measured on: FLOAT32 [64, AxisSize]
/// gathered along axis 1 by INT64 [64, 16], and 32 rows of 64 FLOAT32 from
/// a [Rows, 64] table. A new size is a new spec: a cold compile.
GatherElementsDesc probeGatherElements(uint64_t AxisSize);
GatherDesc probeGather(uint64_t Rows);

/// Read + write bandwidth of a large memcpy split across \p Threads
/// threads, in GB/s (1e9 bytes).
double memcpyGbps(unsigned Threads = 1);
/// The machine the results come from, as the reports name it: the first
/// CPU's model name, with its family and model numbers where the system
/// gives them (a virtual machine's "AMD EPYC" alone does not tell one
/// generation of cores from the next), and the cores online.
std::string machineName();
/// The reads of a case whose elements are each read at a uniformly random
/// place of a region larger than the core's caches hold close: Count reads
/// of ElemBytes, Count / Regions of them within each of Regions regions of
/// RegionBytes (a GatherElements input's slab from its axis on, a GatherND
/// input read element by element). No such reads: Count is 0.
struct RandomReads {
  uint64_t Count = 0, ElemBytes = 0, RegionBytes = 0, Regions = 0;
};
RandomReads randomReadsOf(const BenchCase &C);
/// Nanoseconds for all of \p R's reads, each at a random place of its
/// region, their offsets streamed from memory as a kernel's indices are.
/// A kernel that reads nothing else, prefetches nothing and loads no
/// region ahead takes no less. \p Evict, where given, runs before each
/// timed batch, so the reads start from the caches a kernel's batch does.
double randomReadsNs(const RandomReads &R, const std::function<void()> &Evict = {});

struct SuiteOptions {
  /// Case names; empty means all.
  std::vector<std::string> Cases;
  /// Threads for the multi-threaded JIT rows; 0 means all cores.
  unsigned Threads = 0;
};

struct SuiteRow {
  std::string Case, Engine;
  unsigned Threads = 1;
  double MedianNs = 0, EffectiveGbps = 0, MemcpyGbps = 0;
};

struct SuiteReport {
  std::vector<SuiteRow> Rows;
  /// The single-thread memcpy line, timed with each case's engines: median,
  /// lowest and highest over the cases. Each row carries its case's.
  double MemcpyGbps = 0, MemcpyMinGbps = 0, MemcpyMaxGbps = 0;
  /// The same memcpy split across Threads threads.
  double MemcpyGbpsAllThreads = 0;
  /// Each case's random reads (randomReadsOf), where it has them, and
  /// their time alone.
  struct TimedReads {
    RandomReads Reads;
    double Ns = 0;
  };
  std::map<std::string, TimedReads> RandomReadsAlone;
  unsigned Threads = 1;
  /// Compile latency, medians: a new small GatherElements and Gather spec
  /// (the quick tier), the same at O2 without the quick tier (what an
  /// upgrade or a large kernel costs), a cache hit, and a kernel loaded from
  /// the persistent cache by a new runtime.
  double ColdGatherElementsMs = 0, ColdGatherMs = 0;
  double FullGatherElementsMs = 0, FullGatherMs = 0;
  double CacheHitNs = 0, DiskLoadMs = 0;
};

/// Runs the suite, reporting progress lines through \p Progress. Fails with
/// InvalidArgument for an unknown case name, or if an engine's output
/// differs from the interpreter's.
Expected<SuiteReport> runSuite(const SuiteOptions &Options,
                               const std::function<void(const std::string &)> &Progress);

} // namespace gatherjit::bench

#endif
