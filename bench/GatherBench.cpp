//===- bench/GatherBench.cpp - Specialized vs generic vs interpreter -----===//
//
// Every case of bench/Cases.h in every engine, next to a memcpy of the same
// bytes measured in the same run: <case>/interp, /generic, /jit, /jit_mt,
// /memcpy. Outputs are checked equal to the interpreter's before timing;
// only the kernel call is inside the timing loop. Counters:
// bytes_per_second = (2 x output bytes + index bytes) per call.
// Compile latency: compile/cold/<op> (a new spec per iteration) and
// compile/hit (an equal spec from the cache).
//
//===----------------------------------------------------------------------===//

#include "Suite.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

using namespace gatherjit;
using namespace gatherjit::bench;

namespace {

Runtime &runtime(unsigned Threads) {
  static std::map<unsigned, std::unique_ptr<Runtime>> Runtimes;
  auto &RT = Runtimes[Threads];
  if (!RT) {
    RuntimeOptions O;
    O.Threads = Threads;
    O.QuickTier = false; // Steady state: small kernels at O2 from the start.
    O.Specialization = Specialize::AtCompile;
    Expected<std::unique_ptr<Runtime>> Created = Runtime::create(O);
    if (!Created) {
      std::fprintf(stderr, "error: %s\n", Created.status().message().c_str());
      std::exit(1);
    }
    RT = Created.take();
  }
  return *RT;
}

/// Each case's descriptor, buffers and reference output, built once.
PreparedCase &prepared(const BenchCase &C) {
  static std::map<std::string, std::unique_ptr<PreparedCase>> All;
  auto &P = All[C.Name];
  if (!P) {
    Expected<PreparedCase> Made = prepareCase(C);
    if (!Made) {
      std::fprintf(stderr, "error: %s\n", Made.status().message().c_str());
      std::exit(1);
    }
    P = std::make_unique<PreparedCase>(Made.take());
  }
  return *P;
}

void runEngine(benchmark::State &State, const BenchCase &C, Engine E, unsigned Threads) {
  PreparedCase &P = prepared(C);
  Buffer Out(P.Data.OutputBytes);
  Kernel K;
  if (E == Engine::Jit) {
    Expected<Kernel> Compiled = runtime(Threads).compile(P.Desc);
    if (!Compiled) {
      State.SkipWithError(Compiled.status().message().c_str());
      return;
    }
    K = Compiled.take();
  }
  if (!runOnce(P, E, K, Out.data()) || Out != P.Reference) {
    State.SkipWithError("output differs from the interpreter's");
    return;
  }
  for (auto _ : State) {
    bool Ok = runOnce(P, E, K, Out.data());
    benchmark::DoNotOptimize(Ok);
    benchmark::ClobberMemory();
  }
  State.SetBytesProcessed(static_cast<int64_t>(P.movedBytes() * State.iterations()));
}

/// memcpy of the same number of output bytes: the bandwidth line.
void runMemcpy(benchmark::State &State, const BenchCase &C) {
  PreparedCase &P = prepared(C);
  std::vector<char> Src(P.Data.OutputBytes, 1), Dst(P.Data.OutputBytes);
  for (auto _ : State) {
    std::memcpy(Dst.data(), Src.data(), Src.size());
    benchmark::ClobberMemory();
  }
  State.SetBytesProcessed(static_cast<int64_t>(2.0 * Src.size() * State.iterations()));
}

/// A case's random reads alone (randomReadsOf).
void randomReadFloor(benchmark::State &State, const RandomReads &Reads) {
  for (auto _ : State)
    State.SetIterationTime(randomReadsNs(Reads) * 1e-9);
}

/// A cold compile: every iteration asks for a spec never seen before.
/// The probes are small: at the quick tier unless \p QuickTier is off.
void compileCold(benchmark::State &State, OpKind Op, bool QuickTier) {
  RuntimeOptions O;
  O.Threads = 1;
  O.Specialization = Specialize::AtCompile;
  O.QuickTier = QuickTier;
  O.CacheCapacity = 1 << 20;
  auto RT = Runtime::create(O).take();
  uint64_t Fresh = 1000;
  for (auto _ : State) {
    Expected<Kernel> K = Status::internal("unset");
    if (Op == OpKind::GatherElements)
      K = RT->compile(probeGatherElements(Fresh++));
    else
      K = RT->compile(probeGather(Fresh++));
    if (!K) {
      State.SkipWithError(K.status().message().c_str());
      return;
    }
  }
}

void compileHit(benchmark::State &State) {
  Runtime &RT = runtime(1);
  Expected<ValidDesc> V = validate(probeGatherElements(77));
  (void)RT.compile(*V);
  for (auto _ : State) {
    Expected<Kernel> K = RT.compile(*V);
    benchmark::DoNotOptimize(K);
  }
}

/// A new shape of a row family whose kernel is compiled (walk (a) of
/// `gatherjit bench --shapes` once its family is ready): validation, the
/// key, the cache's miss and binding the family's kernel, nothing compiled.
/// The rows cycle through 10..4009 in a cache of 1024 entries, so that each
/// shape is new (evicted since it was last asked for) and the cache is a
/// walk's size.
void compileNewRows(benchmark::State &State) {
  RuntimeOptions O;
  O.Threads = 1;
  O.CacheCapacity = 1024; // A walk's working set of shapes.
  auto RT = Runtime::create(O).take();
  auto Desc = [](uint64_t Rows) {
    TensorDesc Data, Idx, Out;
    Data.Sizes = {Rows, 64};
    Idx.Sizes = Out.Sizes = {Rows, 16};
    Idx.Type = DataType::Int64;
    return GatherElementsDesc{Data, Idx, Out, 1};
  };
  for (uint64_t Rows : {8, 9}) // The second shape queues the family's compile.
    (void)RT->compile(Desc(Rows));
  RT->drainBackground();
  uint64_t Rows = 0;
  for (auto _ : State) {
    Expected<Kernel> K = RT->compile(Desc(10 + Rows++ % 4000));
    if (!K || K->tier() != KernelTier::Family) {
      State.SkipWithError("not the row family's kernel");
      return;
    }
  }
}

int registerAll() {
  for (const BenchCase &C : benchCases()) {
    const std::string Name = C.Name;
    const bool Tiny = Name == "GE5" || Name == "G4";
    struct Variant {
      const char *Name;
      Engine E;
      unsigned Threads;
    };
    for (const Variant &V :
         {Variant{"interp", Engine::Interp, 1}, Variant{"generic", Engine::Generic, 1},
          Variant{"jit", Engine::Jit, 1}, Variant{"jit_mt", Engine::Jit, 0}}) {
      auto *B =
          benchmark::RegisterBenchmark((Name + "/" + V.Name).c_str(), [&C, V](benchmark::State &S) {
            runEngine(S, C, V.E, V.Threads);
          });
      B->Unit(Tiny ? benchmark::kNanosecond : benchmark::kMillisecond)->UseRealTime();
      if (V.E == Engine::Interp && !Tiny)
        B->Iterations(2);
    }
    benchmark::RegisterBenchmark((Name + "/memcpy").c_str(),
                                 [&C](benchmark::State &S) { runMemcpy(S, C); })
        ->Unit(Tiny ? benchmark::kNanosecond : benchmark::kMillisecond)
        ->UseRealTime();
    if (const RandomReads Reads = randomReadsOf(C); Reads.Count)
      benchmark::RegisterBenchmark((Name + "/random_reads").c_str(),
                                   [Reads](benchmark::State &S) { randomReadFloor(S, Reads); })
          ->Unit(benchmark::kMillisecond)
          ->UseManualTime()
          ->Iterations(1);
  }
  for (bool Quick : {true, false})
    for (OpKind Op : {OpKind::GatherElements, OpKind::Gather}) {
      const std::string Name = std::string(Quick ? "compile/cold/" : "compile/cold_o2/") +
                               (Op == OpKind::GatherElements ? "gather_elements" : "gather");
      benchmark::RegisterBenchmark(Name.c_str(), [Op, Quick](benchmark::State &S) {
        compileCold(S, Op, Quick);
      })->Unit(benchmark::kMillisecond);
    }
  benchmark::RegisterBenchmark("compile/hit", compileHit)->Unit(benchmark::kNanosecond);
  benchmark::RegisterBenchmark("compile/new_rows", compileNewRows)->Unit(benchmark::kNanosecond);
  return 0;
}

const int Registered = registerAll();

} // namespace

BENCHMARK_MAIN();
