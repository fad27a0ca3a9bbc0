//===- tests/RandomCase.h - Random gather configurations -----------------===//
/// \file
/// Generates random, valid gather problems (every data and index type,
/// ranks 1..8, every axis, zero-size dimensions, strided, transposed and
/// broadcast layouts, both policies, with bad indices) and their buffers.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_TESTS_RANDOMCASE_H
#define GATHERJIT_TESTS_RANDOMCASE_H

#include "gatherjit/Validate.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace gatherjit::test {

/// A random test's seed: GATHERJIT_SEED where set (to replay a failure, or
/// to run the test over other configurations), else the test's own. A test
/// that draws from several generators numbers them (`Stream`), so that one
/// seed from the environment does not make them draw alike.
inline uint64_t seedFromEnv(uint64_t Default, uint64_t Stream = 0) {
  const char *S = std::getenv("GATHERJIT_SEED");
  return S && *S ? std::strtoull(S, nullptr, 0) + Stream * 0x9e3779b97f4a7c15ULL : Default;
}

/// What a random test's cases covered, beside the least each count must
/// reach. The test draws its usual number of cases, then, while a count is
/// short of its floor, draws on up to a bound: so that any seed from
/// GATHERJIT_SEED proves what the test's own does, and a count that no
/// seed reaches (a generator that stopped making such cases) still fails.
class Coverage {
public:
  /// A count of cases that must reach \p Min; \p What names them.
  unsigned &floor(std::string What, unsigned Min) {
    Floors.push_back({std::move(What), Min, 0});
    return Floors.back().Count;
  }

  /// Whether to draw case \p Drawn (from 0): below \p Usual always, then
  /// below \p Bound while a count is short.
  bool drawMore(unsigned Drawn, unsigned Usual, unsigned Bound) const {
    return Drawn < Usual || (Drawn < Bound && !unmet().empty());
  }

  /// The counts short of their floors, one line each; empty when none is.
  std::string unmet() const {
    std::string S;
    for (const Floor &F : Floors)
      if (F.Count < F.Min)
        S += "too few " + F.What + ": " + std::to_string(F.Count) + " of at least " +
             std::to_string(F.Min) + "\n";
    return S;
  }

private:
  struct Floor {
    std::string What;
    unsigned Min, Count;
  };
  std::deque<Floor> Floors; // A deque keeps each count where floor() returned it.
};

struct RandomCase {
  ValidDesc Desc;
  std::vector<char> Input, Indices;
  std::string Summary;
};

class CaseGenerator {
public:
  explicit CaseGenerator(uint64_t Seed) : Rng(Seed) {}

  RandomCase next() {
    while (true) {
      Expected<ValidDesc> V = pickDesc();
      if (!V)
        continue; // A rare invalid combination (e.g. rank limit): draw again.
      RandomCase C;
      C.Desc = V.take();
      C.Input = randomBytes(requiredElements(C.Desc.Input) * C.Desc.Input.elementBytes());
      fillIndices(C);
      C.Summary = C.Desc.describe();
      return C;
    }
  }

private:
  uint64_t pick(uint64_t N) { return N ? Rng() % N : 0; }
  bool chance(double P) { return std::uniform_real_distribution<>(0, 1)(Rng) < P; }

  std::vector<char> randomBytes(uint64_t N) {
    std::vector<char> B(N);
    for (char &C : B)
      C = static_cast<char>(Rng());
    return B;
  }

  std::vector<uint64_t> randomSizes(unsigned Rank) {
    std::vector<uint64_t> S(Rank);
    const uint64_t Max = Rank <= 2 ? 9 : Rank <= 4 ? 4 : 2;
    for (uint64_t &D : S)
      D = chance(0.02) ? 0 : 1 + pick(Max);
    return S;
  }

  /// Packed, transposed (a permuted layout), padded or broadcast strides.
  std::optional<std::vector<uint64_t>> randomStrides(const std::vector<uint64_t> &Sizes,
                                                     bool AllowBroadcast) {
    const unsigned Mode = static_cast<unsigned>(pick(AllowBroadcast ? 4 : 3));
    if (Mode == 0)
      return std::nullopt;
    std::vector<unsigned> Order(Sizes.size());
    std::iota(Order.begin(), Order.end(), 0);
    if (Mode == 1)
      std::shuffle(Order.begin(), Order.end(), Rng);
    std::vector<uint64_t> St(Sizes.size());
    uint64_t Stride = 1;
    for (size_t I = Order.size(); I-- > 0;) {
      const unsigned D = Order[I];
      St[D] = Stride;
      Stride *= std::max<uint64_t>(1, Sizes[D]) + (Mode == 2 ? pick(3) : 0);
    }
    if (Mode == 3)
      for (uint64_t &S : St)
        if (chance(0.4))
          S = 0;
    return St;
  }

  DataType randomDataType(unsigned &OpaqueBytes) {
    const int T = static_cast<int>(pick(static_cast<int>(DataType::Opaque) + 1));
    OpaqueBytes = 3 + static_cast<unsigned>(pick(6));
    return static_cast<DataType>(T);
  }

  Expected<ValidDesc> pickDesc() {
    static constexpr DataType IndexTypes[] = {DataType::Int32, DataType::Int64, DataType::UInt32,
                                              DataType::UInt64};
    unsigned OpaqueBytes;
    TensorDesc Data;
    Data.Type = randomDataType(OpaqueBytes);
    Data.OpaqueBytes = Data.Type == DataType::Opaque ? OpaqueBytes : 0;
    TensorDesc Idx;
    Idx.Type = IndexTypes[pick(4)];
    ValidateOptions Options;
    Options.Policy = chance(0.5)   ? OobPolicy::Check
                     : chance(0.5) ? OobPolicy::Clamp
                                   : OobPolicy::Clip;
    if (chance(0.6)) {
      // GatherElements, DirectML-equal or ONNX-smaller indices.
      const unsigned Rank = 1 + static_cast<unsigned>(pick(8));
      Data.Sizes = randomSizes(Rank);
      const unsigned Axis = static_cast<unsigned>(pick(Rank));
      Idx.Sizes = Data.Sizes;
      Idx.Sizes[Axis] = chance(0.05) ? 0 : 1 + pick(5);
      Options.AllowSmallerIndices = chance(0.3);
      if (Options.AllowSmallerIndices)
        for (unsigned D = 0; D < Rank; ++D)
          if (D != Axis && Idx.Sizes[D] > 0)
            Idx.Sizes[D] = 1 + pick(Idx.Sizes[D]);
      Data.Strides = randomStrides(Data.Sizes, true);
      Idx.Strides = randomStrides(Idx.Sizes, true);
      const int64_t OnnxAxis =
          chance(0.5) ? static_cast<int64_t>(Axis) : static_cast<int64_t>(Axis) - Rank;
      Expected<GatherElementsDesc> D = onnxGatherElements(Data, Idx, OnnxAxis);
      if (!D)
        return D.status();
      D->Output.Strides = randomStrides(D->Output.Sizes, false);
      return validate(*D, Options);
    }
    if (chance(0.4)) {
      // ONNX GatherND: data rank r, indices rank q, batch dimensions and
      // tuples of every length that fits.
      const unsigned R = 1 + static_cast<unsigned>(pick(5));
      const unsigned Q = 1 + static_cast<unsigned>(pick(4));
      const unsigned Batch = chance(0.5) ? 0 : static_cast<unsigned>(pick(std::min(R, Q)));
      Data.Sizes = randomSizes(R);
      Idx.Sizes = randomSizes(Q);
      std::copy(Data.Sizes.begin(), Data.Sizes.begin() + Batch, Idx.Sizes.begin());
      Idx.Sizes.back() = 1 + pick(R - Batch);
      Data.Strides = randomStrides(Data.Sizes, true);
      Idx.Strides = randomStrides(Idx.Sizes, true);
      Expected<GatherNDDesc> D = onnxGatherND(Data, Idx, Batch);
      if (!D)
        return D.status();
      D->Output.Strides = randomStrides(D->Output.Sizes, false);
      return validate(*D, Options);
    }
    // ONNX Gather: data rank r, indices rank q (0 for a scalar).
    const unsigned R = 1 + static_cast<unsigned>(pick(6));
    const unsigned Q = static_cast<unsigned>(pick(std::min(4u, 10 - R)));
    Data.Sizes = randomSizes(R);
    Idx.Sizes = randomSizes(Q);
    Data.Strides = randomStrides(Data.Sizes, true);
    Idx.Strides = randomStrides(Idx.Sizes, true);
    const int64_t Axis = static_cast<int64_t>(pick(R)) - (chance(0.3) ? R : 0);
    Expected<GatherDesc> D = onnxGather(Data, Idx, Axis);
    if (!D)
      return D.status();
    D->Output.Strides = randomStrides(D->Output.Sizes, false);
    return validate(*D, Options);
  }

  /// The size of the axis each element of the indices buffer selects along
  /// (GatherND: its tuple component's; a broadcast element, the last
  /// coordinate's that maps to it).
  static std::vector<uint64_t> axisSizes(const ValidDesc &V) {
    const TensorDesc &T = V.Indices;
    std::vector<uint64_t> Sizes(requiredElements(T), V.axisSize());
    if (V.Op != OpKind::GatherND || Sizes.empty())
      return Sizes;
    std::vector<uint64_t> Coord(T.rank(), 0);
    while (true) {
      uint64_t Off = 0;
      for (unsigned D = 0; D < T.rank(); ++D)
        Off += Coord[D] * (*T.Strides)[D];
      Sizes[Off] = V.Input.Sizes[V.firstTupleDim() + Coord.back()];
      unsigned D = T.rank();
      while (D-- > 0 && ++Coord[D] == T.Sizes[D])
        Coord[D] = 0;
      if (D == ~0u)
        return Sizes;
    }
  }

  void fillIndices(RandomCase &C) {
    const TensorDesc &T = C.Desc.Indices;
    const std::vector<uint64_t> AxisSizes = axisSizes(C.Desc);
    const uint64_t Count = AxisSizes.size();
    const bool Signed = isSignedIndexType(T.Type);
    const bool Bad = chance(0.3);
    std::vector<int64_t> Values(Count);
    for (uint64_t I = 0; I < Count; ++I) {
      int64_t &V = Values[I];
      const int64_t Size = static_cast<int64_t>(AxisSizes[I]);
      if (Size == 0) {
        V = static_cast<int64_t>(pick(3));
      } else if (Signed && chance(0.3)) {
        V = -1 - static_cast<int64_t>(pick(static_cast<uint64_t>(Size)));
      } else {
        V = static_cast<int64_t>(pick(static_cast<uint64_t>(Size)));
      }
      if (Bad && chance(0.05)) {
        static constexpr int64_t Wild[] = {INT64_MIN, INT64_MAX, -1, 0x7fffffff,
                                           static_cast<int64_t>(0xffffffffu)};
        V = chance(0.5)   ? Size + static_cast<int64_t>(pick(3))
            : chance(0.5) ? -Size - 1
                          : Wild[pick(5)];
      }
    }
    const unsigned Bytes = dataTypeSize(T.Type);
    C.Indices.resize(Count * Bytes);
    for (uint64_t I = 0; I < Count; ++I) {
      if (Bytes == 8) {
        std::memcpy(&C.Indices[I * 8], &Values[I], 8);
      } else {
        uint32_t V = static_cast<uint32_t>(Values[I]);
        std::memcpy(&C.Indices[I * 4], &V, 4);
      }
    }
  }

  std::mt19937_64 Rng;
};

/// C's name of a type an epilogue may take; null for the others.
inline const char *epilogueCName(DataType T) {
  switch (T) {
  case DataType::Float64:
    return "double";
  case DataType::Float32:
    return "float";
  case DataType::Float16:
    return "float16_t";
  case DataType::BFloat16:
    return "bfloat16_t";
  case DataType::Int64:
    return "int64_t";
  case DataType::Int32:
    return "int32_t";
  case DataType::Int16:
    return "int16_t";
  case DataType::Int8:
    return "int8_t";
  case DataType::UInt64:
    return "uint64_t";
  case DataType::UInt32:
    return "uint32_t";
  case DataType::UInt16:
    return "uint16_t";
  case DataType::UInt8:
    return "uint8_t";
  case DataType::Bool:
    return "bool";
  default:
    return nullptr;
  }
}

/// An element epilogue `OUT f(IN x)` and its output type.
struct RandomEpilogue {
  Epilogue Fn;
  DataType Out;
};

/// A random element epilogue for elements of type \p In, whose result is
/// defined for every input (no float to integer, which NaN leaves
/// undefined, and arithmetic that rounds once); none for types an
/// epilogue cannot take.
inline std::optional<RandomEpilogue> randomElementEpilogue(DataType In, std::mt19937_64 &Rng) {
  auto Float = [](DataType T) {
    return T == DataType::Float64 || T == DataType::Float32 || T == DataType::Float16 ||
           T == DataType::BFloat16;
  };
  const char *InName = epilogueCName(In);
  if (!InName)
    return std::nullopt;
  const DataType Outs[] = {DataType::Float64, DataType::Float32, DataType::Int64,
                           DataType::UInt16,  DataType::Int8,    DataType::Float16};
  DataType Out = Outs[Rng() % std::size(Outs)];
  std::string Body;
  if (Float(In)) {
    if (!Float(Out) || (In == DataType::BFloat16 && Out == DataType::Float16))
      Out = DataType::Float64;
    Body = std::string("return (") + epilogueCName(Out) + ")(-x * 2);";
  } else if (In == DataType::Bool) {
    Body = "return x ? 3 : 7;";
  } else {
    Body = std::string("return (") + epilogueCName(Out) + ")(x ^ (" + InName + ")0x5a);";
  }
  RandomEpilogue E{{}, Out};
  E.Fn.Source = std::string(epilogueCName(Out)) + " f(" + InName + " x) { " + Body + " }";
  E.Fn.Function = "f";
  return E;
}

} // namespace gatherjit::test

#endif
