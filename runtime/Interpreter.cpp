//===- runtime/Interpreter.cpp - The reference interpreter ---------------===//

#include "gatherjit/Interpreter.h"

#include <cstring>
#include <string>
#include <vector>

namespace gatherjit {
namespace {

using Coord = std::vector<uint64_t>;

uint64_t offsetOf(const Coord &C, const TensorDesc &T) {
  uint64_t Offset = 0;
  for (size_t D = 0; D < C.size(); ++D)
    Offset += C[D] * (*T.Strides)[D];
  return Offset;
}

/// The index value as a wide signed integer, so that every index type, even
/// a UINT64 above INT64_MAX, compares correctly.
__int128 loadIndex(const TensorDesc &T, const void *Base, uint64_t Offset) {
  const char *P = static_cast<const char *>(Base) + Offset * T.elementBytes();
  switch (T.Type) {
  case DataType::Int32: {
    int32_t V;
    std::memcpy(&V, P, 4);
    return V;
  }
  case DataType::Int64: {
    int64_t V;
    std::memcpy(&V, P, 8);
    return V;
  }
  case DataType::UInt32: {
    uint32_t V;
    std::memcpy(&V, P, 4);
    return V;
  }
  case DataType::UInt64: {
    uint64_t V;
    std::memcpy(&V, P, 8);
    return V;
  }
  default:
    break;
  }
  assert(false && "validate() admits only the four index types");
  return 0;
}

std::string valueString(__int128 V) {
  if (V >= 0)
    return std::to_string(static_cast<uint64_t>(V));
  return std::to_string(static_cast<int64_t>(V));
}

/// For an output coordinate, the coordinates it reads in the indices and
/// input tensors (the input's axis coordinate is left for the index).
void mapCoordinate(const ValidDesc &V, const Coord &Out, Coord &Idx,
                   Coord &In) {
  const unsigned N = V.rank();
  if (V.Op == OpKind::GatherElements) {
    Idx = Out;
    In = Out;
    return;
  }
  // Gather: the output is Input[0..Axis) ++ Indices[N-K..N) ++
  // Input[Axis+1..N), right-aligned into N dimensions.
  const unsigned K = V.IndexDimensions, L = N + K - 1;
  Coord Full;
  if (L >= N) {
    Full.assign(L - N, 0);
    Full.insert(Full.end(), Out.begin(), Out.end());
  } else {
    Full.assign(Out.begin() + 1, Out.end());
  }
  Idx.assign(N, 0);
  In.assign(N, 0);
  for (unsigned D = 0; D < V.Axis; ++D)
    In[D] = Full[D];
  for (unsigned D = 0; D < K; ++D)
    Idx[N - K + D] = Full[V.Axis + D];
  for (unsigned D = V.Axis + 1; D < N; ++D)
    In[D] = Full[D + K - 1];
}

uint64_t rowMajorPosition(const Coord &C, const std::vector<uint64_t> &Sizes) {
  uint64_t Pos = 0;
  for (size_t D = 0; D < C.size(); ++D)
    Pos = Pos * Sizes[D] + C[D];
  return Pos;
}

} // namespace

Status indexOutOfRangeError(const ValidDesc &V, const void *Indices,
                            uint64_t Position) {
  Coord C(V.rank());
  uint64_t Rest = Position;
  for (unsigned D = V.rank(); D-- > 0;) {
    C[D] = Rest % V.Indices.Sizes[D];
    Rest /= V.Indices.Sizes[D];
  }
  const __int128 Value = loadIndex(V.Indices, Indices, offsetOf(C, V.Indices));
  const uint64_t Size = V.axisSize();
  std::string Where;
  for (unsigned D = 0; D < V.rank(); ++D)
    Where += (D ? "," : "") + std::to_string(C[D]);
  std::string Range =
      Size == 0 ? "the axis is empty, so no index is valid"
      : isSignedIndexType(V.Indices.Type)
          ? "valid indices are -" + std::to_string(Size) + ".." +
                std::to_string(Size - 1)
          : "valid indices are 0.." + std::to_string(Size - 1);
  return Status::indexOutOfRange(
      std::string(opKindName(V.Op)) + ": IndicesTensor[" + Where + "] = " +
          valueString(Value) + " (position " + std::to_string(Position) +
          ") is out of range for InputTensor.Sizes[" + std::to_string(V.Axis) +
          "] = " + std::to_string(Size) + "; " + Range,
      Position);
}

Status interpret(const ValidDesc &V, const void *Input, const void *Indices,
                 void *Output) {
  const unsigned N = V.rank();
  const uint64_t Count = V.outputElements();
  const unsigned ElemBytes = V.Input.elementBytes();
  const __int128 AxisSize = static_cast<__int128>(V.axisSize());
  const bool Signed = isSignedIndexType(V.Indices.Type);
  Coord Out(N, 0), Idx, In;
  for (uint64_t Linear = 0; Linear < Count; ++Linear) {
    mapCoordinate(V, Out, Idx, In);
    __int128 Index = loadIndex(V.Indices, Indices, offsetOf(Idx, V.Indices));
    if (Signed && Index < 0)
      Index += AxisSize;
    char *Dst = static_cast<char *>(Output) + offsetOf(Out, V.Output) * ElemBytes;
    if (Index < 0 || Index >= AxisSize) {
      if (V.Policy == OobPolicy::Check)
        return indexOutOfRangeError(V, Indices,
                                    rowMajorPosition(Idx, V.Indices.Sizes));
      if (AxisSize == 0) {
        // Clamp into an empty axis: there is nothing to read; write zeros.
        std::memset(Dst, 0, ElemBytes);
        Index = -1;
      } else {
        Index = Index < 0 ? 0 : AxisSize - 1;
      }
    }
    if (Index >= 0) {
      In[V.Axis] = static_cast<uint64_t>(Index);
      const char *Src =
          static_cast<const char *>(Input) + offsetOf(In, V.Input) * ElemBytes;
      std::memcpy(Dst, Src, ElemBytes);
    }
    // Next output coordinate, row-major.
    for (unsigned D = N; D-- > 0;) {
      if (++Out[D] < V.Output.Sizes[D])
        break;
      Out[D] = 0;
    }
  }
  return Status::ok();
}

} // namespace gatherjit
