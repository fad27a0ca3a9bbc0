//===- python/src/module.cpp - gatherjit._native -------------------------===//
//
// The Python binding of the C++ API: arrays in through the buffer protocol
// (numpy and anything exporting buffers, with their strides: no copy of a
// view), descriptors built as the ONNX builders do, one Runtime per process,
// kernels called with the GIL released. Errors are Python exceptions:
// ValueError for descriptors, shapes and dtypes, IndexError for an
// out-of-range index, RuntimeError for what gatherjit itself failed at.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Aot.h"
#include "gatherjit/DescriptorJson.h"
#include "gatherjit/NpyDtype.h"
#include "gatherjit/Onnx.h"
#include "gatherjit/Runtime.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <bit>
#include <array>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace py = pybind11;
using namespace gatherjit;

namespace {

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

template <typename T> T take(Expected<T> E) {
  if (!E)
    raise(E.status());
  return E.take();
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

/// The process's runtime, created on first use.
Runtime &runtime() {
  static std::once_flag Once;
  static std::unique_ptr<Runtime> RT;
  std::call_once(Once, [] {
    RT = take(Runtime::create(runtimeOptions()));
    RuntimeCreated = true;
  });
  return *RT;
}

/// The process's runtime for CUDA device \p Device ("cuda" or "cuda:N"),
/// created on its first use with the process's options.
Runtime &deviceRuntime(const std::string &Device) {
  static std::mutex Mutex;
  static std::map<std::string, std::unique_ptr<Runtime>> Runtimes;
  std::lock_guard<std::mutex> Lock(Mutex);
  std::unique_ptr<Runtime> &RT = Runtimes[Device];
  if (!RT) {
    RuntimeOptions O = runtimeOptions();
    O.Device = Device;
    RT = take(Runtime::create(O));
    RuntimeCreated = true;
  }
  return *RT;
}

/// gatherjit's element type for a numpy dtype, decoded as a .npy file's
/// dtype is. numpy's raw void of any width other than bfloat16's two bytes
/// is moved whole too (a .npy file's must be bfloat16).
DataType dataTypeOf(const py::dtype &D, unsigned &OpaqueBytes) {
  OpaqueBytes = 0;
  if (D.kind() == 'V' && D.itemsize() != 2 && D.itemsize() > 0) {
    OpaqueBytes = static_cast<unsigned>(D.itemsize());
    return DataType::Opaque;
  }
  Expected<NpyDtype> T = parseNpyDescr(D.attr("str").cast<std::string>());
  if (!T)
    throw py::value_error("dtype " + py::repr(static_cast<const py::object &>(D)).cast<std::string>() +
                          " is not supported by gatherjit: " + T.status().message());
  if (T->Type == DataType::Opaque)
    OpaqueBytes = T->ElementBytes;
  return T->Type;
}

/// \p Indices in the machine's byte order: a big-endian array is copied
/// (the kernels read indices as native integers; data is moved unread).
py::array nativeIndices(py::array Indices) {
  // 8- and 16-bit indices (numpy and torch take them; the kernels read 32
  // and 64 bits) are widened to int32, which holds all their values.
  const py::dtype T = Indices.dtype();
  if ((T.kind() == 'i' || T.kind() == 'u') && T.itemsize() < 4)
    return Indices.attr("astype")(py::dtype("int32"));
  const char Order = Indices.dtype().byteorder();
  const char Native = std::endian::native == std::endian::little ? '<' : '>';
  if (Order == '=' || Order == '|' || Order == Native)
    return Indices;
  return Indices.attr("astype")(Indices.dtype().attr("newbyteorder")("="));
}

/// Refuses an \p Out whose byte order is not \p Want's (the data's dtype,
/// whose bytes the kernel moves unchanged; the machine's order where
/// \p Want is unset, for an epilogue's output): its values would be read
/// back as other numbers.
void checkOutByteOrder(const py::array &Out, const std::optional<py::dtype> &Want) {
  const char Native = std::endian::native == std::endian::little ? '<' : '>';
  auto Order = [&](const py::dtype &D) {
    const char C = D.byteorder();
    return C == '=' ? Native : C;
  };
  const char Have = Order(Out.dtype()), Need = Want ? Order(*Want) : Native;
  if (Have == '|' || Need == '|' || Have == Need)
    return;
  throw py::value_error("out has dtype " + std::string(py::str(Out.dtype())) + " in " +
                        (Have == '<' ? "little" : "big") + "-endian order, the result's is " +
                        (Need == '<' ? "little" : "big") +
                        "-endian: gatherjit does not swap bytes; pass an out of the result's "
                        "dtype");
}

/// True if dimension \p D of \p A steps over whole elements, forwards (or
/// does not step at all): a stride a TensorDesc can say.
bool describableStride(const py::array &A, py::ssize_t D) {
  const py::ssize_t S = A.strides(D);
  return A.shape(D) <= 1 || (S >= 0 && S % static_cast<py::ssize_t>(A.itemsize()) == 0);
}

/// A tensor viewing \p A's memory: its sizes and its strides in elements.
TensorDesc tensorOf(const py::array &A, const char *Name) {
  TensorDesc T;
  T.Type = dataTypeOf(A.dtype(), T.OpaqueBytes);
  const size_t Item = A.itemsize();
  T.Strides.emplace();
  for (py::ssize_t D = 0; D < A.ndim(); ++D) {
    T.Sizes.push_back(static_cast<uint64_t>(A.shape(D)));
    if (A.shape(D) <= 1) {
      T.Strides->push_back(0);
      continue;
    }
    if (!describableStride(A, D))
      throw py::value_error(std::string(Name) + ": strides " +
                            std::string(py::str(py::cast(std::vector<py::ssize_t>(
                                A.strides(), A.strides() + A.ndim())))) +
                            " are negative or not a multiple of the itemsize " +
                            std::to_string(Item) + "; pass a copy (numpy.ascontiguousarray)");
    T.Strides->push_back(static_cast<uint64_t>(A.strides(D)) / Item);
  }
  return T;
}

/// \p A as an array viewing the same memory, or a C-ordered copy when its
/// strides cannot be described (negative, or not whole elements).
py::array viewOrCopy(py::array A) {
  for (py::ssize_t D = 0; D < A.ndim(); ++D)
    if (!describableStride(A, D))
      return py::array::ensure(A, py::array::c_style | py::array::forcecast);
  return A;
}

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

/// A function of the gatherjit package's Python half, looked up under the
/// GIL and kept for the life of the process (never destroyed: it would
/// outlive the interpreter). std::map's nodes stay put if an import lets
/// another thread add one.
py::object &package(const char *Name) {
  static std::map<std::string, py::object *> Functions;
  py::object *&F = Functions[Name];
  if (!F)
    F = new py::object(py::module_::import("gatherjit").attr(Name));
  return *F;
}

/// \p X as a numpy array over the same memory (see gatherjit._array).
py::array operand(py::handle X, const char *Name, bool Writable) {
  if (py::isinstance<py::array>(X))
    return py::reinterpret_borrow<py::array>(X);
  return package("_array")(X, Name, Writable).cast<py::array>();
}

/// Outputs from this size on are written with the GIL released.
constexpr py::ssize_t GilFreeBytes = 16 << 10;

/// A compiled kernel and the layouts it takes.
class PyKernel {
public:
  PyKernel(Kernel K, std::string Op) : K(std::move(K)), Op(std::move(Op)) {
    OutBytes = this->K.desc().outputElements() * this->K.desc().Output.elementBytes();
  }

  /// Checks \p Data, \p Indices and \p Out against the kernel's tensors
  /// (sizes, types and strides) and runs it without the GIL. numpy arrays
  /// are taken as they are; anything else goes through gatherjit._array
  /// (PyTorch tensors, DLPack), and PyTorch data gives a PyTorch result.
  py::object call(py::handle DataObj, py::handle IndicesObj, py::handle OutObj) {
    const ValidDesc &V = K.desc();
    const bool Arrays = py::isinstance<py::array>(DataObj);
    py::array Data = operand(DataObj, "data", false);
    py::array Indices = nativeIndices(operand(IndicesObj, "indices", false));
    expectLayout(Data, V.Input, "data", Seen[0]);
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
    if (!OutObj.is_none())
      return py::reinterpret_borrow<py::object>(OutObj);
    return Arrays ? Result : package("_result")(Result, DataObj);
  }

  /// Runs on arrays the kernel was compiled for (no layout check).
  py::object run(const py::array &Data, const py::array &Indices, std::optional<py::array> Out) {
    py::array Result = Out ? *Out : newOutput();
    if (!Result.writeable())
      throw py::value_error("out is read-only");
    runInto(Data.data(), Indices.data(), Result.mutable_data());
    return Result;
  }

  /// Runs on buffers of the kernel's layouts; raises its error.
  void runInto(const void *In, const void *Idx, void *Dst) {
    Status S = Status::ok();
    {
      // Other Python threads run meanwhile, unless the kernel is done
      // sooner than the GIL would change hands (a few KiB written).
      std::optional<py::gil_scoped_release> Release;
      if (OutBytes >= GilFreeBytes)
        Release.emplace();
      S = K.run(In, Idx, Dst);
    }
    if (!S)
      raise(S);
  }

  std::string ir() { return take(runtime().optimizedIR(K.desc())); }
  std::string assembly() { return take(runtime().assembly(K.desc())); }

  /// Compiles the kernel ahead of time into an object file (and its C
  /// header if \p Header is given), for the host, under the C name \p Name.
  void saveObject(const std::string &Path, const std::string &Name, const std::string &Header) {
    AotResult R = take(compileAot({{Name, K.desc()}}, {}, OptLevel::O2,
                                  Header.empty() ? Name + ".h" : Header));
    if (Status S = writeAot(R, Path, Header); !S)
      raise(S);
  }

  /// The output's shape as the ONNX operator gives it (leading ones that
  /// pad the descriptor dropped to the data's and indices' ranks).
  std::vector<py::ssize_t> outputShape() const { return OutShape; }
  const Kernel &kernel() const { return K; }
  const std::string &op() const { return Op; }

  std::vector<py::ssize_t> OutShape;
  py::dtype OutType = py::dtype("float32");
  /// The output's bytes (the GIL is released from GilFreeBytes on).
  uint64_t OutBytes = 0;
  /// How the data and indices were described, to pickle the kernel.
  py::tuple Spec;

  /// A new array for the output.
  py::array newOutput() { return py::array(OutType, OutShape); }

private:

  /// A numpy dtype as its type number, size and byte order: what a call
  /// compares (decoding the dtype again would cost more than a tiny run).
  struct DtypeId {
    int Num = -1;
    py::ssize_t Size = 0;
    char Order = 0;
    static DtypeId of(const py::dtype &D) { return {D.num(), D.itemsize(), D.byteorder()}; }
    bool operator==(const DtypeId &) const = default;
  };
  /// The dtypes of data, indices and out seen to be the kernel's.
  DtypeId Seen[3];

  static void expectLayout(const py::array &A, const TensorDesc &T, const char *Name,
                           DtypeId &Seen) {
    // The descriptor may pad with leading ones; compare what remains.
    const size_t Pad = T.rank() - static_cast<size_t>(A.ndim());
    bool Same = static_cast<size_t>(A.ndim()) <= T.rank() && A.itemsize() == T.elementBytes();
    for (py::ssize_t D = 0; Same && D < A.ndim(); ++D) {
      const uint64_t Size = T.Sizes[Pad + D];
      Same = static_cast<uint64_t>(A.shape(D)) == Size &&
             (Size <= 1 ||
              static_cast<uint64_t>(A.strides(D)) == (*T.Strides)[Pad + D] * A.itemsize());
    }
    if (Same) {
      const DtypeId Id = DtypeId::of(A.dtype());
      if (!(Id == Seen)) {
        unsigned Opaque;
        Same = dataTypeOf(A.dtype(), Opaque) == T.Type;
        if (Same)
          Seen = Id;
      }
    }
    if (!Same)
      throw py::value_error(std::string(Name) + ": the array's shape, dtype or strides differ "
                            "from the kernel's (" + dataTypeName(T.Type) +
                            shapeString(T.Sizes) + " strides " +
                            shapeString(*T.Strides) + " elements); compile a kernel for it");
  }

  Kernel K;
  std::string Op;
};

/// An epilogue from Python: (source, function, file name, parameter bytes,
/// row_out, checked), as gatherjit.Epilogue passes it.
struct PyEpilogue {
  Epilogue E;
  uint64_t RowOut = 0;
};

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

/// \p OutT, if given, is the output array's layout (any strides).
/// \p E, if given, is fused into the kernel: the output then takes its OUT
/// type (and a row epilogue's row length) and is packed.
std::shared_ptr<PyKernel> compileFor(const std::string &Op, TensorDesc Data, TensorDesc Indices,
                                     int64_t Axis, const std::string &Mode,
                                     const py::dtype &DataType,
                                     const std::optional<TensorDesc> &OutT = std::nullopt,
                                     const std::optional<PyEpilogue> &E = std::nullopt,
                                     Runtime *On = nullptr) {
  Runtime &RT = On ? *On : runtime();
  const OobPolicy Policy = policyOf(Mode);
  OnnxDesc D = take(onnxDesc({onnxOp(Op), std::move(Data), std::move(Indices), Axis}));
  if (OutT && !E) {
    // The output as the caller's array lays it out, padded as the
    // descriptor's tensors are (a fused output is checked against the
    // kernel's below).
    TensorDesc &Output = D.output();
    if (OutT->Sizes != D.OutputShape)
      throw py::value_error("out has shape " + shapeString(OutT->Sizes) + "; the result's is " +
                            shapeString(D.OutputShape));
    if (OutT->Type != Output.Type || OutT->elementBytes() != Output.elementBytes())
      throw py::value_error(std::string("out has dtype ") + dataTypeName(OutT->Type) +
                            "; the result's is " + dataTypeName(Output.Type));
    std::vector<uint64_t> Strides = *OutT->Strides;
    Strides.insert(Strides.begin(), Output.rank() - Strides.size(), 0);
    Output.Strides = std::move(Strides);
  }
  ValidDesc Plain = take(D.validate(Policy));
  Expected<Kernel> K = E ? RT.compile(Plain, E->E, E->RowOut) : RT.compile(Plain);
  auto P = std::make_shared<PyKernel>(take(std::move(K)), Op);
  P->OutShape.assign(D.OutputShape.begin(), D.OutputShape.end());
  P->OutType = DataType;
  if (E) {
    const TensorDesc &Fused = P->kernel().desc().Output;
    if (!P->OutShape.empty())
      P->OutShape.back() = static_cast<py::ssize_t>(Fused.Sizes.back());
    P->OutType = py::dtype(npyDescr(Fused.Type));
    if (OutT && (OutT->Sizes != std::vector<uint64_t>(P->OutShape.begin(), P->OutShape.end()) ||
                 OutT->Type != Fused.Type || !isPacked(*OutT)))
      throw py::value_error("out must be a C-contiguous " + std::string(dataTypeName(Fused.Type)) +
                            " array of shape " +
                            shapeString(std::vector<uint64_t>(P->OutShape.begin(),
                                                              P->OutShape.end())) +
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
  return P;
}

/// A tensor from a (shape, dtype[, strides]) tuple; strides in elements.
TensorDesc tensorFromSpec(const py::tuple &Spec, py::dtype &Type, const char *Name) {
  if (Spec.size() < 2 || Spec.size() > 3)
    throw py::value_error(std::string(Name) + " must be (shape, dtype) or (shape, dtype, strides)");
  TensorDesc T;
  for (py::handle S : Spec[0].cast<py::sequence>())
    T.Sizes.push_back(S.cast<uint64_t>());
  Type = py::dtype::from_args(Spec[1]);
  T.Type = dataTypeOf(Type, T.OpaqueBytes);
  if (Spec.size() == 3 && !Spec[2].is_none())
    T.Strides = Spec[2].cast<std::vector<uint64_t>>();
  return T;
}

/// Appends \p V's bytes to \p Key.
void putInt(std::string &Key, int64_t V) { Key.append(reinterpret_cast<const char *>(&V), sizeof V); }

/// Appends \p A's layout (rank, sizes, strides in bytes, dtype) to \p Key.
void appendLayout(std::string &Key, const py::array &A) {
  auto Put = [&](int64_t V) { putInt(Key, V); };
  Put(A.ndim());
  for (py::ssize_t D = 0; D < A.ndim(); ++D) {
    Put(A.shape(D));
    Put(A.strides(D));
  }
  const py::dtype T = A.dtype();
  Put(T.num());
  Put(T.itemsize());
  Key.push_back(T.byteorder());
}

/// The function forms' kernels by the layouts of their calls, so that a
/// repeated call skips building and validating its descriptor: a front of
/// the runtime's cache, which still holds every kernel a miss here finds.
/// Used under the GIL; emptied when full. Sized for walks over a few
/// thousand shapes (a batch size or sequence length that changes); each
/// entry holds a kernel handle (a few KiB with its state) alive.
std::unordered_map<std::string, std::shared_ptr<PyKernel>> &callKernels() {
  static auto *Kernels = new std::unordered_map<std::string, std::shared_ptr<PyKernel>>();
  return *Kernels;
}
constexpr size_t CallKernelsCapacity = 4096;

/// Keeps \p K in the layout table under \p Key.
void rememberCall(std::string Key, const std::shared_ptr<PyKernel> &K) {
  if (callKernels().size() >= CallKernelsCapacity)
    callKernels().clear();
  callKernels().emplace(std::move(Key), K);
}

/// The start of a layout table key: what the call asks besides its
/// operands' layouts, after \p Source ('a' for numpy arrays, 't' for the
/// torch fast path, whose layouts are spelled differently).
std::string callKey(char Source, const std::string &Op, const std::string &Mode, bool Broadcast,
                    int64_t Axis) {
  std::string Key = Source + Op + '\0' + Mode + '\0' + (Broadcast ? 'b' : 'o');
  putInt(Key, Axis);
  return Key;
}

/// numpy's AxisError (numpy.exceptions' from numpy 1.25, numpy's before).
[[noreturn]] void raiseAxisError(py::handle Axis, py::ssize_t Rank) {
  py::module_ Np = py::module_::import("numpy");
  py::object Type = py::hasattr(Np, "exceptions") && py::hasattr(Np.attr("exceptions"), "AxisError")
                        ? Np.attr("exceptions").attr("AxisError")
                        : Np.attr("AxisError");
  py::object E = Type(py::str(Axis), Rank);
  PyErr_SetObject(Type.ptr(), E.ptr());
  throw py::error_already_set();
}

/// An axis (or batch_dims) given as a Python integer, any size: one beyond
/// int64 becomes a value no array has, so that the range check names it.
int64_t axisValue(py::handle Axis, bool &Overflow) {
  if (!PyLong_Check(Axis.ptr()))
    throw py::type_error(std::string("axis must be an integer, not ") +
                         Py_TYPE(Axis.ptr())->tp_name);
  int Over = 0;
  const long long V = PyLong_AsLongLongAndOverflow(Axis.ptr(), &Over);
  Overflow = Over != 0;
  return Overflow ? std::numeric_limits<int64_t>::min() : V;
}

/// Raises numpy's AxisError for an axis outside a rank-\p Rank array's, or
/// ValueError for a negative or overflowing batch_dims (GatherND's axis).
void checkAxis(const std::string &Op, py::handle AxisObj, int64_t Axis, bool Overflow,
               int64_t Rank) {
  if (Op != "gather_nd" && (Axis < -Rank || Axis >= Rank))
    raiseAxisError(AxisObj, Rank);
  if (Op == "gather_nd" && (Overflow || Axis < 0))
    throw py::value_error("batch_dims = " + std::string(py::str(AxisObj)) +
                          " is negative or too large");
}

/// The kernel for arrays \p Data and \p Indices (cached by the runtime
/// and, without an epilogue, in the layout table), which may be replaced by
/// the copies it needs (unreadable strides, narrow or byte-swapped indices).
/// \p Broadcast: GatherElements' indices and data broadcast as numpy's
/// take_along_axis does; otherwise the indices may be smaller on dimensions
/// other than the axis (ONNX's and torch.gather's rule).
std::shared_ptr<PyKernel> kernelForArrays(const std::string &Op, py::array &Data,
                                          py::array &Indices, py::handle AxisObj,
                                          const std::optional<py::array> &Out,
                                          const std::string &Mode,
                                          const std::optional<py::tuple> &Fused, bool Broadcast) {
  bool Overflow = false;
  const int64_t Axis = axisValue(AxisObj, Overflow);
  if (Out)
    checkOutByteOrder(*Out, Fused ? std::nullopt : std::optional<py::dtype>(Data.dtype()));
  Data = viewOrCopy(Data);
  Indices = nativeIndices(viewOrCopy(Indices));
  // Calls with an epilogue skip the layout table (its key would need the
  // epilogue's text); the runtime's cache still finds their kernels.
  std::string Key;
  if (!Fused) {
    Key = callKey('a', Op, Mode, Broadcast, Axis);
    appendLayout(Key, Data);
    appendLayout(Key, Indices);
    if (Out)
      appendLayout(Key, *Out);
    if (auto It = callKernels().find(Key); It != callKernels().end())
      return It->second;
  }
  // The first call of a layout checks the axis (a later one found its key).
  checkAxis(Op, AxisObj, Axis, Overflow, Data.ndim());
  TensorDesc DataT = tensorOf(Data, "data"), IdxT = tensorOf(Indices, "indices");
  if (Broadcast && Op == "gather_elements" && DataT.rank() == IdxT.rank() && DataT.rank() > 0) {
    // numpy broadcasts the dimensions other than the axis: a size of 1
    // repeats, through a stride of 0 (no copy).
    const int64_t R = DataT.rank(), A = Axis < 0 ? Axis + R : Axis;
    for (int64_t D = 0; D < R; ++D) {
      if (D == A)
        continue;
      uint64_t &DS = DataT.Sizes[D], &IS = IdxT.Sizes[D];
      if (DS == 1 && IS > 1) {
        DS = IS;
        (*DataT.Strides)[D] = 0;
      } else if (IS == 1 && DS > 1) {
        IS = DS;
        (*IdxT.Strides)[D] = 0;
      } else if (IS != DS) {
        throw py::value_error("take_along_axis: data " + shapeString(DataT.Sizes) +
                              " and indices " + shapeString(IdxT.Sizes) +
                              " do not broadcast at dimension " + std::to_string(D));
      }
    }
  }
  std::optional<TensorDesc> OutT;
  if (Out)
    OutT = tensorOf(*Out, "out");
  std::shared_ptr<PyKernel> K =
      compileFor(Op, DataT, IdxT, Axis, Mode, Data.dtype(), OutT, epilogueOf(Fused));
  if (!Key.empty())
    rememberCall(std::move(Key), K);
  return K;
}

/// kernelForArrays' kernel run into \p Out or a new array; mode "wrap"
/// (numpy's: every index modulo its axis's size) through wrapped indices.
py::object gatherArrays(const std::string &Op, py::array Data, py::array Indices,
                        py::handle AxisObj, std::optional<py::array> Out, const std::string &Mode,
                        const std::optional<py::tuple> &Fused, bool Broadcast) {
  if (Mode == "wrap")
    return gatherArrays(Op, Data, package("_wrapped")(Op, Data, Indices, AxisObj), AxisObj, Out,
                        "raise", Fused, Broadcast);
  std::shared_ptr<PyKernel> K =
      kernelForArrays(Op, Data, Indices, AxisObj, Out, Mode, Fused, Broadcast);
  return K->run(Data, Indices, Out);
}

/// A CPU tensor's layout appended to \p Key and its data pointer, read
/// through the tensor's attributes (no DLPack or numpy round trip), or
/// false for a tensor the fast path does not take (on another device, or an
/// output that requires grad, which the general path refuses).
bool tensorLayout(py::handle T, bool IsOut, std::string &Key, uintptr_t &Pointer) {
  static const auto *Names = new std::array<py::str, 6>{
      py::str("is_cpu"), py::str("requires_grad"), py::str("data_ptr"),
      py::str("shape"),  py::str("stride"),        py::str("dtype")};
  const auto &[IsCpu, RequiresGrad, DataPtr, Shape, Stride, Dtype] = *Names;
  if (T.attr(IsCpu).ptr() != Py_True || (IsOut && T.attr(RequiresGrad).ptr() == Py_True))
    return false;
  Pointer = T.attr(DataPtr)().cast<uintptr_t>();
  const py::tuple Sizes = T.attr(Shape), Steps = T.attr(Stride)();
  auto Put = [&](int64_t V) { putInt(Key, V); };
  Put(static_cast<int64_t>(Sizes.size()));
  for (size_t D = 0; D < Sizes.size(); ++D) {
    Put(PyLong_AsLongLong(Sizes[D].ptr()));
    Put(PyLong_AsLongLong(Steps[D].ptr()));
  }
  // torch's dtypes are singletons: the object names the type. A complex
  // tensor may be a conjugated or negated view whose bits are not its
  // values: those go through the general path (numpy() resolves them).
  const py::object Type = T.attr(Dtype);
  static auto *Complex = new std::unordered_map<PyObject *, bool>();
  auto [It, New] = Complex->try_emplace(Type.ptr(), false);
  if (New)
    It->second = Type.attr("is_complex").ptr() == Py_True;
  if (It->second)
    return false;
  Put(static_cast<int64_t>(reinterpret_cast<uintptr_t>(Type.ptr())));
  return true;
}

/// gatherArrays for PyTorch CPU tensors without an epilogue: a layout seen
/// before runs straight on the tensors' pointers; a new one goes through
/// numpy views once, and its kernel joins the layout table only if it reads
/// and writes the tensors' own memory (no copy was needed). Returns None where the general path must serve the
/// call (another device, an out that requires grad).
py::object gatherTensors(const std::string &Op, py::handle DataObj, py::handle IndicesObj,
                         py::handle AxisObj, py::handle OutObj, const std::string &Mode,
                         bool Broadcast) {
  bool Overflow = false;
  const int64_t Axis = axisValue(AxisObj, Overflow);
  std::string Key = callKey('t', Op, Mode, Broadcast, Axis);
  uintptr_t In = 0, Idx = 0, Dst = 0;
  if (!tensorLayout(DataObj, false, Key, In) || !tensorLayout(IndicesObj, false, Key, Idx) ||
      (!OutObj.is_none() && !tensorLayout(OutObj, true, Key, Dst)))
    return py::none();
  std::shared_ptr<PyKernel> K;
  if (auto It = callKernels().find(Key); It != callKernels().end()) {
    K = It->second;
  } else {
    py::array Data = operand(DataObj, "data", false), Indices = operand(IndicesObj, "indices", false);
    std::optional<py::array> Out;
    if (!OutObj.is_none())
      Out = operand(OutObj, "out", true);
    K = kernelForArrays(Op, Data, Indices, AxisObj, Out, Mode, std::nullopt, Broadcast);
    if (reinterpret_cast<uintptr_t>(Data.data()) != In ||
        reinterpret_cast<uintptr_t>(Indices.data()) != Idx)
      return package("_result")(K->run(Data, Indices, Out), DataObj); // A copy was needed.
    rememberCall(std::move(Key), K);
  }
  if (!OutObj.is_none()) {
    K->runInto(reinterpret_cast<const void *>(In), reinterpret_cast<const void *>(Idx),
               reinterpret_cast<void *>(Dst));
    return py::reinterpret_borrow<py::object>(OutObj);
  }
  py::array Result = K->newOutput();
  K->runInto(reinterpret_cast<const void *>(In), reinterpret_cast<const void *>(Idx),
             Result.mutable_data());
  if (Result.dtype().kind() == 'V') // bfloat16: viewed back by the package.
    return package("_result")(Result, DataObj);
  static py::object *FromNumpy =
      new py::object(py::module_::import("torch").attr("from_numpy"));
  return (*FromNumpy)(Result);
}

} // namespace

PYBIND11_MODULE(_native, M) {
  M.doc() = "gatherjit's native binding (use the gatherjit package)";
  // The runtime's code generator is made while Python imports the rest.
  Runtime::prepare(runtimeOptions());

  py::class_<PyKernel, std::shared_ptr<PyKernel>>(M, "Kernel",
                                                  "A gather compiled for one layout of its "
                                                  "operands; call it as k(data, indices, out=None).")
      .def("__call__", &PyKernel::call, py::arg("data"), py::arg("indices"),
           py::arg("out") = py::none(),
           "Runs the kernel (the GIL released) on arrays of the compiled shapes, dtypes and "
           "strides; returns out, or a new array.")
      .def(
          "_run_device",
          [](const PyKernel &P, uintptr_t Data, uintptr_t Indices, uintptr_t Out,
             uintptr_t Stream) {
            Status S = Status::ok();
            {
              py::gil_scoped_release Release;
              S = P.kernel().runOnStream(reinterpret_cast<const void *>(Data),
                                         reinterpret_cast<const void *>(Indices),
                                         reinterpret_cast<void *>(Out),
                                         reinterpret_cast<void *>(Stream));
            }
            if (!S)
              raise(S);
          },
          py::arg("data"), py::arg("indices"), py::arg("out"), py::arg("stream"))
      .def("ir", &PyKernel::ir, "The optimized LLVM IR.")
      .def("asm", &PyKernel::assembly, "The machine code, as assembly.")
      .def("save_object", &PyKernel::saveObject, py::arg("path"), py::arg("name") = "gather",
           py::arg("header") = "",
           "Compiles the kernel ahead of time into an object file (and a C header) for this "
           "machine, with the C ABI of `gatherjit aot`.")
      .def_property_readonly("op", &PyKernel::op)
      .def_property_readonly("output_shape", &PyKernel::outputShape)
      .def_property_readonly("output_dtype", [](const PyKernel &K) { return K.OutType; })
      .def_property_readonly("symbol", [](const PyKernel &K) { return K.kernel().symbolName(); })
      .def_property_readonly("opt_level",
                             [](const PyKernel &K) { return optLevelName(K.kernel().optLevel()); })
      .def_property_readonly("tier",
                             [](const PyKernel &K) { return kernelTierName(K.kernel().tier()); })
      .def_readwrite("_spec", &PyKernel::Spec);

  M.def(
      "compile",
      [](const std::string &Op, py::tuple Data, py::tuple Indices, py::handle AxisObj,
         const std::string &Mode, const std::optional<py::tuple> &Fused) {
        py::dtype DataType("float32"), IndexType("int64");
        TensorDesc D = tensorFromSpec(Data, DataType, "data");
        TensorDesc I = tensorFromSpec(Indices, IndexType, "indices");
        bool Overflow = false;
        const int64_t Axis = axisValue(AxisObj, Overflow);
        checkAxis(Op, AxisObj, Axis, Overflow, D.rank());
        return compileFor(Op, D, I, Axis, Mode, DataType, std::nullopt, epilogueOf(Fused));
      },
      py::arg("op"), py::arg("data"), py::arg("indices"), py::arg("axis") = 0,
      py::arg("mode") = "raise", py::arg("epilogue") = py::none());
  M.def(
      "compile_device",
      [](const std::string &Op, py::tuple Data, py::tuple Indices, py::handle AxisObj,
         const std::string &Mode, const std::optional<py::tuple> &Fused,
         const std::string &Device, std::optional<py::tuple> Out) {
        py::dtype DataType("float32"), IndexType("int64"), OutType("float32");
        TensorDesc D = tensorFromSpec(Data, DataType, "data");
        TensorDesc I = tensorFromSpec(Indices, IndexType, "indices");
        std::optional<TensorDesc> O;
        if (Out)
          O = tensorFromSpec(*Out, OutType, "out");
        bool Overflow = false;
        const int64_t Axis = axisValue(AxisObj, Overflow);
        checkAxis(Op, AxisObj, Axis, Overflow, D.rank());
        return compileFor(Op, D, I, Axis, Mode, DataType, O, epilogueOf(Fused),
                          &deviceRuntime(Device));
      },
      py::arg("op"), py::arg("data"), py::arg("indices"), py::arg("axis"), py::arg("mode"),
      py::arg("epilogue"), py::arg("device"), py::arg("out"));
  M.def("compile_descriptor", &compileDescriptor, py::arg("json"),
        py::arg("epilogue") = py::none());
  M.def("gather_tensors", &gatherTensors, py::arg("op"), py::arg("data"), py::arg("indices"),
        py::arg("axis"), py::arg("out"), py::arg("mode"), py::arg("broadcast"));
  M.def("gather_arrays", &gatherArrays, py::arg("op"), py::arg("data"), py::arg("indices"),
        py::arg("axis"), py::arg("out") = py::none(), py::arg("mode") = "raise",
        py::arg("epilogue") = py::none(), py::arg("broadcast") = true);
  M.attr("epilogues_supported") = epiloguesSupported();
  M.attr("__version__") = GATHERJIT_VERSION;
  M.def(
      "set_threads",
      [](unsigned Threads) {
        if (RuntimeCreated)
          return false;
        runtimeOptions().Threads = Threads;
        return true;
      },
      py::arg("threads"));
  M.def(
      "set_specialize",
      [](const std::string &Mode) {
        Specialize Parsed;
        if (!parseSpecialize(Mode, Parsed))
          throw py::value_error("specialize = " + quote(Mode) +
                                " is not 'adaptive', 'compile' or 'never'");
        if (RuntimeCreated)
          return false;
        runtimeOptions().Specialization = Parsed;
        return true;
      },
      py::arg("mode"));
  M.def(
      "set_epilogue_limits",
      [](double Seconds, uint64_t MemoryBytes, bool Isolated, bool Checked) {
        if (!(Seconds > 0))
          throw py::value_error("seconds = " + std::to_string(Seconds) +
                                " is not a positive number of seconds");
        if (MemoryBytes < (uint64_t(64) << 20))
          throw py::value_error("memory_bytes = " + std::to_string(MemoryBytes) +
                                " is below 64 MiB, too little for clang");
        if (RuntimeCreated)
          return false;
        runtimeOptions().Epilogues.Seconds = Seconds;
        runtimeOptions().Epilogues.MemoryBytes = MemoryBytes;
        runtimeOptions().Epilogues.Isolated = Isolated;
        runtimeOptions().Epilogues.Checked = Checked;
        return true;
      },
      py::arg("seconds"), py::arg("memory_bytes"), py::arg("isolated"), py::arg("checked"));
  M.def(
      "set_cache_dir",
      [](std::optional<std::string> Dir) {
        if (RuntimeCreated)
          return false;
        runtimeOptions().CacheDir = Dir.value_or("");
        return true;
      },
      py::arg("path"));
  M.def("cache_dir", [] { return runtimeOptions().CacheDir; });
  M.def("wait_background", [] {
    py::gil_scoped_release Release;
    runtime().drainBackground();
  });
  M.def("_stop_background", [] {
    if (!RuntimeCreated)
      return;
    py::gil_scoped_release Release;
    runtime().stopBackground();
  });
  M.def("stats", [] {
    const CacheStats S = runtime().stats();
    py::dict D;
    D["hits"] = S.Hits;
    D["misses"] = S.Misses;
    D["entries"] = S.Entries;
    D["evictions"] = S.Evictions;
    D["compile_ms"] = S.CompileMs;
    D["generic_entries"] = S.GenericEntries;
    D["specializations"] = S.Specializations;
    D["specialized_at_compile"] = S.SpecializedAtCompile;
    D["upgrades"] = S.Upgrades;
    D["cache_bytes"] = S.CacheBytes;
    D["family_kernels"] = S.FamilyKernels;
    D["family_entries"] = S.FamilyEntries;
    D["disk_loads"] = S.DiskLoads;
    D["disk_stores"] = S.DiskStores;
    return D;
  });
}
