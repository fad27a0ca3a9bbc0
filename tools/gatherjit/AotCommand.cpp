//===- tools/gatherjit/AotCommand.cpp - gatherjit aot --------------------===//

#include "AotCommand.h"

#include "CliOptions.h"
#include "Problem.h"
#include "gatherjit/Aot.h"
#include "runtime/AtomicFile.h"

#include <cctype>
#include <optional>

namespace gatherjit {

CLI::App *addAotCommand(CLI::App &App, AotFlags &F) {
  CLI::App *Sub =
      App.add_subcommand("aot", "compile kernels ahead of time into an object file and a C header");
  Sub->add_option("operands", F.Positional,
                  "gather-elements (default), gather or gather-nd, for the shape flags; "
                  "run DESC.json or DESC.json, the same as --desc");
  Sub->add_option("--op", F.Operator, "the same as the positional operator")
      ->check(CLI::IsMember({"gather-elements", "gather", "gather-nd"}));
  Sub->add_option("--data-shape", F.DataShape, "data sizes, e.g. 4096,4096");
  Sub->add_option("--data-type", F.DataType, "data element type (default FLOAT32)");
  Sub->add_option("--data-strides", F.DataStrides, "data strides in elements (default packed)");
  Sub->add_option("--indices-shape", F.IndicesShape,
                  "indices sizes, e.g. 4096,4096 (\"\" for a scalar Gather index)");
  Sub->add_option("--indices-type", F.IndicesType, "INT64 (default), INT32, UINT64 or UINT32");
  Sub->add_option("--indices-strides", F.IndicesStrides,
                  "indices strides in elements (default packed)");
  Sub->add_option("--axis", F.Axis, "axis, negative counts from the back")
      ->check(integerIn(INT32_MIN, INT32_MAX));
  Sub->add_option("--batch-dims", F.BatchDims, "gather-nd: leading batch dimensions (default 0)")
      ->check(integerIn(0, MaxRank));
  Sub->add_option("--oob", F.Oob,
                  "out-of-range indices: check (error, default), clamp (wrap negatives "
                  "once, then clamp: DirectML) or clip (no wrap: numpy)")
      ->check(CLI::IsMember({"check", "clamp", "clip"}));
  Sub->add_option("--desc", F.Descs, "descriptor JSON, once per kernel");
  Sub->add_option("--name", F.Names,
                  "C name of each kernel, in order: the shape-flag kernel first, "
                  "then one per --desc");
  Sub->add_option("--target", F.Triple, "target triple (default: the host)");
  Sub->add_option("--cpu", F.Cpu, "target CPU, e.g. x86-64-v3, host, generic");
  Sub->add_option("--features", F.Features, "target features, e.g. +avx2,-avx512f");
  Sub->add_option("--opt", F.Opt, "optimization level O0..O3 (default O2)")
      ->check(CLI::IsMember({"O0", "O1", "O2", "O3"}));
  Sub->add_option("-o,--output", F.Object, "object file to write")->required();
  addEpilogueFlags(Sub, F.Epilogue);
  Sub->add_option("--header", F.Header, "C header to write");
  return Sub;
}

namespace {

/// "4096,4096", "4096x4096" or "[4096, 4096]"; "" or "[]" is a scalar.
Expected<std::vector<uint64_t>> parseList(const std::string &Text, const char *Flag) {
  std::vector<uint64_t> Values;
  std::string Digits;
  auto Flush = [&]() -> Status {
    if (Digits.empty())
      return Status::invalidArgument(std::string(Flag) + " = " + quote(Text) +
                                     ": expected numbers separated by commas, e.g. 4096,4096");
    if (Digits.size() > 19)
      return Status::invalidArgument(std::string(Flag) + " = " + quote(Text) + ": " + Digits +
                                     " is too large");
    Values.push_back(std::stoull(Digits));
    Digits.clear();
    return Status::ok();
  };
  bool Any = false;
  for (char C : Text) {
    if (std::isdigit(static_cast<unsigned char>(C))) {
      Digits += C;
      Any = true;
    } else if (C == ',' || C == 'x') {
      if (Status S = Flush(); !S)
        return S;
    } else if (C != ' ' && C != '[' && C != ']' && C != '(' && C != ')') {
      return Status::invalidArgument(std::string(Flag) + " = " + quote(Text) +
                                     ": unexpected character " + quote(std::string(1, C)));
    }
  }
  if (Any || !Digits.empty())
    if (Status S = Flush(); !S)
      return S;
  return Values;
}

Expected<DataType> parseTypeFlag(const std::string &Text, const char *Flag) {
  std::string Upper;
  for (char C : Text)
    Upper += static_cast<char>(std::toupper(static_cast<unsigned char>(C)));
  if (std::optional<DataType> T = parseDataType(Upper); T && *T != DataType::Opaque)
    return *T;
  return Status::invalidArgument(std::string(Flag) + " = " + quote(Text) +
                                 " is not a data type; use FLOAT32, FLOAT16, INT64, "
                                 "UINT8, ... as DirectML spells them");
}

Expected<TensorDesc> tensorFromFlags(const std::string &Shape, const std::string &Type,
                                     const std::string &Strides, const char *Name) {
  TensorDesc T;
  const std::string Prefix = std::string("--") + Name;
  Expected<std::vector<uint64_t>> Sizes = parseList(Shape, (Prefix + "-shape").c_str());
  if (!Sizes)
    return Sizes.status();
  T.Sizes = Sizes.take();
  Expected<DataType> Ty = parseTypeFlag(Type, (Prefix + "-type").c_str());
  if (!Ty)
    return Ty.status();
  T.Type = *Ty;
  if (!Strides.empty()) {
    Expected<std::vector<uint64_t>> St = parseList(Strides, (Prefix + "-strides").c_str());
    if (!St)
      return St.status();
    if (St->size() != T.Sizes.size())
      return Status::invalidArgument(Prefix + "-strides has " + std::to_string(St->size()) +
                                     " values for " + std::to_string(T.Sizes.size()) +
                                     " dimensions in " + Prefix + "-shape");
    T.Strides = St.take();
  }
  return T;
}

Expected<std::vector<AotKernel>> collectKernels(AotFlags F) {
  // Positional operands: an operator for the shape flags, or descriptor
  // files (optionally after "run", as `gatherjit run` takes them).
  std::vector<std::string> PositionalDescs;
  for (const std::string &Op : F.Positional) {
    if (Op == "gather-elements" || Op == "gather" || Op == "gather-nd")
      F.Operator = Op;
    else if (Op != "run")
      PositionalDescs.push_back(Op);
  }
  F.Descs.insert(F.Descs.begin(), PositionalDescs.begin(), PositionalDescs.end());
  std::vector<AotKernel> Kernels;
  const bool FromFlags = !F.DataShape.empty() || !F.IndicesShape.empty();
  if (FromFlags) {
    if (F.DataShape.empty())
      return Status::invalidArgument("--indices-shape is given but --data-shape is not");
    Expected<TensorDesc> Data = tensorFromFlags(F.DataShape, F.DataType, F.DataStrides, "data");
    if (!Data)
      return Data.status();
    Expected<TensorDesc> Indices =
        tensorFromFlags(F.IndicesShape, F.IndicesType, F.IndicesStrides, "indices");
    if (!Indices)
      return Indices.status();
    const OpKind Op = F.Operator == "gather"      ? OpKind::Gather
                      : F.Operator == "gather-nd" ? OpKind::GatherND
                                                  : OpKind::GatherElements;
    if (Op == OpKind::GatherND && F.Axis != 0)
      return Status::invalidArgument("--axis does not apply to gather-nd; use --batch-dims");
    if (Op != OpKind::GatherND && F.BatchDims != 0)
      return Status::invalidArgument("--batch-dims applies to gather-nd only");
    Expected<ValidDesc> V =
        validateOnnx({Op, *Data, *Indices, Op == OpKind::GatherND ? F.BatchDims : F.Axis},
                     *parseOobPolicy(F.Oob));
    if (!V)
      return V.status();
    Kernels.push_back({"", V.take()});
  }
  for (const std::string &Path : F.Descs) {
    Expected<JsonDescriptor> D = readDescriptorFile(Path);
    if (!D)
      return D.status();
    Expected<ValidDesc> V = D->validate();
    if (!V)
      return V.status().withContext(quote(Path));
    Kernels.push_back({"", V.take()});
  }
  if (Kernels.empty())
    return Status::invalidArgument(
        "no kernel given: use --data-shape/--indices-shape/--axis or --desc FILE");
  Expected<Epilogue> E = readEpilogue(F.Epilogue);
  if (!E)
    return E.status();
  for (AotKernel &K : Kernels) {
    K.Fused = *E;
    K.RowOut = F.Epilogue.RowOut;
  }
  if (F.Names.empty() && Kernels.size() == 1) {
    Kernels[0].Name = "gatherjit_kernel";
  } else if (F.Names.size() != Kernels.size()) {
    return Status::invalidArgument(
        std::to_string(Kernels.size()) + " kernels (" + (FromFlags ? "1 from shape flags, " : "") +
        std::to_string(F.Descs.size()) + " from --desc) but " + std::to_string(F.Names.size()) +
        " --name; give one --name per kernel");
  } else {
    for (size_t I = 0; I < Kernels.size(); ++I)
      Kernels[I].Name = F.Names[I];
  }
  return Kernels;
}

} // namespace

Status runAot(const AotFlags &F) {
  // Both destinations are opened first (temporary files beside them), so
  // a bad one fails before the compile, and renamed last: a failure leaves
  // neither touched.
  Expected<AtomicFile> Object = AtomicFile::create(F.Object);
  if (!Object)
    return Object.status();
  std::optional<AtomicFile> Header;
  if (!F.Header.empty()) {
    Expected<AtomicFile> H = AtomicFile::create(F.Header);
    if (!H)
      return H.status();
    if (H->sameDestination(*Object))
      return Status::invalidArgument("--header " + quote(F.Header) + " and -o " + quote(F.Object) +
                                     " name the same file");
    Header.emplace(H.take());
  }
  Expected<std::vector<AotKernel>> Kernels = collectKernels(F);
  if (!Kernels)
    return Kernels.status();
  Expected<AotResult> R = compileAot(*Kernels, {F.Triple, F.Cpu, F.Features}, *parseOptLevel(F.Opt),
                                     F.Header.empty() ? "kernels.h" : F.Header);
  if (!R)
    return R.status();
  if (Status S = Object->append(std::string_view(R->Object.data(), R->Object.size())); !S)
    return S;
  if (Header)
    if (Status S = Header->append(R->Header); !S)
      return S;
  if (Status S = Object->commit(); !S)
    return S;
  return Header ? Header->commit() : Status::ok();
}

} // namespace gatherjit
