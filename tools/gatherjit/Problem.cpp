//===- tools/gatherjit/Problem.cpp - Operands of a command ---------------===//

#include "Problem.h"

#include "DescJson.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gatherjit {
namespace {

Status checkBuffer(const NpyArray &A, TensorDesc &T, const char *Flag,
                   const char *Field) {
  if (A.Type != T.Type || A.Type == DataType::Opaque)
    return Status::invalidArgument(
        std::string(Flag) + ": the file's dtype '" + A.Descr + "' (" +
        dataTypeName(A.Type) + ") does not match " + Field + ".data_type " +
        dataTypeName(T.Type));
  T.TotalBytes = A.Data.size();
  return Status::ok();
}

Expected<Problem> loadOnnx(const OperandFlags &F) {
  Expected<NpyArray> Data = readNpy(F.Data);
  if (!Data)
    return Data.status().withContext("--data");
  Expected<NpyArray> Indices = readNpy(F.Indices);
  if (!Indices)
    return Indices.status().withContext("--indices");
  const TensorDesc DataT = Data->tensor(), IdxT = Indices->tensor();
  ValidateOptions Options;
  Options.Policy = F.Oob == "clamp" ? OobPolicy::Clamp : OobPolicy::Check;
  Problem P;
  Expected<ValidDesc> V = Status::internal("unset");
  if (F.Kind == ProblemSource::OnnxGatherElements) {
    Options.AllowSmallerIndices = true;
    Expected<GatherElementsDesc> D = onnxGatherElements(DataT, IdxT, F.Axis);
    if (!D)
      return D.status();
    V = validate(*D, Options);
    P.OutShape = IdxT.Sizes;
  } else {
    Expected<GatherDesc> D = onnxGather(DataT, IdxT, F.Axis);
    if (!D)
      return D.status();
    V = validate(*D, Options);
    const int64_t Rank = DataT.rank();
    P.OutShape = onnxGatherOutputShape(
        DataT.Sizes, IdxT.Sizes, static_cast<unsigned>(F.Axis < 0 ? F.Axis + Rank : F.Axis));
  }
  if (!V)
    return V.status();
  P.Desc = V.take();
  // Fortran-order files are used in place: their strides say so.
  P.Input = std::move(Data->Data);
  P.Indices = std::move(Indices->Data);
  P.OutDescr = Data->Descr;
  return P;
}

Expected<Problem> loadJson(const OperandFlags &F) {
  Expected<std::string> Text = readTextFile(F.DescPath);
  if (!Text)
    return Text.status();
  Expected<JsonDescriptor> D = parseDescriptorJson(*Text);
  if (!D)
    return D.status().withContext(F.DescPath);
  Expected<NpyArray> Data = readNpy(F.Data);
  if (!Data)
    return Data.status().withContext("--input");
  Expected<NpyArray> Indices = readNpy(F.Indices);
  if (!Indices)
    return Indices.status().withContext("--indices");
  if (Status S = checkBuffer(*Data, D->input(), "--input", "input"); !S)
    return S;
  if (Status S = checkBuffer(*Indices, D->indices(), "--indices", "indices"); !S)
    return S;
  Expected<ValidDesc> V = D->validate();
  if (!V)
    return V.status();
  Problem P;
  P.Desc = V.take();
  // The files' elements in C order are the buffers the descriptor addresses.
  P.Input = Data->cOrderData();
  P.Indices = Indices->cOrderData();
  P.OutShape = P.Desc.Output.Sizes;
  P.OutDescr = npyDescr(P.Desc.Output.Type);
  return P;
}

} // namespace

Expected<std::string> readTextFile(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  if (!In)
    return Status::invalidArgument("cannot open '" + Path + "': " + std::strerror(errno));
  std::stringstream SS;
  SS << In.rdbuf();
  return SS.str();
}

std::vector<char> Problem::outputBuffer() const {
  return std::vector<char>(requiredElements(Desc.Output) * Desc.Output.elementBytes());
}

Status Problem::writeOutput(const std::string &Path, const std::vector<char> &Buffer) const {
  const TensorDesc &T = Desc.Output;
  std::vector<char> Packed = packRowMajor(T.Sizes, *T.Strides, T.elementBytes(), Buffer.data());
  return writeFileAtomic(Path, encodeNpy(OutDescr, OutShape, Packed.data(), Packed.size()));
}

Expected<Problem> loadProblem(const OperandFlags &F) {
  return F.Kind == ProblemSource::Json ? loadJson(F) : loadOnnx(F);
}

} // namespace gatherjit
