//===- tools/gatherjit/Demo.cpp - The README's main job ------------------===//

#include "Demo.h"

#include "SeedExamples.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

namespace gatherjit {
namespace {

template <typename Fn> double medianMs(int Runs, Fn &&F) {
  std::vector<double> Ms;
  for (int I = 0; I < Runs; ++I) {
    auto T0 = std::chrono::steady_clock::now();
    F();
    Ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - T0).count());
  }
  std::sort(Ms.begin(), Ms.end());
  return Ms[Ms.size() / 2];
}

} // namespace

int runDemo() {
  RuntimeOptions Options;
  Options.Threads = 1;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  if (!RT) {
    std::fprintf(stderr, "error: %s\n", RT.status().message().c_str());
    return 1;
  }
  std::printf("(1) The seed documents' examples, JIT-compiled, checked against the "
              "document and the interpreter\n\n");
  std::printf("%-34s %-9s %-7s %-7s %-9s %s\n", "example", "output", "doc", "interp", "compile",
              "note");
  int Failures = 0;
  for (const SeedExample &E : seedExamples()) {
    bool DocOk = false, InterpOk = false;
    double CompileMs = 0;
    std::string Note = E.Note;
    if (!E.Desc) {
      Note = E.Desc.status().message();
    } else if (Expected<Kernel> K = (*RT)->compile(*E.Desc); !K) {
      Note = K.status().message();
    } else {
      std::vector<float> Jit(E.ExpectedOutput.size()), Ref(E.ExpectedOutput.size());
      std::vector<char> Idx = E.indexBytes();
      Status JS = K->run(E.Input.data(), Idx.data(), Jit.data());
      Status IS = interpret(*E.Desc, E.Input.data(), Idx.data(), Ref.data());
      DocOk = JS && Jit == E.ExpectedOutput;
      InterpOk = JS && IS && Jit == Ref;
      CompileMs = K->compileTimes().total();
    }
    Failures += !(DocOk && InterpOk);
    std::printf("%-34s %-9s %-7s %-7s %6.2f ms %s\n", E.Name.c_str(),
                shapeString(E.ExpectedShape).c_str(), DocOk ? "ok" : "FAIL",
                InterpOk ? "ok" : "FAIL", CompileMs, Note.c_str());
  }

  // (2) One large case: GatherElements FLOAT32 [4096,4096], INT64 indices,
  // axis 1, Check, on one thread.
  const uint64_t N = 4096;
  std::printf("\n(2) GatherElements FLOAT32 [%llu,%llu], INT64 indices, axis 1, "
              "one thread\n\n",
              static_cast<unsigned long long>(N), static_cast<unsigned long long>(N));
  GatherElementsDesc D;
  D.Input.Type = D.Output.Type = DataType::Float32;
  D.Indices.Type = DataType::Int64;
  D.Input.Sizes = D.Indices.Sizes = D.Output.Sizes = {N, N};
  D.Axis = 1;
  Expected<ValidDesc> V = validate(D);
  Expected<Kernel> K = V ? (*RT)->compile(*V) : Expected<Kernel>(V.status());
  if (!K) {
    std::fprintf(stderr, "error: %s\n", K.status().message().c_str());
    return 1;
  }
  std::vector<float> In(N * N), Jit(N * N), Ref(N * N);
  std::vector<int64_t> Idx(N * N);
  std::mt19937_64 Rng(42);
  for (uint64_t I = 0; I < N * N; ++I) {
    In[I] = static_cast<float>(I);
    Idx[I] = static_cast<int64_t>(Rng() % N);
  }
  const double InterpMs =
      medianMs(3, [&] { (void)interpret(*V, In.data(), Idx.data(), Ref.data()); });
  const double JitMs = medianMs(7, [&] { (void)K->run(In.data(), Idx.data(), Jit.data()); });
  const bool Same = Jit == Ref;
  Failures += !Same;
  const double GB = (2.0 * N * N * 4 + N * N * 8) / 1e9;
  std::printf("%-12s %12s %10s\n", "engine", "median ms", "GB/s");
  std::printf("%-12s %12.2f %10.2f\n", "interpreter", InterpMs, GB / (InterpMs / 1e3));
  std::printf("%-12s %12.2f %10.2f\n", "jit", JitMs, GB / (JitMs / 1e3));
  std::printf("\njit / interpreter speedup: %.1fx; outputs %s; compile %.2f ms\n", InterpMs / JitMs,
              Same ? "identical" : "DIFFER", K->compileTimes().total());
  return Failures ? 1 : 0;
}

} // namespace gatherjit
