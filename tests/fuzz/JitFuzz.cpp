//===- tests/fuzz/JitFuzz.cpp - libFuzzer target: JIT against interpreter ===//
//
// The fuzzer's bytes choose a descriptor field by field (operator, data and
// index types, ranks 1..8, sizes, strides with broadcast and padding, axis,
// policy) and then the index values and input bytes. A descriptor that
// validates is compiled and run next to the interpreter: both must return
// the same status, the same first bad position and the same output bytes,
// or the target aborts.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"

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
  Options.Policy = P.ConsumeBool() ? OobPolicy::Check : OobPolicy::Clamp;
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
  return 0;
}
