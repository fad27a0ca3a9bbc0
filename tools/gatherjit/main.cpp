//===- tools/gatherjit/main.cpp - The gatherjit command line -------------===//
//
// gatherjit gather-elements --data D.npy --indices I.npy [--axis A]
//                           [--oob check|clamp] -o OUT.npy
// gatherjit gather          (the same operands; ONNX Gather)
// gatherjit run DESC.json --input D.npy --indices I.npy -o OUT.npy
// gatherjit demo            (the seed documents' examples, checked)
//
// Exit codes: 0 success, 2 bad input (one "error:" line on stderr), 1 an
// internal failure. The output file is written atomically or not at all.
//
//===----------------------------------------------------------------------===//

#include "DescJson.h"
#include "Npy.h"
#include "SeedExamples.h"
#include "gatherjit/Interpreter.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

using namespace gatherjit;

namespace {

int report(const Status &S) {
  std::string Msg = S.message();
  for (char &C : Msg)
    if (C == '\n' || C == '\r')
      C = ' ';
  std::fprintf(stderr, "error: %s\n", Msg.c_str());
  return S.code() == ErrorCode::Internal ? 1 : 2;
}

struct OnnxFlags {
  std::string Data, Indices, Out;
  int64_t Axis = 0;
  std::string Oob = "check";
};

struct RunFlags {
  std::string Desc, Input, Indices, Out;
};

OobPolicy policyOf(const std::string &Name) {
  return Name == "clamp" ? OobPolicy::Clamp : OobPolicy::Check;
}

/// Runs a validated descriptor on buffers large enough for it.
Status execute(const ValidDesc &V, const void *In, const void *Idx, void *Out) {
  return interpret(V, In, Idx, Out);
}

/// Copies a possibly strided output buffer into packed row-major order.
std::vector<char> packOutput(const TensorDesc &T, const std::vector<char> &Buf) {
  const unsigned Bytes = T.elementBytes();
  uint64_t Count = 1;
  for (uint64_t S : T.Sizes)
    Count *= S;
  if (*T.Strides == packedStrides(T.Sizes))
    return std::vector<char>(Buf.begin(), Buf.begin() + Count * Bytes);
  std::vector<char> Out(Count * Bytes);
  std::vector<uint64_t> Coord(T.rank(), 0);
  for (uint64_t Linear = 0; Linear < Count; ++Linear) {
    uint64_t Offset = 0;
    for (unsigned D = 0; D < T.rank(); ++D)
      Offset += Coord[D] * (*T.Strides)[D];
    std::memcpy(&Out[Linear * Bytes], &Buf[Offset * Bytes], Bytes);
    for (unsigned D = T.rank(); D-- > 0;) {
      if (++Coord[D] < T.Sizes[D])
        break;
      Coord[D] = 0;
    }
  }
  return Out;
}

Status runOnnx(const OnnxFlags &F, OpKind Op) {
  Expected<NpyArray> Data = readNpy(F.Data);
  if (!Data)
    return Data.status().withContext("--data");
  Expected<NpyArray> Indices = readNpy(F.Indices);
  if (!Indices)
    return Indices.status().withContext("--indices");
  const TensorDesc DataT = Data->tensor(), IdxT = Indices->tensor();
  ValidateOptions Options;
  Options.Policy = policyOf(F.Oob);
  Expected<ValidDesc> V = Status::internal("unset");
  std::vector<uint64_t> OutShape;
  if (Op == OpKind::GatherElements) {
    Options.AllowSmallerIndices = true;
    Expected<GatherElementsDesc> D = onnxGatherElements(DataT, IdxT, F.Axis);
    if (!D)
      return D.status();
    V = validate(*D, Options);
    OutShape = IdxT.Sizes;
  } else {
    Expected<GatherDesc> D = onnxGather(DataT, IdxT, F.Axis);
    if (!D)
      return D.status();
    V = validate(*D, Options);
    if (V)
      OutShape = onnxGatherOutputShape(DataT.Sizes, IdxT.Sizes,
                                       static_cast<unsigned>(
                                           F.Axis < 0 ? F.Axis + DataT.rank() : F.Axis));
  }
  if (!V)
    return V.status();
  std::vector<char> Out(V->outputElements() * V->Output.elementBytes());
  if (Status S = execute(*V, Data->Data.data(), Indices->Data.data(), Out.data()); !S)
    return S;
  return writeFileAtomic(F.Out, encodeNpy(Data->Descr, OutShape, Out.data(), Out.size()));
}

Status checkBuffer(const NpyArray &A, TensorDesc &T, const char *Flag,
                   const char *Field) {
  const bool Match = A.Type == T.Type && A.Type != DataType::Opaque;
  if (!Match)
    return Status::invalidArgument(
        std::string(Flag) + ": the file's dtype '" + A.Descr + "' (" +
        dataTypeName(A.Type) + ") does not match " + Field + ".data_type " +
        dataTypeName(T.Type));
  T.TotalBytes = A.Data.size();
  return Status::ok();
}

Status runJson(const RunFlags &F) {
  std::ifstream In(F.Desc);
  if (!In)
    return Status::invalidArgument("cannot open descriptor '" + F.Desc +
                                   "': " + std::strerror(errno));
  std::stringstream SS;
  SS << In.rdbuf();
  Expected<JsonDescriptor> D = parseDescriptorJson(SS.str());
  if (!D)
    return D.status().withContext(F.Desc);
  Expected<NpyArray> Data = readNpy(F.Input);
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
  // The files' elements in C order are the buffers the descriptor addresses.
  const std::vector<char> InBuf = Data->cOrderData(), IdxBuf = Indices->cOrderData();
  std::vector<char> OutBuf(requiredElements(V->Output) * V->Output.elementBytes());
  if (Status S = execute(*V, InBuf.data(), IdxBuf.data(), OutBuf.data()); !S)
    return S;
  std::vector<char> Packed = packOutput(V->Output, OutBuf);
  return writeFileAtomic(F.Out, encodeNpy(npyDescr(V->Output.Type), V->Output.Sizes,
                                          Packed.data(), Packed.size()));
}

std::string shapeString(const std::vector<uint64_t> &S) {
  std::string R = "{";
  for (size_t I = 0; I < S.size(); ++I)
    R += (I ? "," : "") + std::to_string(S[I]);
  return R + "}";
}

int runDemo() {
  std::printf("%-36s %-10s %-6s %s\n", "seed example", "output", "result", "note");
  int Failures = 0;
  for (const SeedExample &E : seedExamples()) {
    bool Ok = false;
    if (E.Desc) {
      std::vector<float> Out(E.ExpectedOutput.size());
      std::vector<char> Idx = E.indexBytes();
      Status S = execute(*E.Desc, E.Input.data(), Idx.data(), Out.data());
      Ok = S && Out == E.ExpectedOutput;
    }
    Failures += !Ok;
    std::printf("%-36s %-10s %-6s %s\n", E.Name.c_str(),
                shapeString(E.ExpectedShape).c_str(), Ok ? "ok" : "FAIL",
                E.Desc ? E.Note.c_str() : E.Desc.status().message().c_str());
  }
  return Failures ? 1 : 0;
}

} // namespace

int main(int Argc, char **Argv) {
  CLI::App App{"gatherjit: gather operators compiled to native code"};
  App.require_subcommand(1);
  OnnxFlags GE, G;
  RunFlags R;
  auto AddOnnx = [&](const char *Name, const char *Help, OnnxFlags &F) {
    CLI::App *Sub = App.add_subcommand(Name, Help);
    Sub->add_option("--data", F.Data, "data tensor (.npy)")->required();
    Sub->add_option("--indices", F.Indices, "indices tensor (.npy)")->required();
    Sub->add_option("--axis", F.Axis, "axis, negative counts from the back");
    Sub->add_option("--oob", F.Oob, "out-of-range indices: check (error) or clamp")
        ->check(CLI::IsMember({"check", "clamp"}));
    Sub->add_option("-o,--output", F.Out, "output file (.npy)")->required();
    return Sub;
  };
  CLI::App *GESub = AddOnnx("gather-elements", "ONNX GatherElements", GE);
  CLI::App *GSub = AddOnnx("gather", "ONNX Gather", G);
  CLI::App *RunSub = App.add_subcommand("run", "run a DirectML-style descriptor");
  RunSub->add_option("desc", R.Desc, "descriptor JSON")->required();
  RunSub->add_option("--input", R.Input, "input buffer (.npy)")->required();
  RunSub->add_option("--indices", R.Indices, "indices buffer (.npy)")->required();
  RunSub->add_option("-o,--output", R.Out, "output file (.npy)")->required();
  CLI::App *DemoSub = App.add_subcommand("demo", "run the seed documents' examples");

  try {
    App.parse(Argc, Argv);
  } catch (const CLI::ParseError &E) {
    if (E.get_exit_code() == 0) {
      std::cout << App.help();
      return 0;
    }
    return report(Status::invalidArgument(E.what()));
  }
  Status S;
  if (GESub->parsed())
    S = runOnnx(GE, OpKind::GatherElements);
  else if (GSub->parsed())
    S = runOnnx(G, OpKind::Gather);
  else if (RunSub->parsed())
    S = runJson(R);
  else if (DemoSub->parsed())
    return runDemo();
  return S ? 0 : report(S);
}
