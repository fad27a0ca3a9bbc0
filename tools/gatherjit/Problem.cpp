//===- tools/gatherjit/Problem.cpp - Operands of a command ---------------===//

#include "Problem.h"

#include "gatherjit/DescriptorJson.h"
#include "gatherjit/Interpreter.h"

namespace gatherjit {
namespace {

Status checkBuffer(const NpyArray &A, TensorDesc &T, const char *Flag, const char *Field) {
  if (A.Type != T.Type || A.Type == DataType::Opaque)
    return Status::invalidArgument(std::string(Flag) + ": the file's dtype '" + A.Descr + "' (" +
                                   dataTypeName(A.Type) + ") does not match " + Field +
                                   ".data_type " + dataTypeName(T.Type));
  // The file is the buffer; a descriptor's own size of it must fit there.
  if (T.TotalBytes && *T.TotalBytes > A.Data.size())
    return Status::invalidArgument(
        std::string(Flag) + ": the file holds " + std::to_string(A.Data.size()) +
        " bytes, fewer than " + Field +
        ".total_tensor_size_in_bytes = " + std::to_string(*T.TotalBytes));
  if (!T.TotalBytes)
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
  const OnnxNode Node{onnxOp(F.Kind), Data->tensor(), Indices->tensor(), F.Axis};
  Expected<OnnxDesc> D = onnxDesc(Node);
  if (!D)
    return D.status();
  Expected<ValidDesc> V = D->validate(*parseOobPolicy(F.Oob));
  if (!V)
    return V.status();
  Problem P;
  P.Node = Node;
  P.OutShape = D->OutputShape;
  P.Desc = V.take();
  // Fortran-order files are used in place: their strides say so.
  P.Input = std::move(Data->Data);
  P.Indices = std::move(Indices->Data);
  P.OutDescr = Data->Descr;
  return P;
}

Expected<Problem> loadJson(const OperandFlags &F) {
  Expected<JsonDescriptor> D = readDescriptorFile(F.DescPath);
  if (!D)
    return D.status();
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
  P.Input = Data->takeCOrderData();
  P.Indices = Indices->takeCOrderData();
  P.OutShape = P.Desc.Output.Sizes;
  P.OutDescr = npyDescr(P.Desc.Output.Type);
  return P;
}

} // namespace

OpKind onnxOp(ProblemSource Kind) {
  switch (Kind) {
  case ProblemSource::OnnxGather:
    return OpKind::Gather;
  case ProblemSource::OnnxGatherND:
    return OpKind::GatherND;
  case ProblemSource::OnnxGatherElements:
  case ProblemSource::Json:
    break;
  }
  return OpKind::GatherElements;
}

Expected<JsonDescriptor> readDescriptorFile(const std::string &Path) {
  Expected<std::string> Text = readTextFile(Path, MaxDescriptorBytes);
  if (!Text)
    return Text.status();
  Expected<JsonDescriptor> D = parseDescriptorJson(*Text);
  if (!D)
    return D.status().withContext(quote(Path));
  return D;
}

Expected<ByteBuffer> Problem::outputBuffer() const {
  // Validation bounds the extent's bytes by INT64_MAX; memory bounds it here.
  return ByteBuffer::allocate(requiredElements(Desc.Output) * Desc.Output.elementBytes(),
                              "the output");
}

Status Problem::inUserTerms(Status S) const {
  if (!Node || !S.position())
    return S;
  return onnxIndexOutOfRangeError(*Node, Indices.data(), *S.position());
}

Status Problem::writeOutput(AtomicFile &File, const ByteBuffer &Buffer) const {
  const TensorDesc &T = Desc.Output;
  if (Status S = File.append(encodeNpyHeader(OutDescr, OutShape)); !S)
    return S;
  if (*T.Strides == packedStrides(T.Sizes)) {
    if (Status S = File.append(std::string_view(Buffer.data(), Buffer.size())); !S)
      return S;
  } else {
    std::vector<char> Packed = packRowMajor(T.Sizes, *T.Strides, T.elementBytes(), Buffer.data());
    if (Status S = File.append(std::string_view(Packed.data(), Packed.size())); !S)
      return S;
  }
  return File.commit();
}

void Problem::fuse(const ValidDesc &V) {
  Desc = V;
  OutDescr = npyDescr(V.Output.Type);
  if (V.Epilogue.Kind == EpilogueKind::Row && !OutShape.empty())
    OutShape.back() = V.Output.Sizes.back();
}

Expected<Epilogue> readEpilogue(const EpilogueFlags &F) {
  if (F.File.empty() != F.Function.empty())
    return Status::invalidArgument("--epilogue FILE.c and --epilogue-fn NAME go together");
  if (F.File.empty() && (!F.Params.empty() || F.RowOut || F.Checked))
    return Status::invalidArgument(
        "--epilogue-params, --epilogue-row-out and --epilogue-checked need --epilogue");
  Epilogue E;
  if (F.File.empty())
    return E;
  Expected<std::string> Source = readTextFile(F.File, MaxEpilogueBytes);
  if (!Source)
    return Source.status().withContext("--epilogue");
  E.Source = Source.take();
  E.Function = F.Function;
  E.FileName = F.File;
  E.Checked = F.Checked;
  if (!F.Params.empty()) {
    Expected<std::string> Params = readTextFile(F.Params, MaxEpilogueBytes);
    if (!Params)
      return Params.status().withContext("--epilogue-params");
    E.Params.assign(Params->begin(), Params->end());
  }
  return E;
}

Expected<Problem> loadProblem(const OperandFlags &F) {
  Expected<Epilogue> E = readEpilogue(F.Epilogue);
  if (!E)
    return E.status();
  Expected<Problem> P = F.Kind == ProblemSource::Json ? loadJson(F) : loadOnnx(F);
  if (!P)
    return P;
  P->Fused = E.take();
  P->RowOut = F.Epilogue.RowOut;
  return P;
}

} // namespace gatherjit
