//===- tests/fuzz/JitFuzz.cpp - libFuzzer target: JIT against interpreter ===//
//
// The fuzzer's bytes choose a descriptor field by field (operator, data and
// index types, ranks 1..8, sizes, strides with broadcast and padding, axis,
// policy) and then the index values and input bytes. A descriptor that
// validates is compiled and run next to the interpreter, and so is the
// generic loop (runtime/GenericKernel.cpp) for it: each must return the
// interpreter's status, first bad position and output bytes, or the target
// aborts. Where the last bytes ask, the host's family kernel for it (of
// every size, or of its rows) runs too, and the GPU's thread schedule
// for it (its specialized kernel, or its family's) runs too, its grid
// simulated on the host (tests/compiler/backend/GpuBackendTest.cpp), and
// must agree the same way: under the sanitizers, no thread of it reads or
// writes outside the buffers.
//
//===----------------------------------------------------------------------===//

#include "compiler/backend/Backend.h"
#include "compiler/backend/Jit.h"
#include "compiler/backend/Target.h"
#include "compiler/pipeline/Pipeline.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"
#include "runtime/FamilyCode.h"
#include "runtime/GenericKernel.h"
#include "tests/TestUtil.h"

#include <llvm/Target/TargetMachine.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <cstring>
#include <vector>

using namespace gatherjit;

namespace {

TensorDesc pickTensor(FuzzedDataProvider &P, DataType Type, unsigned Rank) {
  TensorDesc T;
  T.Type = Type;
  for (unsigned D = 0; D < Rank; ++D)
    T.Sizes.push_back(P.ConsumeIntegralInRange<uint64_t>(0, 5));
  if (P.ConsumeBool()) {
    // Any strides: broadcast (0), transposed, padded.
    std::vector<uint64_t> Strides;
    for (unsigned D = 0; D < Rank; ++D)
      Strides.push_back(P.ConsumeIntegralInRange<uint64_t>(0, 40));
    T.Strides = Strides;
  }
  return T;
}

Runtime &runtime() {
  static std::unique_ptr<Runtime> RT = [] {
    RuntimeOptions Options;
    Options.Specialization = Specialize::AtCompile;
    Options.Threads = 1;
    Options.CacheCapacity = 64;
    Expected<std::unique_ptr<Runtime>> Created = Runtime::create(Options);
    if (!Created)
      std::abort();
    return Created.take();
  }();
  return *RT;
}

/// The host's code generator, the simulated grid's backend on it, and a
/// JIT that links its kernels.
struct Grid {
  std::unique_ptr<CodeGenerator> Gen;
  std::unique_ptr<Backend> Simulated, Host;
  std::shared_ptr<JitEngine> Jit;
};

Grid &grid() {
  static Grid G = [] {
    Grid Made;
    Expected<std::unique_ptr<llvm::TargetMachine>> TM = createTargetMachine({}, OptLevel::O1);
    Expected<std::shared_ptr<JitEngine>> Jit = JitEngine::create({});
    if (!TM || !Jit)
      std::abort();
    Made.Gen = std::make_unique<CodeGenerator>(TM.take());
    Made.Simulated = simulatedGridBackend(*Made.Gen);
    Made.Host = backendFor(*Made.Gen);
    Made.Jit = Jit.take();
    return Made;
  }();
  return G;
}

/// \p V's GPU kernel (or, with \p Family, its family's kernel run for its
/// shape) on the simulated grid: the kernel's return (0, or 1 + the first
/// bad position).
int64_t runSimulatedGrid(const ValidDesc &V, bool Family, const char *In, const char *Idx,
                         char *Out) {
  static uint64_t Count = 0;
  const std::string Name = "grid" + std::to_string(Count++);
  const auto Spec = std::make_shared<const KernelSpec>(canonicalize(V));
  const std::optional<KernelSpec> Of = Family ? familyOf(*Spec, /*BlockRows=*/true) : std::nullopt;
  Grid &G = grid();
  Expected<PipelineResult> R = runPipeline({{Of ? *Of : *Spec, Name}}, *G.Simulated, OptLevel::O1);
  if (!R)
    std::abort(); // Every valid descriptor has a GPU kernel.
  Expected<std::shared_ptr<const Executable>> Code = G.Jit->link(Name, R->Bytes);
  if (!Code)
    std::abort();
  if (Of)
    return FamilyCode(Code.take(), Spec).runRows(In, Idx, Out, 0, 1);
  return (*Code)->runRows(In, Idx, Out, 0, 1);
}

/// \p V's host family kernel (its family's, or with \p Rows its row
/// family's) run for its shape, as a runtime runs a new shape of a family
/// compiled before: the kernel's return, or std::nullopt where no such
/// family serves \p V.
std::optional<int64_t> runHostFamily(const ValidDesc &V, bool Rows, const char *In, const char *Idx,
                                     char *Out) {
  static uint64_t Count = 0;
  const auto Spec = std::make_shared<const KernelSpec>(canonicalize(V));
  const std::optional<KernelSpec> Of = Rows ? rowFamilyOf(*Spec) : familyOf(*Spec);
  if (!Of)
    return std::nullopt;
  const std::string Name = "family" + std::to_string(Count++);
  Grid &G = grid();
  Expected<PipelineResult> R = runPipeline({{*Of, Name}}, *G.Host, OptLevel::O1);
  if (!R)
    std::abort();
  Expected<std::shared_ptr<const Executable>> Code = G.Jit->link(Name, R->Bytes);
  if (!Code)
    std::abort();
  return bindFamily(Code.take(), Spec)
      ->runRows(In, Idx, Out, 0, static_cast<int64_t>(Spec->rows()));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  FuzzedDataProvider P(Data, Size);
  static constexpr DataType IndexTypes[] = {DataType::Int32, DataType::Int64, DataType::UInt32,
                                            DataType::UInt64};
  const bool IsGather = P.ConsumeBool();
  const auto Type =
      static_cast<DataType>(P.ConsumeIntegralInRange<int>(0, static_cast<int>(DataType::Opaque)));
  const DataType IndexType = IndexTypes[P.ConsumeIntegralInRange<int>(0, 3)];
  ValidateOptions Options;
  static constexpr OobPolicy Policies[] = {OobPolicy::Check, OobPolicy::Clamp, OobPolicy::Clip};
  Options.Policy = Policies[P.ConsumeIntegralInRange<int>(0, 2)];
  const unsigned Rank = P.ConsumeIntegralInRange<unsigned>(1, 8);
  TensorDesc In = pickTensor(P, Type, Rank);
  if (Type == DataType::Opaque)
    In.OpaqueBytes = P.ConsumeIntegralInRange<unsigned>(1, 9);
  const int64_t Axis = P.ConsumeIntegralInRange<int64_t>(-8, 8);
  Expected<ValidDesc> V = Status::invalidArgument("not built");
  if (IsGather) {
    TensorDesc Idx = pickTensor(P, IndexType, P.ConsumeIntegralInRange<unsigned>(0, 4));
    Expected<GatherDesc> D = onnxGather(In, Idx, Axis);
    if (!D)
      return 0;
    V = validate(*D, Options);
  } else {
    TensorDesc Idx = pickTensor(P, IndexType, Rank);
    Options.AllowSmallerIndices = P.ConsumeBool();
    Expected<GatherElementsDesc> D = onnxGatherElements(In, Idx, Axis);
    if (!D)
      return 0;
    V = validate(*D, Options);
  }
  if (!V)
    return 0;
  const uint64_t InBytes = requiredElements(V->Input) * V->Input.elementBytes();
  const uint64_t IdxBytes = requiredElements(V->Indices) * V->Indices.elementBytes();
  const uint64_t OutBytes = requiredElements(V->Output) * V->Output.elementBytes();
  if (InBytes > (1 << 16) || IdxBytes > (1 << 16) || OutBytes > (1 << 16))
    return 0;
  // Index values straight from the fuzzer: any value, wild ones included.
  std::vector<char> Indices(IdxBytes), Input(InBytes);
  const std::vector<uint8_t> Raw = P.ConsumeBytes<uint8_t>(IdxBytes);
  if (!Raw.empty())
    std::memcpy(Indices.data(), Raw.data(), Raw.size());
  for (uint64_t I = 0; I < InBytes; ++I)
    Input[I] = static_cast<char>(I * 131 + 7);

  Expected<Kernel> K = runtime().compile(*V);
  if (!K)
    std::abort(); // A valid descriptor always compiles.
  std::vector<char> Ref(OutBytes, '\x5a'), Jit(OutBytes, '\x5a');
  const Status RS = interpret(*V, Input.data(), Indices.data(), Ref.data());
  const Status JS = K->run(Input.data(), Indices.data(), Jit.data());
  if (RS.code() != JS.code() || RS.position() != JS.position())
    std::abort();
  if (RS && Ref != Jit)
    std::abort();
  // Exactly the buffers' bytes, so that the sanitizers see any stray
  // access (a null pointer for an empty one, as callers may pass).
  const std::unique_ptr<char[]> InCopy(InBytes ? new char[InBytes] : nullptr),
      IdxCopy(IdxBytes ? new char[IdxBytes] : nullptr);
  if (InBytes)
    std::memcpy(InCopy.get(), Input.data(), InBytes);
  if (IdxBytes)
    std::memcpy(IdxCopy.get(), Indices.data(), IdxBytes);
  // A kernel's return (0, or 1 + the first bad position) and output must
  // be the interpreter's, where its rows read the indices (an empty
  // output's are checked by Kernel::run alone).
  const Status OnRows = test::rowsStatus(*V, RS);
  auto Agrees = [&](int64_t Got, const std::vector<char> &Out) {
    if (OnRows ? Got != 0 : Got <= 0 || static_cast<uint64_t>(Got - 1) != *OnRows.position())
      return false;
    return !OnRows || Ref == Out;
  };
  // The generic loop, what a new shape runs first.
  const KernelSpec Spec = canonicalize(*V);
  std::vector<char> Generic(OutBytes, '\x5a');
  if (!Agrees(runGeneric(Spec, InCopy.get(), IdxCopy.get(), OutBytes ? Generic.data() : nullptr, 0,
                         Spec.rows()),
              Generic))
    std::abort();
  // (The runtime runs no code for an empty output.)
  if (const int Family = P.ConsumeIntegralInRange<int>(0, 2); Family != 0 && OutBytes != 0) {
    std::vector<char> OnFamily(OutBytes, '\x5a');
    const std::optional<int64_t> FR = runHostFamily(*V, Family == 2, InCopy.get(), IdxCopy.get(),
                                                    OutBytes ? OnFamily.data() : nullptr);
    if (FR && !Agrees(*FR, OnFamily))
      std::abort();
  }
  if (const int Gpu = P.ConsumeIntegralInRange<int>(0, 3); Gpu >= 2) {
    std::vector<char> OnGrid(OutBytes, '\x5a');
    if (!Agrees(runSimulatedGrid(*V, Gpu == 3, InCopy.get(), IdxCopy.get(),
                                 OutBytes ? OnGrid.data() : nullptr),
                OnGrid))
      std::abort();
  }
  return 0;
}
