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
void mapCoordinate(const ValidDesc &V, const Coord &Out, Coord &Idx, Coord &In) {
  const unsigned N = V.rank();
  if (V.Op == OpKind::GatherElements) {
    Idx = Out;
    In = Out;
    return;
  }
  if (V.Op == OpKind::GatherND) {
    // The output is the indices' meaningful dimensions but the last (the
    // first BatchDimensionCount of them batches), then the input's slice
    // dimensions, right-aligned. The tuple's components fill the rest.
    const unsigned Batch = V.BatchDimensionCount, T = V.tupleSize();
    const unsigned IdxFirst = N - V.IndicesDimensionCount, InFirst = N - V.InputDimensionCount;
    const unsigned Lead = V.IndicesDimensionCount - 1;
    const unsigned OutFirst = N - (Lead + V.InputDimensionCount - Batch - T);
    Idx.assign(N, 0);
    In.assign(N, 0);
    for (unsigned F = 0; F < Lead; ++F) {
      Idx[IdxFirst + F] = Out[OutFirst + F];
      if (F < Batch)
        In[InFirst + F] = Out[OutFirst + F];
    }
    for (unsigned D = InFirst + Batch + T; D < N; ++D)
      In[D] = Out[OutFirst + Lead + (D - InFirst - Batch - T)];
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

/// Steps \p C to the next coordinate, row-major, over its first \p Dims
/// dimensions of \p Sizes (the last one fastest).
void nextCoordinate(Coord &C, const std::vector<uint64_t> &Sizes, unsigned Dims) {
  for (unsigned D = Dims; D-- > 0;) {
    if (++C[D] < Sizes[D])
      return;
    C[D] = 0;
  }
}

/// The coordinate at row-major \p Position of a tensor of \p Sizes: what
/// rowMajorPosition gives back.
Coord coordinateAt(uint64_t Position, const std::vector<uint64_t> &Sizes) {
  Coord C(Sizes.size());
  for (size_t D = Sizes.size(); D-- > 0;) {
    C[D] = Position % Sizes[D];
    Position /= Sizes[D];
  }
  return C;
}

/// The values of the index tuple of GatherND's indices \p T (in its last
/// dimension) that holds coordinate \p C, as "1, 5".
std::string tupleValues(const TensorDesc &T, const void *Indices, Coord C) {
  const size_t Last = C.size() - 1;
  std::string Tuple;
  for (C[Last] = 0; C[Last] < T.Sizes[Last]; ++C[Last])
    Tuple += (C[Last] ? ", " : "") + valueString(loadIndex(T, Indices, offsetOf(C, T)));
  return Tuple;
}

uint64_t rowMajorPosition(const Coord &C, const std::vector<uint64_t> &Sizes) {
  uint64_t Pos = 0;
  for (size_t D = 0; D < C.size(); ++D)
    Pos = Pos * Sizes[D] + C[D];
  return Pos;
}

/// "valid indices are -4..3" for an axis of \p Size, indexed by indices of
/// \p IndexType.
std::string validRange(DataType IndexType, uint64_t Size) {
  if (Size == 0)
    return "the axis is empty, so no index is valid";
  return isSignedIndexType(IndexType)
             ? "valid indices are -" + std::to_string(Size) + ".." + std::to_string(Size - 1)
             : "valid indices are 0.." + std::to_string(Size - 1);
}

} // namespace

Status onnxIndexOutOfRangeError(const OnnxNode &Node, const void *Indices, uint64_t Position) {
  // The node's own indices (any strides: a Fortran-order file is read in
  // place), and the position's coordinates in them.
  TensorDesc T = Node.Indices;
  if (!T.Strides)
    T.Strides = packedStrides(T.Sizes);
  const unsigned Rank = T.rank();
  const bool Tuples = Node.Op == OpKind::GatherND;
  const Coord C = coordinateAt(Position, T.Sizes);
  const std::string Value = valueString(loadIndex(T, Indices, offsetOf(C, T)));
  std::string Where;
  for (unsigned D = 0; D + Tuples < Rank; ++D)
    Where += (D ? ", " : "") + std::to_string(C[D]);
  const int64_t DataRank = Node.Data.rank();
  const std::string Op = std::string(opKindName(Node.Op)) + ": ";
  if (Tuples) {
    // The whole tuple, and the component out of range; the tuples address
    // the data's dimensions after batch_dims.
    const unsigned K = static_cast<unsigned>(C[Rank - 1]);
    const uint64_t Dim = static_cast<uint64_t>(Node.Axis) + K, Size = Node.Data.Sizes[Dim];
    return Status::indexOutOfRange(
        Op + "indices[" + Where + (Where.empty() ? ":" : ", :") + "] = (" +
            tupleValues(T, Indices, C) + (T.Sizes[Rank - 1] == 1 ? ",)" : ")") + " has component " +
            std::to_string(K) + " = " + Value + ", out of range for axis " + std::to_string(Dim) +
            " of size " + std::to_string(Size) + "; " + validRange(T.Type, Size),
        Position);
  }
  const uint64_t Axis = static_cast<uint64_t>(Node.Axis < 0 ? Node.Axis + DataRank : Node.Axis);
  const uint64_t Size = Node.Data.Sizes[Axis];
  return Status::indexOutOfRange(Op + "indices[" + Where + "] = " + Value +
                                     " is out of range for axis " + std::to_string(Axis) +
                                     " of size " + std::to_string(Size) + "; " +
                                     validRange(T.Type, Size),
                                 Position);
}

Status epilogueFaultError() {
  return Status::invalidArgument(
      "the checked epilogue read or wrote outside its row, output row, parameters and own "
      "variables, or divided by zero; the output is incomplete");
}

Status indexOutOfRangeError(const ValidDesc &V, const void *Indices, uint64_t Position) {
  const Coord C = coordinateAt(Position, V.Indices.Sizes);
  const __int128 Value = loadIndex(V.Indices, Indices, offsetOf(C, V.Indices));
  std::string Where;
  for (unsigned D = 0; D < V.rank(); ++D)
    Where += (D ? "," : "") + std::to_string(C[D]);
  if (V.Op == OpKind::GatherND) {
    // Name the whole tuple, and the component that is out of range.
    const unsigned Last = V.rank() - 1, K = static_cast<unsigned>(C[Last]);
    const unsigned Dim = V.firstTupleDim() + K;
    const std::string Tuple = tupleValues(V.Indices, Indices, C);
    const std::string TupleAt = Where.substr(0, Where.find_last_of(',') + 1);
    return Status::indexOutOfRange(
        "GatherND: the index tuple IndicesTensor[" + TupleAt + ":] = (" + Tuple + ") (position " +
            std::to_string(Position - K) + ") has component " + std::to_string(K) + " = " +
            valueString(Value) + ", out of range for InputTensor.Sizes[" + std::to_string(Dim) +
            "] = " + std::to_string(V.Input.Sizes[Dim]) + "; " +
            validRange(V.Indices.Type, V.Input.Sizes[Dim]),
        Position);
  }
  return Status::indexOutOfRange(
      std::string(opKindName(V.Op)) + ": IndicesTensor[" + Where + "] = " + valueString(Value) +
          " (position " + std::to_string(Position) + ") is out of range for InputTensor.Sizes[" +
          std::to_string(V.Axis) + "] = " + std::to_string(V.axisSize()) + "; " +
          validRange(V.Indices.Type, V.axisSize()),
      Position);
}

/// Resolves the index at \p Idx (a coordinate of the indices) for an axis
/// of \p Size under \p V's policy: true with \p Index in range, or false
/// if it is out of range under Check, or if it clamps into an empty axis
/// (\p Index = -1).
static bool resolveIndex(const ValidDesc &V, const void *Indices, const Coord &Idx, uint64_t Size,
                         __int128 &Index) {
  const __int128 Axis = static_cast<__int128>(Size);
  Index = loadIndex(V.Indices, Indices, offsetOf(Idx, V.Indices));
  if (isSignedIndexType(V.Indices.Type) && Index < 0 && V.Policy != OobPolicy::Clip)
    Index += Axis;
  if (Index >= 0 && Index < Axis)
    return true;
  if (V.Policy == OobPolicy::Check)
    return false;
  Index = Axis == 0 ? -1 : Index < 0 ? 0 : Axis - 1;
  return Axis != 0;
}

Status interpret(const ValidDesc &V, const void *Input, const void *Indices, void *Output) {
  if (V.Epilogue.Kind != EpilogueKind::None)
    return Status::invalidArgument("the descriptor has an epilogue: interpret it with the "
                                   "epilogue's function");
  return interpret(V, Input, Indices, Output, nullptr);
}

Status interpret(const ValidDesc &V, const void *Input, const void *Indices, void *Output,
                 const EpilogueApply &Apply) {
  if (V.Epilogue.Kind != EpilogueKind::None && !Apply)
    return Status::invalidArgument("the descriptor has an epilogue but no function was given");
  const unsigned N = V.rank();
  const unsigned ElemBytes = V.Input.elementBytes(), OutBytes = V.Output.elementBytes();
  // A row epilogue's unit is a row of the last dimension: the loop runs
  // over the other dimensions, the last coordinate 0 (the row's start).
  const bool Rows = V.Epilogue.Kind == EpilogueKind::Row;
  const unsigned Looped = Rows ? N - 1 : N;
  const uint64_t Unit = Rows ? V.Output.Sizes.back() * OutBytes : OutBytes;
  // An empty output reads no index, yet under Check an index out of range
  // is an error whether or not an output element needs it (ONNX).
  if (V.outputElements() == 0)
    return checkEveryIndex(V, Indices);
  uint64_t Count = 1;
  for (unsigned D = 0; D < Looped; ++D)
    Count *= V.Output.Sizes[D];
  // The input dimensions the index (or GatherND's tuple) selects along.
  const unsigned First = V.Op == OpKind::GatherND ? V.firstTupleDim() : V.Axis;
  const unsigned Components = V.Op == OpKind::GatherND ? V.tupleSize() : 1;
  Coord Out(N, 0), Idx, In;
  for (uint64_t Linear = 0; Linear < Count; ++Linear) {
    mapCoordinate(V, Out, Idx, In);
    char *Dst = static_cast<char *>(Output) + offsetOf(Out, V.Output) * OutBytes;
    bool Read = true;
    for (unsigned K = 0; K < Components; ++K) {
      if (V.Op == OpKind::GatherND)
        Idx[N - 1] = K;
      __int128 Index;
      if (!resolveIndex(V, Indices, Idx, V.Input.Sizes[First + K], Index)) {
        if (V.Policy == OobPolicy::Check)
          return indexOutOfRangeError(V, Indices, rowMajorPosition(Idx, V.Indices.Sizes));
        Read = false; // Clamped into an empty axis: nothing to read.
        continue;
      }
      In[First + K] = static_cast<uint64_t>(Index);
    }
    // Src only where something is read: an empty input may be null.
    auto Src = [&] { return static_cast<const char *>(Input) + offsetOf(In, V.Input) * ElemBytes; };
    if (!Read)
      std::memset(Dst, 0, Unit);
    else if (!Apply)
      std::memcpy(Dst, Src(), ElemBytes);
    else if (!Apply(Src(), Dst))
      return epilogueFaultError();
    nextCoordinate(Out, V.Output.Sizes, Looped); // The next element (or row).
  }
  return Status::ok();
}

Status checkEveryIndex(const ValidDesc &V, const void *Indices) {
  if (V.Policy != OobPolicy::Check)
    return Status::ok(); // Every index resolves to a read (or to none).
  const TensorDesc &T = V.Indices;
  uint64_t N = 1;
  for (uint64_t S : T.Sizes)
    N *= S;
  Coord C(T.rank(), 0);
  for (uint64_t Pos = 0; Pos < N; ++Pos) {
    const uint64_t Size = V.Op == OpKind::GatherND
                              ? V.Input.Sizes[V.firstTupleDim() + C.back()] // Its component's.
                              : V.axisSize();
    __int128 Index;
    if (!resolveIndex(V, Indices, C, Size, Index))
      return indexOutOfRangeError(V, Indices, Pos);
    nextCoordinate(C, T.Sizes, T.rank());
  }
  return Status::ok();
}

} // namespace gatherjit
