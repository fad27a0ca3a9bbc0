//===- bench/Shapes.cpp - Walks over shapes that change ------------------===//

#include "bench/Shapes.h"
#include "bench/Suite.h"

#include "compiler/spec/KernelSpec.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/gatherjit.h"
#include "runtime/GenericKernel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <vector>

namespace gatherjit::bench {
namespace {

using Clock = std::chrono::steady_clock;
double usSince(Clock::time_point T0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - T0).count();
}

struct Shape {
  gj_descriptor Desc;
  ValidDesc Valid; ///< What the interpreter checks against.
  KernelSpec Spec; ///< What the generic loop is given.
};

struct Walk {
  std::string Name;
  std::vector<Shape> Shapes;
  unsigned Calls = 0;
  std::vector<char> Input, Indices, Output;
};

TensorDesc packed(DataType Type, std::vector<uint64_t> Sizes) {
  TensorDesc T;
  T.Type = Type;
  T.Sizes = std::move(Sizes);
  return T;
}

/// Indices valid for every shape of the walk: uniform in [0, Bound).
std::vector<char> indicesBelow(uint64_t Count, uint64_t Bound) {
  std::mt19937_64 Rng(7);
  std::vector<int64_t> Idx(Count);
  for (int64_t &I : Idx)
    I = static_cast<int64_t>(Rng() % Bound);
  std::vector<char> Bytes(Count * 8);
  std::copy_n(reinterpret_cast<const char *>(Idx.data()), Bytes.size(), Bytes.data());
  return Bytes;
}

/// GatherElements FLOAT32 [L, Cols] by INT64 [L, IdxCols], axis 1.
Walk gatherElementsWalk(const std::string &Name, uint64_t First, uint64_t Last, uint64_t Step,
                        uint64_t Cols, uint64_t IdxCols, unsigned Calls) {
  Walk W{Name, {}, Calls, {}, {}, {}};
  for (uint64_t L = First; L <= Last; L += Step) {
    const uint64_t D[2] = {L, Cols}, I[2] = {L, IdxCols};
    gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 2, D), Idx = gj_tensor(GJ_INT64, 2, I);
    Shape S;
    if (gj_onnx_gather_elements(&Data, &Idx, 1, &S.Desc) != GJ_OK)
      continue;
    S.Desc.allow_smaller_indices = 1;
    ValidateOptions O;
    O.AllowSmallerIndices = true;
    Expected<ValidDesc> V = validate(GatherElementsDesc{packed(DataType::Float32, {L, Cols}),
                                                        packed(DataType::Int64, {L, IdxCols}),
                                                        packed(DataType::Float32, {L, IdxCols}), 1},
                                     O);
    if (!V)
      continue;
    S.Valid = *V;
    S.Spec = canonicalize(*V);
    W.Shapes.push_back(S);
  }
  W.Input.assign(Last * Cols * 4, 1);
  W.Indices = indicesBelow(Last * IdxCols, Cols);
  W.Output.assign(Last * IdxCols * 4, 0);
  return W;
}

/// An embedding lookup: Gather FLOAT32 [Rows, Width] by B INT64 ids, axis 0.
Walk embeddingWalk(const std::string &Name, uint64_t Rows, uint64_t Width, uint64_t MaxIds,
                   unsigned Calls) {
  Walk W{Name, {}, Calls, {}, {}, {}};
  for (uint64_t B = 1; B <= MaxIds; ++B) {
    const uint64_t D[2] = {Rows, Width}, I[1] = {B};
    gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 2, D), Idx = gj_tensor(GJ_INT64, 1, I);
    Shape S;
    if (gj_onnx_gather(&Data, &Idx, 0, &S.Desc) != GJ_OK)
      continue;
    Expected<GatherDesc> G =
        onnxGather(packed(DataType::Float32, {Rows, Width}), packed(DataType::Int64, {B}), 0);
    Expected<ValidDesc> V = G ? validate(*G) : Expected<ValidDesc>(G.status());
    if (!V)
      continue;
    S.Valid = *V;
    S.Spec = canonicalize(*V);
    W.Shapes.push_back(S);
  }
  W.Input.assign(Rows * Width * 4, 1);
  W.Indices = indicesBelow(MaxIds, Rows);
  W.Output.assign(MaxIds * Width * 4, 0);
  return W;
}

struct WalkTimes {
  double TotalUs = 0;
  double MedianCompileUs = 0;  ///< gj_compile, the median shape.
  double P99CompileUs = 0;     ///< gj_compile, the 99th percentile (a shared
                               ///< machine's preemptions reach the maximum).
  double MaxFirstCallUs = 0;   ///< gj_compile + the first run, worst shape.
  double MaxCompileUs = 0;     ///< gj_compile alone, worst shape.
  double MaxOverGenericUs = 0; ///< First call less the generic loop's call.
  unsigned OverBudget = 0;     ///< Shapes whose first call exceeds that by 20 us.
};

/// A new shape's first call may cost its generic run and this much more
/// (validation, key, lookup): the shapes issue's budget.
constexpr double FirstCallBudgetUs = 20;

/// The walk through \p RT: per shape gj_compile (a miss or a hit), then
/// the calls. \p GenericUs: the generic loop's time per shape, to compare
/// first calls with.
WalkTimes walkRuntime(gj_runtime *RT, Walk &W, const std::vector<double> &GenericUs) {
  WalkTimes T;
  std::vector<double> Compiles;
  const Clock::time_point Start = Clock::now();
  for (size_t I = 0; I < W.Shapes.size(); ++I) {
    const Clock::time_point T0 = Clock::now();
    gj_kernel *K = nullptr;
    if (gj_compile(RT, &W.Shapes[I].Desc, &K) != GJ_OK) {
      std::fprintf(stderr, "bench: %s\n", gj_last_error());
      return T;
    }
    const double CompileUs = usSince(T0);
    Compiles.push_back(CompileUs);
    for (unsigned C = 0; C < W.Calls; ++C) {
      (void)gj_kernel_run(K, W.Input.data(), W.Indices.data(), W.Output.data());
      if (C == 0) {
        const double First = usSince(T0);
        T.MaxFirstCallUs = std::max(T.MaxFirstCallUs, First);
        T.MaxCompileUs = std::max(T.MaxCompileUs, CompileUs);
        if (!GenericUs.empty()) {
          T.MaxOverGenericUs = std::max(T.MaxOverGenericUs, First - GenericUs[I]);
          T.OverBudget += First - GenericUs[I] > FirstCallBudgetUs;
        }
      }
    }
    gj_kernel_release(K);
  }
  T.TotalUs = usSince(Start);
  std::sort(Compiles.begin(), Compiles.end());
  T.MedianCompileUs = Compiles.empty() ? 0 : Compiles[Compiles.size() / 2];
  T.P99CompileUs = Compiles.empty() ? 0 : Compiles[Compiles.size() * 99 / 100];
  return T;
}

/// The walk through the generic loop alone, compiled ahead; \p PerShapeUs
/// gets each shape's first call.
double walkGeneric(Walk &W, std::vector<double> *PerShapeUs) {
  const Clock::time_point Start = Clock::now();
  for (const Shape &S : W.Shapes)
    for (unsigned C = 0; C < W.Calls; ++C) {
      const Clock::time_point T0 = Clock::now();
      (void)runGeneric(S.Spec, W.Input.data(), W.Indices.data(), W.Output.data(), 0, S.Spec.rows());
      if (C == 0 && PerShapeUs)
        PerShapeUs->push_back(usSince(T0));
    }
  return usSince(Start);
}

gj_runtime *newRuntime(gj_specialize Mode) {
  gj_runtime_options O;
  gj_runtime_options_init(&O);
  O.threads = 1;
  O.specialize = Mode;
  gj_runtime *RT = nullptr;
  return gj_runtime_create(&O, &RT) == GJ_OK ? RT : nullptr;
}

uint64_t residentBytes() {
  std::FILE *F = std::fopen("/proc/self/statm", "r");
  unsigned long long Pages = 0, Resident = 0;
  if (F) {
    if (std::fscanf(F, "%llu %llu", &Pages, &Resident) != 2)
      Resident = 0;
    std::fclose(F);
  }
  return Resident * 4096;
}

/// 100,000 distinct GatherElements shapes through one runtime with default
/// options, one call each: resident memory as the walk goes.
std::string memoryWalk() {
  constexpr uint64_t MaxRows = 997, MaxCols = 101;
  std::vector<float> In(MaxRows * MaxCols), Out(MaxRows * MaxCols);
  std::vector<int64_t> Idx(MaxRows * MaxCols, 0);
  gj_runtime *RT = newRuntime(GJ_SPECIALIZE_ADAPTIVE);
  if (!RT)
    return "";
  std::ostringstream M;
  M << "\nMemory: 100,000 distinct shapes (GatherElements FLOAT32 [1 + N % 997, 1 + N / 997], "
       "one call each) through one runtime with default options; resident memory after ";
  const uint64_t Before = residentBytes();
  for (uint64_t N = 0; N < 100000; ++N) {
    const uint64_t Sizes[2] = {1 + N % MaxRows, 1 + N / MaxRows};
    gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 2, Sizes), Index = gj_tensor(GJ_INT64, 2, Sizes);
    gj_descriptor D;
    gj_kernel *K = nullptr;
    if (gj_onnx_gather_elements(&Data, &Index, 1, &D) != GJ_OK || gj_compile(RT, &D, &K) != GJ_OK)
      break;
    (void)gj_kernel_run(K, In.data(), Idx.data(), Out.data());
    gj_kernel_release(K);
    if (N + 1 == 1000 || N + 1 == 10000 || N + 1 == 50000 || N + 1 == 100000) {
      char B[96];
      std::snprintf(B, sizeof B, "%s%llu shapes: %+.1f MiB", N + 1 == 1000 ? "" : ", ",
                    static_cast<unsigned long long>(N + 1),
                    (static_cast<double>(residentBytes()) - static_cast<double>(Before)) /
                        (1 << 20));
      M << B;
    }
  }
  gj_cache_stats S;
  gj_runtime_stats(RT, &S);
  M << " (from " << Before / (1 << 20) << " MiB before the walk); the cache then holds "
    << S.entries << " entries, " << S.cache_bytes / (1 << 20) << " MiB charged, " << S.evictions
    << " evicted.\n";
  gj_runtime_destroy(RT);
  return M.str();
}

/// True if every 50th shape of \p W gives the interpreter's bytes through
/// a runtime in \p Mode and through the generic loop (before any timing).
bool walkAgrees(Walk &W, gj_specialize Mode) {
  gj_runtime *RT = newRuntime(Mode);
  if (!RT)
    return false;
  bool Same = true;
  for (size_t I = 0; I < W.Shapes.size() && Same; I += 50) {
    const Shape &S = W.Shapes[I];
    const size_t Bytes = S.Spec.outputBytes();
    std::vector<char> Ref(Bytes), Got(Bytes, 1), Loop(Bytes, 2);
    gj_kernel *K = nullptr;
    Same =
        interpret(S.Valid, W.Input.data(), W.Indices.data(), Ref.data()) &&
        gj_compile(RT, &S.Desc, &K) == GJ_OK &&
        gj_kernel_run(K, W.Input.data(), W.Indices.data(), Got.data()) == GJ_OK &&
        runGeneric(S.Spec, W.Input.data(), W.Indices.data(), Loop.data(), 0, S.Spec.rows()) == 0 &&
        Ref == Got && Ref == Loop;
    gj_kernel_release(K);
  }
  gj_runtime_destroy(RT);
  return Same;
}

double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  return V.empty() ? 0 : V[V.size() / 2];
}

std::string fmtMs(double Us) {
  char B[32];
  std::snprintf(B, sizeof B, "%.1f ms", Us / 1000);
  return B;
}
std::string fmtX(double X) {
  char B[32];
  std::snprintf(B, sizeof B, "%.2fx", X);
  return B;
}
std::string fmtUs(double Us) {
  char B[32];
  std::snprintf(B, sizeof B, "%.1f us", Us);
  return B;
}

} // namespace

std::string runShapeWalks(unsigned Rounds) {
  std::vector<Walk> Walks;
  Walks.push_back(gatherElementsWalk("(a) GatherElements FLOAT32 [L, 64] by INT64 [L, 16], axis 1, "
                                     "L = 8..1007",
                                     8, 1007, 1, 64, 16, 6));
  Walks.push_back(embeddingWalk("(b) embedding rows: FLOAT32 [50000, 256] by B INT64 ids, "
                                "B = 1..1000",
                                50000, 256, 1000, 6));
  Walks.push_back(gatherElementsWalk("(c) GatherElements FLOAT32 [L, 1024] by INT64 [L, 1024], "
                                     "axis 1, L = 64..4096 step 64",
                                     64, 4096, 64, 1024, 1024, 3));
  std::ostringstream M;
  M << "| walk | shapes x calls | generic loop | never specialize | / generic | first walk | "
       "/ generic | second walk | / generic "
       "| specialized ahead | / generic | new shape's gj_compile, median | 99th percentile | "
       "worst new shape: gj_compile | first call | over the generic call | shapes over it "
       "+ 20 us | never specialize: worst over the generic call | shapes over it + 20 us |\n"
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (Walk &W : Walks) {
    std::fprintf(stderr, "bench: %s\n", W.Name.c_str());
    if (!walkAgrees(W, GJ_SPECIALIZE_ADAPTIVE) || !walkAgrees(W, GJ_SPECIALIZE_COMPILE)) {
      M << "| " << W.Name << " | results differ from the interpreter's: not timed |\n";
      continue;
    }
    std::vector<double> Generic, Never, First, Second, Ahead, Compile, MedianCompile, P99Compile,
        FirstCall, Over, OverBudget, NeverOver, NeverOverBudget;
    for (unsigned R = 0; R < Rounds; ++R) {
      std::vector<double> PerShape;
      Generic.push_back(walkGeneric(W, &PerShape));
      // A fresh runtime: every shape new; then again once the background
      // thread has specialized what became hot.
      gj_runtime *Generic0 = newRuntime(GJ_SPECIALIZE_NEVER);
      if (!Generic0)
        return "bench: cannot create a runtime\n";
      const WalkTimes N = walkRuntime(Generic0, W, PerShape);
      Never.push_back(N.TotalUs);
      NeverOver.push_back(N.MaxOverGenericUs);
      NeverOverBudget.push_back(N.OverBudget);
      gj_runtime_destroy(Generic0);
      gj_runtime *RT = newRuntime(GJ_SPECIALIZE_ADAPTIVE);
      if (!RT)
        return "bench: cannot create a runtime\n";
      WalkTimes T = walkRuntime(RT, W, PerShape);
      First.push_back(T.TotalUs);
      MedianCompile.push_back(T.MedianCompileUs);
      P99Compile.push_back(T.P99CompileUs);
      Compile.push_back(T.MaxCompileUs);
      FirstCall.push_back(T.MaxFirstCallUs);
      Over.push_back(T.MaxOverGenericUs);
      OverBudget.push_back(T.OverBudget);
      gj_runtime_wait_background(RT);
      Second.push_back(walkRuntime(RT, W, {}).TotalUs);
      gj_runtime_destroy(RT);
      // Every shape specialized before the walk (its compiles not timed).
      gj_runtime *Spec = newRuntime(GJ_SPECIALIZE_COMPILE);
      (void)walkRuntime(Spec, W, {});
      gj_runtime_wait_background(Spec); // The quick tier's upgrades to O2.
      Ahead.push_back(walkRuntime(Spec, W, {}).TotalUs);
      gj_runtime_destroy(Spec);
    }
    const double G = median(Generic);
    M << "| " << W.Name << " | " << W.Shapes.size() << " x " << W.Calls << " | " << fmtMs(G)
      << " | " << fmtMs(median(Never)) << " | " << fmtX(median(Never) / G) << " | "
      << fmtMs(median(First)) << " | " << fmtX(median(First) / G) << " | " << fmtMs(median(Second))
      << " | " << fmtX(median(Second) / G) << " | " << fmtMs(median(Ahead)) << " | "
      << fmtX(median(Ahead) / G) << " | " << fmtUs(median(MedianCompile)) << " | "
      << fmtUs(median(P99Compile)) << " | " << fmtUs(median(Compile)) << " | "
      << fmtUs(median(FirstCall)) << " | " << fmtUs(median(Over)) << " | " << median(OverBudget)
      << " | " << fmtUs(median(NeverOver)) << " | " << median(NeverOverBudget) << " |\n";
  }
  M << "\n"
    << machineName()
    << ". In-process through the C API, one runtime with default options (adaptive) and one "
       "thread, no disk cache; medians of "
    << Rounds
    << " rounds; every 50th shape checked against the interpreter first. First walk: a fresh "
       "runtime, every shape new. Second walk: the same runtime "
       "after gj_runtime_wait_background. Never specialize: a fresh runtime with "
       "GJ_SPECIALIZE_NEVER (the generic loop through the runtime, no background compiles). "
       "Generic loop: runtime/GenericKernel.cpp called "
       "directly, compiled ahead, no runtime. Specialized ahead: every shape compiled (not "
       "timed) before the walk. Each shape is gj_compile, its calls, gj_kernel_release. "
       "Worst new shape: the largest gj_compile, gj_compile + first run, and that less the "
       "generic loop's first call of the same shape; shapes over it + 20 us: how many new "
       "shapes' first calls cost more than their generic call and 20 us. The never-specialize "
       "walk, which compiles nothing in any thread, gives the same two figures: what this "
       "machine's preemptions alone cost a walk.\n";
  std::fprintf(stderr, "bench: 100,000 distinct shapes\n");
  M << memoryWalk();
  return M.str();
}

} // namespace gatherjit::bench
