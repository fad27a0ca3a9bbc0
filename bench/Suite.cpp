//===- bench/Suite.cpp - The benchmark suite as a library ----------------===//

#include "Suite.h"

#include "gatherjit/Interpreter.h"
#include "runtime/GenericKernel.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace gatherjit::bench {

Expected<PreparedCase> prepareCase(const BenchCase &C) {
  Expected<ValidDesc> V = benchDesc(C);
  if (!V)
    return V.status().withContext(C.Name);
  PreparedCase P;
  P.Case = &C;
  P.Desc = V.take();
  P.Spec = canonicalize(P.Desc);
  P.Data = benchData(P.Desc);
  P.Reference.resize(P.Data.OutputBytes);
  if (Status S = interpret(P.Desc, P.Data.Input.data(), P.Data.Indices.data(), P.Reference.data());
      !S)
    return S.withContext(C.Name);
  return P;
}

const char *engineName(Engine E) {
  switch (E) {
  case Engine::Interp:
    return "interp";
  case Engine::Generic:
    return "generic";
  case Engine::Jit:
    return "jit";
  }
  return "?";
}

bool runOnce(const PreparedCase &P, Engine E, const Kernel &K, void *Out) {
  const void *In = P.Data.Input.data(), *Idx = P.Data.Indices.data();
  switch (E) {
  case Engine::Interp:
    return interpret(P.Desc, In, Idx, Out).isOk();
  case Engine::Generic:
    return runGeneric(P.Spec, In, Idx, Out, 0, P.Spec.rows()) == 0;
  case Engine::Jit:
    return K.run(In, Idx, Out).isOk();
  }
  return false;
}

namespace {

double median(std::vector<double> V) {
  std::sort(V.begin(), V.end());
  const size_t N = V.size();
  return N == 0 ? 0 : N % 2 ? V[N / 2] : (V[N / 2 - 1] + V[N / 2]) / 2;
}

/// One memcpy the compiler cannot drop (the destination is never read).
void copyOnce(char *Dst, const char *Src, size_t Bytes) {
  std::memcpy(Dst, Src, Bytes);
  asm volatile("" : : "r"(Dst) : "memory");
}

} // namespace

std::vector<double> interleavedMedianNs(const std::vector<std::function<void(uint64_t)>> &Calls,
                                        double MinSeconds, const std::function<void()> &Evict) {
  using Clock = std::chrono::steady_clock;
  auto Seconds = [](Clock::duration D) { return std::chrono::duration<double>(D).count(); };
  const size_t N = Calls.size();
  std::vector<uint64_t> Batch(N);
  double Slowest = 0;
  for (size_t C = 0; C < N; ++C) {
    Calls[C](1); // Warm up: page faults, caches, lazy binding.
    Clock::time_point T0 = Clock::now();
    Calls[C](1);
    const double One = Seconds(Clock::now() - T0);
    // A millisecond per batch: the clock's cost, and the cold caches an
    // eviction leaves behind, spread over many calls.
    Batch[C] = One >= 1e-3 ? 1 : static_cast<uint64_t>(1e-3 / std::max(One, 1e-9)) + 1;
    Slowest = std::max(Slowest, One);
  }
  const size_t MinRounds = Slowest > 0.1 ? 3 : 7, MaxRounds = 200;
  std::vector<std::vector<double>> Samples(N);
  const Clock::time_point Start = Clock::now();
  for (size_t Round = 0;
       Round < MinRounds || (Seconds(Clock::now() - Start) < MinSeconds * N && Round < MaxRounds);
       ++Round)
    for (size_t C = 0; C < N; ++C) {
      if (Evict)
        Evict();
      const Clock::time_point T0 = Clock::now();
      Calls[C](Batch[C]);
      Samples[C].push_back(Seconds(Clock::now() - T0) * 1e9 / static_cast<double>(Batch[C]));
    }
  std::vector<double> Medians;
  for (std::vector<double> &S : Samples)
    Medians.push_back(median(std::move(S)));
  return Medians;
}

std::string machineName() {
  std::ifstream In("/proc/cpuinfo");
  std::string Line, Name, Family, Model;
  while (std::getline(In, Line) && !Line.empty()) { // The first CPU's lines.
    const size_t Colon = Line.find(':');
    if (Colon == std::string::npos || Colon + 2 > Line.size())
      continue;
    const std::string Value = Line.substr(Colon + 2);
    if (Line.rfind("model name", 0) == 0)
      Name = Value;
    else if (Line.rfind("cpu family", 0) == 0)
      Family = Value;
    else if (Line.rfind("model\t", 0) == 0)
      Model = Value;
  }
  if (Name.empty())
    Name = "unknown CPU";
  else if (!Family.empty() && !Model.empty())
    Name += " (family " + Family + ", model " + Model + ")";
  return Name + ", " + std::to_string(::sysconf(_SC_NPROCESSORS_ONLN)) + " cores";
}

double memcpyGbps(unsigned Threads) {
  const size_t Bytes = size_t(256) << 20;
  std::vector<char> Src(Bytes, 1), Dst(Bytes, 2);
  auto Copy = [&](unsigned Part) {
    const size_t Begin = Bytes * Part / Threads, End = Bytes * (Part + 1) / Threads;
    copyOnce(Dst.data() + Begin, Src.data() + Begin, End - Begin);
  };
  const double Ns = medianNs([&] {
    if (Threads == 1)
      return Copy(0);
    std::vector<std::thread> Workers;
    for (unsigned P = 1; P < Threads; ++P)
      Workers.emplace_back(Copy, P);
    Copy(0);
    for (std::thread &W : Workers)
      W.join();
  });
  return 2.0 * Bytes / Ns;
}

RandomReads randomReadsOf(const BenchCase &C) {
  // Smaller regions stay in the core's nearest caches: their reads are not
  // what bounds a gather.
  constexpr uint64_t MinRegionBytes = 1u << 20;
  const uint64_t Elem = benchTensor(C.Data, C.DataShape).elementBytes();
  const auto Product = [](auto First, auto Last) {
    uint64_t P = 1;
    for (; First != Last; ++First)
      P *= *First;
    return P;
  };
  const std::vector<uint64_t> &D = C.DataShape, &I = C.IndexShape;
  RandomReads R;
  R.ElemBytes = Elem;
  if (C.Op == OpKind::GatherElements) {
    R.Count = Product(I.begin(), I.end());
    R.Regions = Product(D.begin(), D.begin() + C.Axis);
    R.RegionBytes = Product(D.begin() + C.Axis, D.end()) * Elem;
  } else if (C.Op == OpKind::GatherND && C.Axis == 0 && !I.empty() && I.back() == D.size()) {
    // Each tuple addresses one element of the whole input.
    R.Count = Product(I.begin(), I.end() - 1);
    R.Regions = 1;
    R.RegionBytes = Product(D.begin(), D.end()) * Elem;
  }
  if (R.RegionBytes < MinRegionBytes || R.Regions == 0 || R.Count % R.Regions)
    return {};
  return R;
}

namespace {

template <typename T>
double randomReadsNs(const RandomReads &R, const std::function<void()> &Evict) {
  const uint64_t RegionElements = R.RegionBytes / sizeof(T), PerRegion = R.Count / R.Regions;
  std::vector<T, NumpyLikeAllocator<T>> Table(R.Regions * RegionElements, T(1));
  std::vector<uint32_t, NumpyLikeAllocator<uint32_t>> Offsets(R.Count);
  uint64_t X = 88172645463325252ull;
  for (uint32_t &O : Offsets) {
    X ^= X << 13, X ^= X >> 7, X ^= X << 17;
    O = static_cast<uint32_t>(X % RegionElements);
  }
  volatile uint64_t Sink = 0;
  const auto Reads = [&](uint64_t Times) {
    for (uint64_t N = 0; N < Times; ++N) {
      // Integer sums: a floating-point sum's latency would bound the loop.
      uint64_t Sum = 0;
      for (uint64_t G = 0; G < R.Regions; ++G) {
        const T *Region = Table.data() + G * RegionElements;
        const uint32_t *Off = Offsets.data() + G * PerRegion;
        for (uint64_t K = 0; K < PerRegion; ++K)
          Sum += static_cast<uint64_t>(Region[Off[K]]);
      }
      Sink = Sum;
    }
  };
  const double Ns = interleavedMedianNs({Reads}, 0.25, Evict)[0];
  (void)Sink; // Stored to keep the sums; read once, so no compiler calls it unused.
  return Ns;
}

} // namespace

double randomReadsNs(const RandomReads &R, const std::function<void()> &Evict) {
  switch (R.ElemBytes) {
  case 1:
    return randomReadsNs<uint8_t>(R, Evict);
  case 2:
    return randomReadsNs<uint16_t>(R, Evict);
  case 4:
    return randomReadsNs<uint32_t>(R, Evict);
  case 8:
    return randomReadsNs<uint64_t>(R, Evict);
  }
  return 0;
}

GatherElementsDesc probeGatherElements(uint64_t AxisSize) {
  GatherElementsDesc D;
  D.Input.Type = D.Output.Type = DataType::Float32;
  D.Indices.Type = DataType::Int64;
  D.Input.Sizes = {64, AxisSize};
  D.Indices.Sizes = D.Output.Sizes = {64, 16};
  D.Axis = 1;
  return D;
}

GatherDesc probeGather(uint64_t Rows) {
  GatherDesc D;
  D.Input.Type = D.Output.Type = DataType::Float32;
  D.Indices.Type = DataType::Int64;
  D.Input.Sizes = {Rows, 64};
  D.Indices.Sizes = {1, 32};
  D.Output.Sizes = {32, 64};
  D.IndexDimensions = 1;
  return D;
}

namespace {

Expected<std::unique_ptr<Runtime>> makeRuntime(unsigned Threads, bool QuickTier,
                                               const std::string &CacheDir = "") {
  RuntimeOptions O;
  O.Threads = Threads;
  O.QuickTier = QuickTier;
  // The suite measures specialized kernels; the walks (bench/Shapes.cpp)
  // measure the tiers.
  O.Specialization = Specialize::AtCompile;
  O.CacheDir = CacheDir;
  return Runtime::create(O);
}

/// Medians of compiling new GatherElements and Gather probes.
Status measureCold(bool QuickTier, double &GatherElementsMs, double &GatherMs) {
  Expected<std::unique_ptr<Runtime>> RT = makeRuntime(1, QuickTier);
  if (!RT)
    return RT.status();
  std::vector<double> GE, G;
  for (uint64_t I = 0; I < 21; ++I) {
    Expected<Kernel> A = (*RT)->compile(probeGatherElements(1000 + I));
    Expected<Kernel> B = (*RT)->compile(probeGather(1000 + I));
    if (!A || !B)
      return !A ? A.status() : B.status();
    GE.push_back(A->compileTimes().total());
    G.push_back(B->compileTimes().total());
  }
  GatherElementsMs = median(GE);
  GatherMs = median(G);
  return Status::ok();
}

/// Compile latencies: new specs each time (cold, at both tiers), an equal
/// spec (hit), and a fresh runtime loading from a populated persistent cache.
Status measureCompile(SuiteReport &R) {
  if (Status S = measureCold(true, R.ColdGatherElementsMs, R.ColdGatherMs); !S)
    return S;
  if (Status S = measureCold(false, R.FullGatherElementsMs, R.FullGatherMs); !S)
    return S;
  Expected<std::unique_ptr<Runtime>> RT = makeRuntime(1, true);
  if (!RT)
    return RT.status();
  Expected<ValidDesc> Hit = validate(probeGatherElements(77));
  if (!Hit)
    return Hit.status();
  (void)(*RT)->compile(*Hit);
  R.CacheHitNs = medianNs([&] { (void)(*RT)->compile(*Hit); }, 0.1);

  std::string Dir = (std::filesystem::temp_directory_path() / "gatherjit-bench-XXXXXX").string();
  if (!mkdtemp(Dir.data()))
    return Status::internal("cannot create a temporary directory");
  std::vector<double> Loads;
  for (int I = 0; I < 11; ++I) {
    Expected<std::unique_ptr<Runtime>> Fresh = makeRuntime(1, true, Dir);
    if (!Fresh)
      return Fresh.status();
    Expected<Kernel> K = (*Fresh)->compile(probeGatherElements(99));
    if (!K)
      return K.status();
    if (K->fromDiskCache())
      Loads.push_back(K->compileTimes().total());
  }
  std::filesystem::remove_all(Dir);
  R.DiskLoadMs = median(Loads);
  return Status::ok();
}

} // namespace

Expected<SuiteReport> runSuite(const SuiteOptions &Options,
                               const std::function<void(const std::string &)> &Progress) {
  std::vector<const BenchCase *> Selected;
  for (const std::string &Name : Options.Cases) {
    auto It = std::find_if(benchCases().begin(), benchCases().end(),
                           [&](const BenchCase &C) { return Name == C.Name; });
    if (It == benchCases().end()) {
      std::string Known;
      for (const BenchCase &C : benchCases())
        Known += std::string(Known.empty() ? "" : ",") + C.Name;
      return Status::invalidArgument("--cases: unknown case '" + Name + "'; the cases are " +
                                     Known);
    }
    if (std::find(Selected.begin(), Selected.end(), &*It) == Selected.end())
      Selected.push_back(&*It); // A case named twice is timed once.
  }
  if (Options.Cases.empty())
    for (const BenchCase &C : benchCases())
      Selected.push_back(&C);

  SuiteReport R;
  R.Threads = Options.Threads ? Options.Threads : std::max(1u, std::thread::hardware_concurrency());
  Progress("memcpy bandwidth");
  if (R.Threads > 1)
    R.MemcpyGbpsAllThreads = memcpyGbps(R.Threads);
  // The cases time the code a kernel runs in steady state: small ones at O2
  // from the start rather than after their upgrade.
  Expected<std::unique_ptr<Runtime>> Single = makeRuntime(1, false),
                                     Multi = makeRuntime(R.Threads, false);
  if (!Single || !Multi)
    return !Single ? Single.status() : Multi.status();

  // The memcpy line: one 256 MiB copy, timed among each case's engines.
  const size_t CopyBytes = size_t(256) << 20;
  std::vector<char> CopySrc(CopyBytes, 1), CopyDst(CopyBytes, 2);
  std::vector<double> Lines;
  for (const BenchCase *C : Selected) {
    Progress(C->Name);
    Expected<PreparedCase> P = prepareCase(*C);
    if (!P)
      return P.status();
    struct Run {
      Engine E;
      unsigned Threads;
      Runtime *RT;
      Kernel K;
    };
    std::vector<Run> Runs = {{Engine::Interp, 1, nullptr, {}},
                             {Engine::Generic, 1, nullptr, {}},
                             {Engine::Jit, 1, Single->get(), {}}};
    if (R.Threads > 1)
      Runs.push_back({Engine::Jit, R.Threads, Multi->get(), {}});
    Buffer Out(P->Data.OutputBytes);
    for (Run &Run : Runs) {
      if (Run.RT) {
        Expected<Kernel> Compiled = Run.RT->compile(P->Desc);
        if (!Compiled)
          return Compiled.status().withContext(C->Name);
        Run.K = Compiled.take();
      }
      std::fill(Out.begin(), Out.end(), 0);
      if (!runOnce(*P, Run.E, Run.K, Out.data()) || Out != P->Reference)
        return Status::internal(std::string(C->Name) + ": " + engineName(Run.E) +
                                " output differs from the interpreter's");
    }
    // The machine is shared: the engines other than the (slow) interpreter
    // and the memcpy line are timed in interleaved rounds, so the load of
    // the moment weighs on all of them alike. Each batch starts after a
    // 256 MiB copy has evicted the case's data from the caches: a batch
    // right after another engine's would find the rows it read and the
    // output it wrote there (python_baselines.py times numpy and PyTorch
    // the same way).
    std::vector<std::function<void(uint64_t)>> Calls;
    for (size_t I = 1; I < Runs.size(); ++I)
      Calls.push_back([&, I](uint64_t N) {
        for (uint64_t K = 0; K < N; ++K)
          runOnce(*P, Runs[I].E, Runs[I].K, Out.data());
      });
    Calls.push_back([&](uint64_t N) {
      for (uint64_t K = 0; K < N; ++K)
        copyOnce(CopyDst.data(), CopySrc.data(), CopyBytes);
    });
    const auto Evict = [&] { copyOnce(CopyDst.data(), CopySrc.data(), CopyBytes); };
    std::vector<double> Ns = interleavedMedianNs(Calls, 0.25, Evict);
    const double Line = 2.0 * CopyBytes / Ns.back();
    Lines.push_back(Line);
    Ns.pop_back();
    Ns.insert(Ns.begin(), medianNs([&] { runOnce(*P, Engine::Interp, Runs[0].K, Out.data()); }));
    for (size_t I = 0; I < Runs.size(); ++I) {
      SuiteRow Row;
      Row.Case = C->Name;
      Row.Engine = engineName(Runs[I].E);
      Row.Threads = Runs[I].Threads;
      Row.MedianNs = Ns[I];
      Row.EffectiveGbps = P->movedBytes() / Row.MedianNs;
      Row.MemcpyGbps = Line;
      R.Rows.push_back(Row);
    }
    if (const RandomReads Reads = randomReadsOf(*C); Reads.Count) {
      Progress("random reads alone");
      // From caches the same copy evicted, as the engines' batches start.
      R.RandomReadsAlone[C->Name] = {Reads, randomReadsNs(Reads, Evict)};
    }
  }
  if (!Lines.empty()) {
    R.MemcpyGbps = median(Lines);
    R.MemcpyMinGbps = *std::min_element(Lines.begin(), Lines.end());
    R.MemcpyMaxGbps = *std::max_element(Lines.begin(), Lines.end());
  }
  Progress("compile latency");
  if (Status S = measureCompile(R); !S)
    return S;
  return R;
}

} // namespace gatherjit::bench
