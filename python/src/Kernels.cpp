//===- python/src/Kernels.cpp - Compiled kernels -------------------------===//
//
// One Runtime per process (and per CUDA device), descriptors built as the
// ONNX builders do, kernels run with the GIL released. Errors are Python
// exceptions: ValueError for descriptors, shapes and dtypes, IndexError for
// an out-of-range index, RuntimeError for what gatherjit itself failed at.
//
//===----------------------------------------------------------------------===//

#include "Native.h"
#include "gatherjit/Aot.h"
#include "gatherjit/DescriptorJson.h"
#include "gatherjit/NpyDtype.h"

#include <map>
#include <mutex>

namespace gatherjit::binding {

/// Raises \p S as the Python exception its code calls for.
[[noreturn]] void raise(const Status &S) {
  switch (S.code()) {
  case ErrorCode::IndexOutOfRange: {
    // The position lets the package name the index in the caller's shape.
    py::object E = py::reinterpret_borrow<py::object>(PyExc_IndexError)(S.message());
    E.attr("position") = S.position().value_or(0);
    PyErr_SetObject(PyExc_IndexError, E.ptr());
    throw py::error_already_set();
  }
  case ErrorCode::InvalidArgument:
  case ErrorCode::Unsupported:
    throw py::value_error(S.message());
  default:
    throw std::runtime_error(S.message());
  }
}

/// The options the process's runtime is created with (see set_threads).
RuntimeOptions &runtimeOptions() {
  static RuntimeOptions Options = [] {
    RuntimeOptions O;
    O.CacheDir = defaultCacheDir(); // The command line's, shared with it.
    return O;
  }();
  return Options;
}
std::atomic<bool> RuntimeCreated{false};

/// The options a runtime of the process is created with: runtimeOptions(),
/// the cache directory bounded by GATHERJIT_CACHE_LIMIT_MIB as the command
/// line's is (a ValueError naming the variable where it is no size).
static RuntimeOptions creationOptions() {
  RuntimeOptions O = runtimeOptions();
  O.CacheDirLimit = take(defaultCacheLimit(O.CacheDirLimit));
  return O;
}

/// The process's runtime, created on first use.
Runtime &runtime() {
  static std::once_flag Once;
  static std::unique_ptr<Runtime> RT;
  std::call_once(Once, [] {
    RT = take(Runtime::create(creationOptions()));
    RuntimeCreated = true;
  });
  return *RT;
}

/// The process's runtime for CUDA device \p Device ("cuda" or "cuda:N"),
/// created on its first use with the process's options. "cuda" is device
/// 0's, so that its kernels and stats() are those of "cuda:0".
Runtime &deviceRuntime(const std::string &Device) {
  static std::mutex Mutex;
  static std::map<std::string, std::unique_ptr<Runtime>> Runtimes;
  std::lock_guard<std::mutex> Lock(Mutex);
  std::unique_ptr<Runtime> &RT = Runtimes[Device == "cuda" ? "cuda:0" : Device];
  if (!RT) {
    RuntimeOptions O = creationOptions();
    O.Device = Device;
    RT = take(Runtime::create(O));
    RuntimeCreated = true;
  }
  return *RT;
}

std::string stringArg(py::handle Value, const char *Name, const char *Takes) {
  if (!PyUnicode_Check(Value.ptr()))
    throw py::type_error(std::string(Name) + " must be a str: " + Takes + "; got " +
                         Py_TYPE(Value.ptr())->tp_name);
  return Value.cast<std::string>();
}

std::string pathArg(py::handle Value, const char *Name) {
  py::object Path = py::reinterpret_steal<py::object>(PyOS_FSPath(Value.ptr()));
  if (!Path) {
    PyErr_Clear();
    throw py::type_error(std::string(Name) + " must be a path (str or os.PathLike); got " +
                         Py_TYPE(Value.ptr())->tp_name);
  }
  if (PyBytes_Check(Path.ptr()))
    return std::string(PyBytes_AS_STRING(Path.ptr()), PyBytes_GET_SIZE(Path.ptr()));
  return Path.cast<std::string>();
}

namespace {

OobPolicy policyOf(const std::string &Mode) {
  if (Mode == "raise")
    return OobPolicy::Check;
  if (Mode == "clip")
    return OobPolicy::Clip;
  if (Mode == "clamp")
    return OobPolicy::Clamp;
  throw py::value_error("mode = '" + Mode +
                        "' is not 'raise' (an error naming the first out-of-range index), "
                        "'clip' (numpy's: too large reads the last element, negative the "
                        "first), 'clamp' (DirectML's: negative indices wrap once, then "
                        "every index is clamped) or, for the functions, 'wrap' (numpy's: "
                        "modulo the axis's size)");
}

/// True if \p T's strides are those of its sizes packed (C order), on the
/// dimensions that step (tensorOf gives the others a stride of 0).
bool isPacked(const TensorDesc &T) {
  const std::vector<uint64_t> Packed = packedStrides(T.Sizes);
  for (size_t D = 0; D < T.rank(); ++D)
    if (T.Sizes[D] > 1 && (*T.Strides)[D] != Packed[D])
      return false;
  return true;
}

/// The operator a Python op name names.
OpKind onnxOp(const std::string &Op) {
  if (Op == "gather_elements")
    return OpKind::GatherElements;
  if (Op == "gather")
    return OpKind::Gather;
  if (Op == "gather_nd")
    return OpKind::GatherND;
  throw py::value_error("op = '" + Op + "' is not 'gather_elements', 'gather' or 'gather_nd'");
}

uint64_t elementsBefore(const TensorDesc &T, size_t End) {
  uint64_t N = 1;
  for (size_t D = 0; D < End; ++D)
    N *= T.Sizes[D];
  return N;
}

uint64_t elementsOf(const TensorDesc &T) { return elementsBefore(T, T.rank()); }

/// True if an index of \p V selects along a dimension of size 0: numpy's
/// clip has no element to clip to there.
bool gathersFromEmptyAxis(const ValidDesc &V) {
  if (V.Op != OpKind::GatherND)
    return V.axisSize() == 0;
  for (unsigned C = 0; C < V.tupleSize(); ++C)
    if (V.Input.Sizes[V.firstTupleDim() + C] == 0)
      return true;
  return false;
}

} // namespace

std::optional<PyEpilogue> epilogueOf(const std::optional<py::tuple> &T) {
  if (!T)
    return std::nullopt;
  if (T->size() != 6)
    throw py::value_error(
        "epilogue: expected (source, function, file_name, params, row_out, checked)");
  PyEpilogue P;
  P.E.Source = (*T)[0].cast<std::string>();
  P.E.Function = (*T)[1].cast<std::string>();
  P.E.FileName = (*T)[2].cast<std::string>();
  const std::string Params = (*T)[3].cast<std::string>(); // bytes
  P.E.Params.assign(Params.begin(), Params.end());
  P.RowOut = (*T)[4].cast<uint64_t>();
  P.E.Checked = (*T)[5].cast<bool>();
  return P;
}

std::shared_ptr<PyKernel> compileFor(const std::string &Op, TensorDesc Data, TensorDesc Indices,
                                     int64_t Axis, const std::string &Mode,
                                     const py::dtype &DataType,
                                     const std::optional<TensorDesc> &OutT,
                                     const std::optional<PyEpilogue> &E, Runtime *On) {
  Runtime &RT = On ? *On : runtime();
  const OobPolicy Policy = policyOf(Mode);
  OnnxDesc D = take(onnxDesc({onnxOp(Op), std::move(Data), std::move(Indices), Axis}));
  if (OutT && !E) {
    // The output as the caller's array lays it out, padded as the
    // descriptor's tensors are (a fused output is checked against the
    // kernel's below).
    TensorDesc &Output = D.output();
    if (OutT->Sizes != D.OutputShape)
      throw py::value_error("out has shape " + tupleString(OutT->Sizes) + "; the result's is " +
                            tupleString(D.OutputShape));
    if (OutT->Type != Output.Type || OutT->elementBytes() != Output.elementBytes()) {
      // numpy's names: the result's dtype is the data's (no epilogue).
      throwOutDtype("out has dtype " + dtypeString(*OutT) + "; the result's is " +
                    dtypeString(DataType));
    }
    std::vector<uint64_t> Strides = *OutT->Strides;
    Strides.insert(Strides.begin(), Output.rank() - Strides.size(), 0);
    Output.Strides = std::move(Strides);
  }
  ValidDesc Plain = take(D.validate(Policy));
  if (Plain.outputElements() != 0 && Policy == OobPolicy::Clip && gathersFromEmptyAxis(Plain))
    throw py::index_error("cannot do a non-empty take from an empty axis (mode='clip')");
  // numpy's take meets no index where the data's dimensions before the
  // axis hold nothing.
  const bool ChecksIndicesAlone =
      Op != "gather_elements" && Policy == OobPolicy::Check && !E && Plain.outputElements() == 0 &&
      elementsOf(Plain.Indices) != 0 &&
      elementsBefore(Plain.Input,
                     Plain.Op == OpKind::GatherND ? Plain.firstTupleDim() : Plain.Axis) != 0;
  Expected<Kernel> K = E ? RT.compile(Plain, E->E, E->RowOut) : RT.compile(std::move(Plain));
  auto P = std::make_shared<PyKernel>(take(std::move(K)), Op);
  P->ChecksIndicesAlone = ChecksIndicesAlone;
  P->OutShape.assign(D.OutputShape.begin(), D.OutputShape.end());
  P->OutType = DataType;
  // An epilogue computes on values: its kernel reads them in the
  // machine's order (the function forms copy other data so).
  P->InType = E ? DataType.attr("newbyteorder")("=").cast<py::dtype>() : DataType;
  if (E) {
    const TensorDesc &Fused = P->kernel().desc().Output;
    if (!P->OutShape.empty())
      P->OutShape.back() = static_cast<py::ssize_t>(Fused.Sizes.back());
    P->OutType = py::dtype(npyDescr(Fused.Type));
    if (OutT && (OutT->Sizes != std::vector<uint64_t>(P->OutShape.begin(), P->OutShape.end()) ||
                 OutT->Type != Fused.Type || !isPacked(*OutT)))
      throw py::value_error(
          "out must be a C-contiguous " + dtypeString(P->OutType) + " array of shape " +
          tupleString(std::vector<uint64_t>(P->OutShape.begin(), P->OutShape.end())) +
          " (the epilogue's output)");
  }
  return P;
}

/// A kernel for a DirectML-style descriptor in `gatherjit run`'s JSON.
/// \p E, if given, is fused into it.
std::shared_ptr<PyKernel> compileDescriptor(const std::string &Json,
                                            const std::optional<py::tuple> &Fused) {
  Expected<JsonDescriptor> D = parseDescriptorJson(Json);
  if (!D)
    raise(D.status());
  ValidDesc V = take(D->validate());
  const std::optional<PyEpilogue> E = epilogueOf(Fused);
  Kernel K = take(E ? runtime().compile(V, E->E, E->RowOut) : runtime().compile(V));
  const TensorDesc &Out = K.desc().Output;
  auto P = std::make_shared<PyKernel>(std::move(K), opKindName(V.Op));
  P->OutShape.assign(Out.Sizes.begin(), Out.Sizes.end());
  P->OutType = py::dtype(npyDescr(Out.Type)); // Descriptor JSON has no OPAQUE.
  P->InType = py::dtype(npyDescr(V.Input.Type));
  return P;
}
py::object PyKernel::call(py::handle DataObj, py::handle IndicesObj, py::handle OutObj) {
  const ValidDesc &V = K.desc();
  const bool Arrays = py::isinstance<py::array>(DataObj);
  if (!Arrays)
    if (std::optional<py::object> Got = callOnTensors(DataObj, IndicesObj, OutObj))
      return std::move(*Got);
  py::array Data = operand(DataObj, "data", false);
  py::array Indices = nativeIndices(operand(IndicesObj, "indices", false));
  expectLayout(Data, V.Input, "data", Seen[0], &InType);
  expectLayout(Indices, V.Indices, "indices", Seen[1]);
  py::array Result = OutObj.is_none() ? newOutput() : operand(OutObj, "out", true);
  if (!Result.writeable())
    throw py::value_error("out is read-only");
  if (!OutObj.is_none())
    checkOutByteOrder(Result, V.Epilogue.Kind == EpilogueKind::None
                                  ? std::optional<py::dtype>(Data.dtype())
                                  : std::nullopt);
  expectLayout(Result, V.Output, "out", Seen[2]);
  run(Data, Indices, Result);
  if (!Arrays)
    rememberTensorDtypes(DataObj, IndicesObj, OutObj, Data, Indices, Result);
  if (!OutObj.is_none())
    return py::reinterpret_borrow<py::object>(OutObj);
  return Arrays ? Result : package("_result")(Result, DataObj);
}

std::optional<py::object> PyKernel::callOnTensors(py::handle DataObj, py::handle IndicesObj,
                                                  py::handle OutObj) {
  if (!TorchSeen[0])
    return std::nullopt; // No call on tensors has run yet: the general path checks the dtypes.
  const ValidDesc &V = K.desc();
  const std::optional<TorchTensor> Data = readTorchTensor(DataObj, GradRule::Ignore);
  if (!Data || !Data->Dtype.is(TorchSeen[0]) || !Data->hasLayout(V.Input))
    return std::nullopt;
  const std::optional<TorchTensor> Indices = readTorchTensor(IndicesObj, GradRule::Ignore);
  if (!Indices || !Indices->Dtype.is(TorchSeen[1]) || !Indices->hasLayout(V.Indices))
    return std::nullopt;
  const auto *In = reinterpret_cast<const void *>(Data->Pointer);
  const auto *Idx = reinterpret_cast<const void *>(Indices->Pointer);
  if (OutObj.is_none())
    return newTensorResult(*this, In, Idx, DataObj);
  const std::optional<TorchTensor> Out = readTorchTensor(OutObj, GradRule::Refuse);
  if (!Out || !TorchSeen[2] || !Out->Dtype.is(TorchSeen[2]) || !Out->hasLayout(V.Output))
    return std::nullopt;
  runInto(In, Idx, reinterpret_cast<void *>(Out->Pointer));
  return py::reinterpret_borrow<py::object>(OutObj);
}

void PyKernel::rememberTensorDtypes(py::handle DataObj, py::handle IndicesObj, py::handle OutObj,
                                    const py::array &Data, const py::array &Indices,
                                    const py::array &Out) {
  auto InPlace = [](py::handle T, const py::array &View) -> py::object {
    const std::optional<TorchTensor> R = readTorchTensor(T, GradRule::Ignore);
    return R && R->Pointer == reinterpret_cast<uintptr_t>(View.data()) ? R->Dtype : py::object();
  };
  py::object D = InPlace(DataObj, Data), I = InPlace(IndicesObj, Indices);
  if (!D || !I)
    return;
  if (!OutObj.is_none()) {
    py::object O = InPlace(OutObj, Out);
    if (!O)
      return;
    TorchSeen[2] = std::move(O);
  }
  TorchSeen[0] = std::move(D);
  TorchSeen[1] = std::move(I);
}

void PyKernel::expectLayout(const py::array &A, const TensorDesc &T, const char *Name,
                            DtypeId &Seen, const py::dtype *Order) {
  // The descriptor may pad with leading ones; compare what remains.
  const size_t Pad = T.rank() - static_cast<size_t>(A.ndim());
  bool Same = padsRank(T, static_cast<size_t>(A.ndim())) && itemSize(A) == T.elementBytes();
  for (py::ssize_t D = 0; Same && D < A.ndim(); ++D) {
    const uint64_t Size = T.Sizes[Pad + D];
    Same = static_cast<uint64_t>(A.shape(D)) == Size &&
           (strideUnused(A, D) ||
            static_cast<uint64_t>(A.strides(D)) == (*T.Strides)[Pad + D] * itemSize(A));
  }
  if (Same) {
    const DtypeId Id = DtypeId::of(A.dtype());
    if (!(Id == Seen)) {
      if (Order) // Seen holds the byte order too: checked once per dtype.
        checkDataByteOrder(A, *Order);
      unsigned Opaque;
      Same = dataTypeOf(A.dtype(), Opaque) == T.Type;
      if (Same)
        Seen = Id;
    }
  }
  if (Same)
    return;
  // The kernel's layout at the array's rank where its padding allows.
  const size_t Skip = padsRank(T, static_cast<size_t>(A.ndim())) ? Pad : 0;
  const std::vector<uint64_t> Sizes(T.Sizes.begin() + Skip, T.Sizes.end()),
      Strides(T.Strides->begin() + Skip, T.Strides->end());
  throw py::value_error(
      std::string(Name) + ": the array's shape, dtype or strides differ from the kernel's (" +
      dtypeString(T) + " " + tupleString(Sizes) + ", strides " + tupleString(Strides) +
      " elements): the array is " + layoutString(A) + "; compile a kernel for it");
}

std::string PyKernel::layoutString(const py::array &A) {
  const auto Item = static_cast<py::ssize_t>(itemSize(A));
  std::vector<uint64_t> Shape;
  std::vector<py::ssize_t> Strides;
  bool Whole = Item > 0; // Every stride a whole number of elements.
  for (py::ssize_t D = 0; D < A.ndim(); ++D) {
    Shape.push_back(static_cast<uint64_t>(A.shape(D)));
    Strides.push_back(A.strides(D));
    Whole = Whole && A.strides(D) >= 0 && A.strides(D) % Item == 0;
  }
  if (Whole)
    for (py::ssize_t &S : Strides)
      S /= Item;
  return dtypeString(A.dtype()) + " " + tupleString(Shape) + ", strides " + tupleString(Strides) +
         (Whole ? " elements" : " bytes");
}

void PyKernel::saveObject(const std::string &Path, const std::string &Name,
                          const std::string &Header) {
  AotResult R =
      take(compileAot({{Name, K.desc()}}, {}, OptLevel::O2, Header.empty() ? Name + ".h" : Header));
  if (Status S = writeAot(R, Path, Header); !S)
    raise(S);
}

} // namespace gatherjit::binding
