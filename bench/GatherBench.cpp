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

#include "Cases.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"
#include "runtime/GenericKernel.h"

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
    Expected<std::unique_ptr<Runtime>> Created = Runtime::create(O);
    if (!Created) {
      std::fprintf(stderr, "error: %s\n", Created.status().message().c_str());
      std::exit(1);
    }
    RT = Created.take();
  }
  return *RT;
}

/// A case's descriptor, buffers and reference output, built once.
struct Prepared {
  ValidDesc Desc;
  KernelSpec Spec;
  BenchData Data;
  std::vector<char> Reference;
};

Prepared &prepared(const BenchCase &C) {
  static std::map<std::string, std::unique_ptr<Prepared>> All;
  auto &P = All[C.Name];
  if (!P) {
    P = std::make_unique<Prepared>();
    Expected<ValidDesc> V = benchDesc(C);
    if (!V) {
      std::fprintf(stderr, "error: %s: %s\n", C.Name, V.status().message().c_str());
      std::exit(1);
    }
    P->Desc = V.take();
    P->Spec = canonicalize(P->Desc);
    P->Data = benchData(P->Desc);
    P->Reference.resize(P->Data.OutputBytes);
    if (!interpret(P->Desc, P->Data.Input.data(), P->Data.Indices.data(),
                   P->Reference.data())) {
      std::fprintf(stderr, "error: %s: the interpreter failed\n", C.Name);
      std::exit(1);
    }
  }
  return *P;
}

void setCounters(benchmark::State &State, const Prepared &P) {
  const double Bytes = 2.0 * P.Data.OutputBytes + P.Data.Indices.size();
  State.SetBytesProcessed(static_cast<int64_t>(Bytes * State.iterations()));
}

void runEngine(benchmark::State &State, const BenchCase &C, const std::string &Engine) {
  Prepared &P = prepared(C);
  std::vector<char> Out(P.Data.OutputBytes);
  const void *In = P.Data.Input.data(), *Idx = P.Data.Indices.data();
  Kernel K;
  if (Engine == "jit" || Engine == "jit_mt") {
    Expected<Kernel> Compiled = runtime(Engine == "jit" ? 1 : 0).compile(P.Desc);
    if (!Compiled) {
      State.SkipWithError(Compiled.status().message().c_str());
      return;
    }
    K = Compiled.take();
  }
  auto Call = [&]() -> bool {
    if (Engine == "interp")
      return interpret(P.Desc, In, Idx, Out.data()).isOk();
    if (Engine == "generic")
      return runGeneric(P.Spec, In, Idx, Out.data(), 0, P.Spec.rows()) == 0;
    return K.run(In, Idx, Out.data()).isOk();
  };
  if (!Call() || Out != P.Reference) {
    State.SkipWithError("output differs from the interpreter's");
    return;
  }
  for (auto _ : State) {
    bool Ok = Call();
    benchmark::DoNotOptimize(Ok);
    benchmark::ClobberMemory();
  }
  setCounters(State, P);
}

/// memcpy of the same number of output bytes: the bandwidth line.
void runMemcpy(benchmark::State &State, const BenchCase &C) {
  Prepared &P = prepared(C);
  std::vector<char> Src(P.Data.OutputBytes, 1), Dst(P.Data.OutputBytes);
  for (auto _ : State) {
    std::memcpy(Dst.data(), Src.data(), Src.size());
    benchmark::ClobberMemory();
  }
  State.SetBytesProcessed(static_cast<int64_t>(2.0 * Src.size() * State.iterations()));
}

/// Random 4-byte reads from a table as large as GE2's input: its floor.
void randomReadFloor(benchmark::State &State) {
  const uint64_t N = 4096ull * 4096;
  std::vector<float> Table(N, 1.0f);
  std::vector<uint32_t> Order(N);
  uint64_t X = 88172645463325252ull;
  for (uint32_t &O : Order) {
    X ^= X << 13, X ^= X >> 7, X ^= X << 17;
    O = static_cast<uint32_t>(X % N);
  }
  for (auto _ : State) {
    float Sum = 0;
    for (uint64_t I = 0; I < N; ++I)
      Sum += Table[Order[I]];
    benchmark::DoNotOptimize(Sum);
  }
  State.SetItemsProcessed(static_cast<int64_t>(N * State.iterations()));
}

GatherElementsDesc compileProbe(uint64_t AxisSize) {
  GatherElementsDesc D;
  D.Input.Type = D.Indices.Type = D.Output.Type = DataType::Float32;
  D.Indices.Type = DataType::Int64;
  D.Input.Sizes = {64, AxisSize};
  D.Indices.Sizes = D.Output.Sizes = {64, 16};
  D.Axis = 1;
  return D;
}

/// A cold compile: every iteration asks for a spec never seen before.
void compileCold(benchmark::State &State, OpKind Op) {
  RuntimeOptions O;
  O.Threads = 1;
  O.CacheCapacity = 1 << 20;
  auto RT = Runtime::create(O).take();
  uint64_t Fresh = 1000;
  for (auto _ : State) {
    Expected<Kernel> K = Status::internal("unset");
    if (Op == OpKind::GatherElements) {
      K = RT->compile(compileProbe(Fresh++));
    } else {
      GatherDesc D;
      D.Input.Type = D.Output.Type = DataType::Float32;
      D.Indices.Type = DataType::Int64;
      D.Input.Sizes = {Fresh++, 64};
      D.Indices.Sizes = {1, 32};
      D.Output.Sizes = {32, 64};
      D.Axis = 0;
      D.IndexDimensions = 1;
      K = RT->compile(D);
    }
    if (!K) {
      State.SkipWithError(K.status().message().c_str());
      return;
    }
  }
}

void compileHit(benchmark::State &State) {
  Runtime &RT = runtime(1);
  Expected<ValidDesc> V = validate(compileProbe(77));
  (void)RT.compile(*V);
  for (auto _ : State) {
    Expected<Kernel> K = RT.compile(*V);
    benchmark::DoNotOptimize(K);
  }
}

int registerAll() {
  for (const BenchCase &C : benchCases()) {
    const std::string Name = C.Name;
    const bool Tiny = Name == "GE5" || Name == "G4";
    for (const char *Engine : {"interp", "generic", "jit", "jit_mt"}) {
      auto *B = benchmark::RegisterBenchmark((Name + "/" + Engine).c_str(),
                                             [&C, E = std::string(Engine)](benchmark::State &S) {
                                               runEngine(S, C, E);
                                             });
      B->Unit(Tiny ? benchmark::kNanosecond : benchmark::kMillisecond)->UseRealTime();
      if (std::string(Engine) == "interp" && !Tiny)
        B->Iterations(2);
    }
    benchmark::RegisterBenchmark((Name + "/memcpy").c_str(),
                                 [&C](benchmark::State &S) { runMemcpy(S, C); })
        ->Unit(Tiny ? benchmark::kNanosecond : benchmark::kMillisecond)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("GE2/random_read_floor", randomReadFloor)
      ->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("compile/cold/gather_elements",
                               [](benchmark::State &S) { compileCold(S, OpKind::GatherElements); })
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("compile/cold/gather",
                               [](benchmark::State &S) { compileCold(S, OpKind::Gather); })
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("compile/hit", compileHit)->Unit(benchmark::kNanosecond);
  return 0;
}

const int Registered = registerAll();

} // namespace

BENCHMARK_MAIN();
