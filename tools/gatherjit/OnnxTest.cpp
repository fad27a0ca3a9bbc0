//===- tools/gatherjit/OnnxTest.cpp - `gatherjit onnx-test` --------------===//
//
// model.onnx and the TensorProto files are read with ONNX's own protobuf
// classes. Each directory's outcome is one line; nothing a directory holds
// (a missing file, a corrupt model, another operator) stops the others.
//
//===----------------------------------------------------------------------===//

#include "OnnxTest.h"

#include "Problem.h"
#include "gatherjit/Runtime.h"
#include "runtime/System.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

namespace gatherjit {
namespace {

namespace fs = std::filesystem;

/// Models and tensors of node tests are small; this bounds what is read.
constexpr uint64_t MaxProtoBytes = uint64_t(1) << 30;

/// A TensorProto as gatherjit sees it. Strings become UINT64 numbers into
/// Strings, so that a gather moves them like any other element.
struct OnnxTensor {
  TensorDesc Desc;
  std::vector<char> Bytes;
  std::vector<std::string> Strings;
  bool IsString = false;
};

std::optional<DataType> fromOnnxType(int32_t Type) {
  using TP = onnx::TensorProto;
  switch (Type) {
  case TP::FLOAT:
    return DataType::Float32;
  case TP::UINT8:
    return DataType::UInt8;
  case TP::INT8:
    return DataType::Int8;
  case TP::UINT16:
    return DataType::UInt16;
  case TP::INT16:
    return DataType::Int16;
  case TP::INT32:
    return DataType::Int32;
  case TP::INT64:
    return DataType::Int64;
  case TP::STRING:
    return DataType::UInt64;
  case TP::BOOL:
    return DataType::Bool;
  case TP::FLOAT16:
    return DataType::Float16;
  case TP::DOUBLE:
    return DataType::Float64;
  case TP::UINT32:
    return DataType::UInt32;
  case TP::UINT64:
    return DataType::UInt64;
  case TP::COMPLEX64:
    return DataType::Complex64;
  case TP::COMPLEX128:
    return DataType::Complex128;
  case TP::BFLOAT16:
    return DataType::BFloat16;
  default:
    return std::nullopt;
  }
}

/// ONNX's name of element type \p Type and its number, e.g. "FLOAT8E4M3FN
/// (17)": the protobuf classes name the types of their version, and the
/// types ONNX added later (float8, 4-bit; no gather of ONNX takes them) are
/// named here.
std::string onnxTypeName(int Type) {
  static const char *const Later[] = {"FLOAT8E4M3FN",   "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                      "FLOAT8E5M2FNUZ", "UINT4",          "INT4",
                                      "FLOAT4E2M1"};
  std::string Name;
  if (onnx::TensorProto::DataType_IsValid(Type))
    Name = onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(Type));
  else if (Type >= 17 && Type < 17 + static_cast<int>(std::size(Later)))
    Name = Later[Type - 17];
  return Name.empty() ? std::to_string(Type) : Name + " (" + std::to_string(Type) + ")";
}

/// Copies \p Values, each narrowed to \p Bytes (little-endian), into \p Out.
template <typename T>
Status copyTyped(const google::protobuf::RepeatedField<T> &Values, uint64_t Count, unsigned Bytes,
                 const char *Field, std::vector<char> &Out) {
  // Complex numbers are two values per element.
  const uint64_t PerElement = Bytes > sizeof(T) ? Bytes / sizeof(T) : 1;
  if (static_cast<uint64_t>(Values.size()) != Count * PerElement)
    return Status::invalidArgument(std::string(Field) + " has " + std::to_string(Values.size()) +
                                   " values for " + std::to_string(Count) + " elements");
  const unsigned Each = Bytes / PerElement;
  Out.resize(Count * Bytes);
  for (int I = 0; I < Values.size(); ++I) {
    const T V = Values.Get(I);
    std::memcpy(&Out[static_cast<uint64_t>(I) * Each], &V, Each);
  }
  return Status::ok();
}

Expected<OnnxTensor> fromProto(const onnx::TensorProto &P) {
  using TP = onnx::TensorProto;
  std::optional<DataType> Type = fromOnnxType(P.data_type());
  if (!Type)
    return Status::unsupported("element type " + onnxTypeName(P.data_type()) +
                               " is not one that ONNX's gathers take");
  if (P.data_location() == TP::EXTERNAL)
    return Status::unsupported("tensors with external data are not supported");
  OnnxTensor T;
  T.Desc.Type = *Type;
  T.IsString = P.data_type() == TP::STRING;
  uint64_t Count = 1;
  for (int64_t D : P.dims()) {
    if (D < 0)
      return Status::invalidArgument("negative dimension " + std::to_string(D));
    T.Desc.Sizes.push_back(static_cast<uint64_t>(D));
    if (__builtin_mul_overflow(Count, static_cast<uint64_t>(D), &Count) || Count > MaxProtoBytes)
      return Status::invalidArgument("dims " + shapeString(T.Desc.Sizes) + " are too large");
  }
  const unsigned Bytes = dataTypeSize(*Type);
  Status S = Status::ok();
  if (T.IsString) {
    if (static_cast<uint64_t>(P.string_data_size()) != Count)
      return Status::invalidArgument("string_data has " + std::to_string(P.string_data_size()) +
                                     " values for " + std::to_string(Count) + " elements");
    T.Strings.assign(P.string_data().begin(), P.string_data().end());
    T.Bytes.resize(Count * 8);
    for (uint64_t I = 0; I < Count; ++I)
      std::memcpy(&T.Bytes[I * 8], &I, 8);
  } else if (P.has_raw_data()) {
    if (P.raw_data().size() != Count * Bytes)
      return Status::invalidArgument("raw_data has " + std::to_string(P.raw_data().size()) +
                                     " bytes for " + std::to_string(Count) + " elements of " +
                                     std::to_string(Bytes));
    T.Bytes.assign(P.raw_data().begin(), P.raw_data().end());
  } else {
    switch (P.data_type()) {
    case TP::FLOAT:
    case TP::COMPLEX64:
      S = copyTyped(P.float_data(), Count, Bytes, "float_data", T.Bytes);
      break;
    case TP::DOUBLE:
    case TP::COMPLEX128:
      S = copyTyped(P.double_data(), Count, Bytes, "double_data", T.Bytes);
      break;
    case TP::INT64:
      S = copyTyped(P.int64_data(), Count, Bytes, "int64_data", T.Bytes);
      break;
    case TP::UINT32:
    case TP::UINT64:
      S = copyTyped(P.uint64_data(), Count, Bytes, "uint64_data", T.Bytes);
      break;
    default: // INT32 and narrower, BOOL, FLOAT16, BFLOAT16.
      S = copyTyped(P.int32_data(), Count, Bytes, "int32_data", T.Bytes);
      break;
    }
  }
  if (!S)
    return S;
  T.Desc.TotalBytes = T.Bytes.size();
  return T;
}

/// Parses \p Path as a protobuf message of type \p Message.
template <typename Message> Status readProto(const fs::path &Path, Message &Out) {
  // A test directory holds regular files: a FIFO or a device would block
  // or never end.
  std::error_code Err;
  const fs::file_status St = fs::status(Path, Err);
  if (!Err && fs::exists(St) && !fs::is_regular_file(St))
    return Status::invalidArgument(quote(Path.filename().string()) +
                                   " is not a regular file; onnx-test reads test directories "
                                   "of regular files");
  Expected<std::string> Bytes = readTextFile(Path.string(), MaxProtoBytes);
  if (!Bytes)
    return Bytes.status();
  if (!Out.ParseFromString(*Bytes))
    return Status::invalidArgument(Path.filename().string() + ": not a valid " + Out.GetTypeName() +
                                   " file");
  return Status::ok();
}

Expected<OnnxTensor> readTensor(const fs::path &Path) {
  onnx::TensorProto P;
  if (Status S = readProto(Path, P); !S)
    return S;
  Expected<OnnxTensor> T = fromProto(P);
  if (!T)
    return T.status().withContext(Path.filename().string());
  return T;
}

/// One element of \p T's bytes at \p Index, as a person reads it.
std::string elementText(const OnnxTensor &T, uint64_t Index) {
  const char *P = T.Bytes.data() + Index * dataTypeSize(T.Desc.Type);
  char Buf[64];
  auto As = [&](auto V) {
    std::memcpy(&V, P, sizeof(V));
    return V;
  };
  if (T.IsString) {
    const uint64_t Id = As(uint64_t{});
    return Id < T.Strings.size() ? quote(T.Strings[Id]) : "?";
  }
  switch (T.Desc.Type) {
  case DataType::Float32:
    std::snprintf(Buf, sizeof(Buf), "%.9g", As(float{}));
    break;
  case DataType::Float64:
    std::snprintf(Buf, sizeof(Buf), "%.17g", As(double{}));
    break;
  case DataType::Int8:
    std::snprintf(Buf, sizeof(Buf), "%d", As(int8_t{}));
    break;
  case DataType::Int16:
    std::snprintf(Buf, sizeof(Buf), "%d", As(int16_t{}));
    break;
  case DataType::Int32:
    std::snprintf(Buf, sizeof(Buf), "%" PRId32, As(int32_t{}));
    break;
  case DataType::Int64:
    std::snprintf(Buf, sizeof(Buf), "%" PRId64, As(int64_t{}));
    break;
  case DataType::UInt8:
  case DataType::Bool:
    std::snprintf(Buf, sizeof(Buf), "%u", As(uint8_t{}));
    break;
  case DataType::UInt16:
    std::snprintf(Buf, sizeof(Buf), "%u", As(uint16_t{}));
    break;
  case DataType::UInt32:
    std::snprintf(Buf, sizeof(Buf), "%" PRIu32, As(uint32_t{}));
    break;
  case DataType::UInt64:
    std::snprintf(Buf, sizeof(Buf), "%" PRIu64, As(uint64_t{}));
    break;
  default: {
    std::string Hex = "0x";
    for (unsigned I = dataTypeSize(T.Desc.Type); I-- > 0;) {
      std::snprintf(Buf, sizeof(Buf), "%02x", static_cast<unsigned char>(P[I]));
      Hex += Buf;
    }
    return Hex;
  }
  }
  return Buf;
}

/// "[1,0,2]": the coordinate of row-major \p Index in \p Sizes.
std::string coordinate(uint64_t Index, const std::vector<uint64_t> &Sizes) {
  std::vector<uint64_t> C(Sizes.size());
  for (size_t D = Sizes.size(); D-- > 0;) {
    C[D] = Index % Sizes[D];
    Index /= Sizes[D];
  }
  std::string S = "[";
  for (size_t D = 0; D < C.size(); ++D)
    S += (D ? "," : "") + std::to_string(C[D]);
  return S + "]";
}

/// The node a test runs: its operator, its axis (GatherND: batch_dims) and
/// where its two inputs come from.
struct GatherNode {
  OpKind Op = OpKind::GatherElements;
  int64_t Axis = 0;
  /// For each of data and indices: the input_K.pb number, or -1 with the
  /// tensor in Initializer.
  int Input[2] = {-1, -1};
  std::optional<OnnxTensor> Initializer[2];
};

/// The tensor a Constant node makes (its `value`, or `value_int(s)` /
/// `value_float(s)` as a 0-d or 1-d tensor), under its output's name.
Expected<onnx::TensorProto> constantValue(const onnx::NodeProto &N) {
  if (N.output_size() != 1 || N.attribute_size() != 1)
    return Status::invalidArgument("Constant has " + std::to_string(N.output_size()) +
                                   " outputs and " + std::to_string(N.attribute_size()) +
                                   " attributes; it has 1 of each");
  const onnx::AttributeProto &A = N.attribute(0);
  onnx::TensorProto T;
  if (A.name() == "value" && A.type() == onnx::AttributeProto::TENSOR) {
    T = A.t();
  } else if (A.name() == "value_int" && A.type() == onnx::AttributeProto::INT) {
    T.set_data_type(onnx::TensorProto::INT64);
    T.add_int64_data(A.i());
  } else if (A.name() == "value_ints" && A.type() == onnx::AttributeProto::INTS) {
    T.set_data_type(onnx::TensorProto::INT64);
    T.add_dims(A.ints_size());
    *T.mutable_int64_data() = A.ints();
  } else if (A.name() == "value_float" && A.type() == onnx::AttributeProto::FLOAT) {
    T.set_data_type(onnx::TensorProto::FLOAT);
    T.add_float_data(A.f());
  } else if (A.name() == "value_floats" && A.type() == onnx::AttributeProto::FLOATS) {
    T.set_data_type(onnx::TensorProto::FLOAT);
    T.add_dims(A.floats_size());
    *T.mutable_float_data() = A.floats();
  } else {
    return Status::unsupported("Constant: attribute " + quote(A.name()) + " is not supported");
  }
  T.set_name(N.output(0));
  return T;
}

/// The model's one node that is not a Constant; the tensors of its
/// Constant nodes, which may make the gather's inputs (as exporters write a
/// fixed index), are added to \p Constants, read as initializers are.
Expected<const onnx::NodeProto *> gatherNodeOf(const onnx::GraphProto &G,
                                               std::vector<onnx::TensorProto> &Constants) {
  const onnx::NodeProto *Gather = nullptr;
  int Others = 0;
  for (const onnx::NodeProto &N : G.node()) {
    if (N.op_type() == "Constant" && (N.domain().empty() || N.domain() == "ai.onnx")) {
      Expected<onnx::TensorProto> T = constantValue(N);
      if (!T)
        return T.status();
      Constants.push_back(T.take());
    } else {
      Gather = &N;
      ++Others;
    }
  }
  if (Others != 1)
    return Status::unsupported("the model has " + std::to_string(Others) +
                               " nodes besides Constant ones; onnx-test runs models of one "
                               "gather node");
  return Gather;
}

Expected<GatherNode> readNode(const fs::path &Dir) {
  onnx::ModelProto Model;
  if (Status S = readProto(Dir / "model.onnx", Model); !S)
    return S;
  const onnx::GraphProto &G = Model.graph();
  std::vector<onnx::TensorProto> Constants(G.initializer().begin(), G.initializer().end());
  Expected<const onnx::NodeProto *> Gather = gatherNodeOf(G, Constants);
  if (!Gather)
    return Gather.status();
  const onnx::NodeProto &N = **Gather;
  GatherNode Node;
  const std::string &Op = N.op_type();
  if (!N.domain().empty() && N.domain() != "ai.onnx")
    return Status::unsupported("operator " + quote(N.domain() + "." + Op) +
                               " is not Gather, GatherElements or GatherND");
  if (Op == "Gather")
    Node.Op = OpKind::Gather;
  else if (Op == "GatherElements")
    Node.Op = OpKind::GatherElements;
  else if (Op == "GatherND")
    Node.Op = OpKind::GatherND;
  else
    return Status::unsupported("operator " + quote(Op) +
                               " is not Gather, GatherElements or GatherND");
  const char *AxisName = Node.Op == OpKind::GatherND ? "batch_dims" : "axis";
  for (const onnx::AttributeProto &A : N.attribute()) {
    if (A.name() != AxisName)
      return Status::unsupported(Op + ": attribute " + quote(A.name()) + " is not supported");
    if (A.type() != onnx::AttributeProto::INT)
      return Status::invalidArgument(Op + ": attribute " + quote(A.name()) + " is not an integer");
    Node.Axis = A.i();
  }
  if (N.input_size() != 2 || N.output_size() != 1)
    return Status::invalidArgument(Op + " has " + std::to_string(N.input_size()) + " inputs and " +
                                   std::to_string(N.output_size()) +
                                   " outputs; it takes 2 and gives 1");
  auto Constant = [&](const std::string &Name) {
    return std::find_if(Constants.begin(), Constants.end(),
                        [&](const onnx::TensorProto &T) { return T.name() == Name; });
  };
  // input_K.pb holds the graph's K-th input that is not an initializer.
  std::vector<std::string> Fed;
  for (const onnx::ValueInfoProto &In : G.input())
    if (Constant(In.name()) == Constants.end())
      Fed.push_back(In.name());
  for (int I = 0; I < 2; ++I) {
    const std::string &Name = N.input(I);
    auto It = std::find(Fed.begin(), Fed.end(), Name);
    if (It != Fed.end()) {
      Node.Input[I] = static_cast<int>(It - Fed.begin());
      continue;
    }
    auto Init = Constant(Name);
    if (Init == Constants.end())
      return Status::invalidArgument(Op + ": input " + quote(Name) +
                                     " is neither a graph input, an initializer nor a Constant");
    Expected<OnnxTensor> T = fromProto(*Init);
    if (!T)
      return T.status().withContext("input " + quote(Name));
    Node.Initializer[I] = T.take();
  }
  return Node;
}

/// Runs one data set; an empty string if it passed, else why not.
Expected<std::string> runDataSet(Runtime &RT, const GatherNode &Node, const fs::path &Set) {
  OnnxTensor Operands[2];
  for (int I = 0; I < 2; ++I) {
    if (Node.Initializer[I]) {
      Operands[I] = *Node.Initializer[I];
      continue;
    }
    Expected<OnnxTensor> T = readTensor(Set / ("input_" + std::to_string(Node.Input[I]) + ".pb"));
    if (!T)
      return T.status();
    Operands[I] = T.take();
  }
  Expected<OnnxTensor> Expect = readTensor(Set / "output_0.pb");
  if (!Expect)
    return Expect.status();
  const OnnxTensor &Data = Operands[0], &Indices = Operands[1];
  Expected<OnnxDesc> D = onnxDesc({Node.Op, Data.Desc, Indices.Desc, Node.Axis});
  if (!D)
    return D.status();
  Expected<ValidDesc> V = D->validate(OobPolicy::Check);
  if (!V)
    return V.status();
  const std::vector<uint64_t> &Shape = D->OutputShape;
  if (Shape != Expect->Desc.Sizes || Expect->Desc.Type != Data.Desc.Type)
    return "the output is " + std::string(dataTypeName(Data.Desc.Type)) + shapeString(Shape) +
           " but output_0.pb is " + dataTypeName(Expect->Desc.Type) +
           shapeString(Expect->Desc.Sizes);
  Expected<Kernel> K = RT.compile(*V);
  if (!K)
    return K.status();
  OnnxTensor Got = Data;
  Got.Desc = Expect->Desc;
  Got.Bytes.assign(Expect->Bytes.size(), 0);
  if (Status S = K->run(Data.Bytes.data(), Indices.Bytes.data(), Got.Bytes.data()); !S)
    return S;
  const unsigned Bytes = dataTypeSize(Data.Desc.Type);
  for (uint64_t I = 0; I * Bytes < Got.Bytes.size(); ++I) {
    const std::string G = elementText(Got, I), E = elementText(*Expect, I);
    const bool Same =
        Data.IsString ? G == E
                      : std::memcmp(&Got.Bytes[I * Bytes], &Expect->Bytes[I * Bytes], Bytes) == 0;
    if (!Same)
      return "output" + coordinate(I, Shape) + ": got " + G + ", expected " + E;
  }
  return std::string();
}

/// Runs one test directory; an empty string if it passed.
std::string runDirectory(Runtime &RT, const fs::path &Dir) {
  std::error_code Err;
  if (!fs::is_directory(Dir, Err))
    return "not a directory";
  Expected<GatherNode> Node = readNode(Dir);
  if (!Node)
    return Node.status().message();
  std::vector<fs::path> Sets;
  for (fs::directory_iterator It(Dir, Err), End; !Err && It != End; It.increment(Err))
    if (It->path().filename().string().rfind("test_data_set_", 0) == 0)
      Sets.push_back(It->path());
  if (Err)
    return Err.message();
  if (Sets.empty())
    return "no test_data_set_N directory";
  std::sort(Sets.begin(), Sets.end());
  for (const fs::path &Set : Sets) {
    Expected<std::string> Outcome = runDataSet(RT, *Node, Set);
    std::string Why = Outcome ? *Outcome : Outcome.status().message();
    if (!Why.empty())
      return Set.filename().string() + ": " + Why;
  }
  return std::string();
}

} // namespace

int runOnnxTest(const std::vector<std::string> &Dirs, Status &Error) {
  RuntimeOptions Options;
  Options.Threads = 1;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  if (!RT) {
    Error = RT.status();
    return 1;
  }
  unsigned Passed = 0, Failed = 0;
  for (const std::string &Dir : Dirs) {
    fs::path Path(Dir);
    std::string Name = (Path.has_filename() ? Path : Path.parent_path()).filename().string();
    // A name with control characters (an escape sequence) is printed quoted
    // and escaped, never raw to the terminal.
    if (std::any_of(Name.begin(), Name.end(),
                    [](char C) { return static_cast<unsigned char>(C) < 0x20 || C == 0x7f; }))
      Name = quote(Name);
    const std::string Why = runDirectory(**RT, Path);
    if (Why.empty()) {
      ++Passed;
      std::printf("PASS %s\n", Name.c_str());
    } else {
      ++Failed;
      std::printf("FAIL %s: %s\n", Name.c_str(), Why.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("%u passed, %u failed\n", Passed, Failed);
  return Failed == 0 ? 0 : 1;
}

} // namespace gatherjit
