//===- python/src/Native.h - gatherjit._native's parts ------------------===//
/// \file
/// What the binding's files share: errors raised as Python exceptions, the
/// process's runtimes, numpy arrays as tensors, and compiled kernels with
/// the layouts they take. The binding reaches gatherjit through its public
/// C++ API (include/gatherjit/) alone.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_PYTHON_NATIVE_H
#define GATHERJIT_PYTHON_NATIVE_H

#include "gatherjit/Interpreter.h"
#include "gatherjit/Onnx.h"
#include "gatherjit/Runtime.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <bit>
#include <exception>
#include <memory>
#include <optional>
#include <string>

namespace py = pybind11;

namespace gatherjit::binding {

/// Raises \p S as the Python exception its code calls for: IndexError
/// (with the position) for an out-of-range index, ValueError for invalid
/// or unsupported input, RuntimeError for the rest.
[[noreturn]] void raise(const Status &S);

template <typename T> T take(Expected<T> E) {
  if (!E)
    raise(E.status());
  return E.take();
}

/// Takes the GIL back (PyEval_RestoreThread(\p Saved)). A daemon thread that
/// comes back once the interpreter is finalizing is ended there by
/// pthread_exit (before Python 3.14); that unwinding would release the
/// Python objects of the frames above (a result just made, its last
/// reference) without the GIL, in the dying interpreter. Such a thread
/// waits here instead until the process exits, as Python 3.14's own
/// threads do. Any other unwinding goes on (Functions.cpp).
void takeGilBack(PyThreadState *Saved);

/// \p Body's status, run with the GIL released where \p Release. The GIL is
/// taken back by a plain call (takeGilBack), not by a destructor, which
/// (noexcept) would turn an unwinding from there into std::terminate.
template <typename BodyT> Status withoutGil(bool Release, BodyT &&Body) {
  PyThreadState *Saved = Release ? PyEval_SaveThread() : nullptr;
  Status S = Status::ok();
  std::exception_ptr Thrown;
  try {
    S = Body();
  } catch (...) {
    Thrown = std::current_exception();
  }
  if (Saved)
    takeGilBack(Saved);
  if (Thrown)
    std::rethrow_exception(Thrown);
  return S;
}

/// The options the process's runtime is created with (see set_threads).
RuntimeOptions &runtimeOptions();
/// Set once a runtime exists: the options no longer apply.
extern std::atomic<bool> RuntimeCreated;
/// The process's runtime, created on first use.
Runtime &runtime();
/// The process's runtime for CUDA device \p Device ("cuda" or "cuda:N").
Runtime &deviceRuntime(const std::string &Device);

/// A str argument from Python; TypeError naming \p Name and the values it
/// takes (\p Takes) for anything else.
std::string stringArg(py::handle Value, const char *Name, const char *Takes);
/// A file name from Python (str, bytes or os.PathLike); TypeError naming
/// \p Name for anything else.
std::string pathArg(py::handle Value, const char *Name);
/// The values a mode argument takes, for its errors.
constexpr const char *ModeNames = "'raise', 'clip', 'clamp' or 'wrap'";

/// A function of the gatherjit package's Python half (kept for the
/// process's life).
py::object &package(const char *Name);
/// Raises gatherjit._OutDtypeError (a ValueError and, as numpy's take
/// raises for an out it cannot cast to, a TypeError) with \p Message.
[[noreturn]] void throwOutDtype(const std::string &Message);
/// A shape (or strides) as Python prints one: "(3, 4)", "(2,)", "()".
template <typename Int> std::string tupleString(const std::vector<Int> &Values) {
  std::string S = "(";
  for (size_t I = 0; I < Values.size(); ++I)
    S += (I ? ", " : "") + std::to_string(Values[I]);
  return S + (Values.size() == 1 ? ",)" : ")");
}
/// A dtype by numpy's name ("float32"); \p T's element type so, or
/// "N-byte records".
std::string dtypeString(const py::dtype &Type);
std::string dtypeString(const TensorDesc &T);
/// A dtype's element size and flags, read where the numpy the module runs
/// with keeps them. pybind11 2.10 (bookworm's) reads both where numpy 1
/// does; numpy 2 moved the flags to a 64-bit word and the element size to
/// an npy_intp after it, where pybind11 reads 0. The module's own code
/// reads these through the functions below, and makes arrays with strides
/// it computed (cOrderArray) rather than pybind11's.
struct DescrLayout {
  /// numpy's major version is 2 or more (set on import).
  static bool Numpy2;
  struct V1 {
    PyObject Head;
    PyTypeObject *Typeobj;
    char Kind, Type, Byteorder, Flags;
    int TypeNum, Elsize;
  };
  struct V2 {
    PyObject Head;
    PyTypeObject *Typeobj;
    char Kind, Type, Byteorder, FormerFlags;
    int TypeNum;
    uint64_t Flags;
    Py_ssize_t Elsize;
  };
  static size_t itemSize(PyObject *Descr) {
    return Numpy2 ? static_cast<size_t>(reinterpret_cast<const V2 *>(Descr)->Elsize)
                  : static_cast<size_t>(reinterpret_cast<const V1 *>(Descr)->Elsize);
  }
  static uint64_t flags(PyObject *Descr) {
    return Numpy2 ? reinterpret_cast<const V2 *>(Descr)->Flags
                  : static_cast<unsigned char>(reinterpret_cast<const V1 *>(Descr)->Flags);
  }
};
inline size_t itemSize(const py::dtype &Type) { return DescrLayout::itemSize(Type.ptr()); }
inline size_t itemSize(const py::array &A) {
  return DescrLayout::itemSize(py::detail::array_proxy(A.ptr())->descr);
}
/// True if elements of \p Type hold object references (numpy's
/// NPY_ITEM_HASOBJECT): object arrays, and records with an object field.
inline bool holdsReferences(const py::dtype &Type) { return DescrLayout::flags(Type.ptr()) & 0x01; }
/// A C-ordered array of \p Type and \p Shape: new, or over \p Memory,
/// which \p Owner keeps alive.
py::array cOrderArray(const py::dtype &Type, const std::vector<py::ssize_t> &Shape,
                      void *Memory = nullptr, py::handle Owner = py::handle());

/// Whether an array of rank \p Rank may stand for \p T: \p T has that rank,
/// or more where the dimensions before its last \p Rank are ones (a
/// descriptor's padding), which the array's memory then holds as well.
inline bool padsRank(const TensorDesc &T, size_t Rank) {
  if (Rank > T.rank())
    return false;
  for (size_t D = 0; D + Rank < T.rank(); ++D)
    if (T.Sizes[D] != 1)
      return false;
  return true;
}

// numpy arrays as tensors (Arrays.cpp).

/// gatherjit's element type for a numpy dtype (\p OpaqueBytes set for
/// opaque elements); TypeError for elements holding references, ValueError
/// for elements of no bytes.
DataType dataTypeOf(const py::dtype &D, unsigned &OpaqueBytes);
/// \p Indices as native int32 or int64 (narrow or byte-swapped ones copied).
py::array nativeIndices(py::array Indices);
/// This machine's byte order as numpy's dtypes spell it.
constexpr char NativeOrder = std::endian::native == std::endian::little ? '<' : '>';
/// \p D's byte order: '<', '>', or '|' where it has none (single bytes).
char byteOrder(const py::dtype &D);
/// ValueError (and TypeError) for an \p Out whose byte order is not \p
/// Want's (the machine's where not given).
void checkOutByteOrder(const py::array &Out, const std::optional<py::dtype> &Want);
/// ValueError for \p Data in another byte order than a kernel's \p Want.
void checkDataByteOrder(const py::array &Data, const py::dtype &Want);
/// \p A, or a copy in the machine's byte order: what an epilogue, which
/// computes on values, must read.
py::array inNativeOrder(const py::array &A);
/// A tensor viewing \p A's memory: its sizes and its strides in elements.
TensorDesc tensorOf(const py::array &A, const char *Name);
/// Whether a tensor can describe \p A's strides: none negative, each a
/// step of whole elements.
bool describable(const py::array &A);
/// True if dimension \p D of \p A needs no stride, which tensorOf says as
/// 0: it has at most one position, or \p A has no elements (it addresses no
/// memory; numpy calls it contiguous, so no copy would mend a negative
/// stride of it).
bool strideUnused(const py::array &A, py::ssize_t D);
/// \p A, or a C-ordered copy when its strides cannot be described.
py::array viewOrCopy(py::array A);
/// A tensor from a (shape, dtype[, strides]) tuple; strides in elements.
TensorDesc tensorFromSpec(const py::tuple &Spec, py::dtype &Type, const char *Name);
/// True if \p X is a numpy.ndarray itself, not a subclass: an operand the
/// native layer reads as it is.
bool plainArray(PyObject *X);
/// \p X as a numpy array over the same memory (see gatherjit._array, which
/// also refuses masked arrays, whose masks a gather would drop).
py::array operand(py::handle X, const char *Name, bool Writable);

// Results' memory (OutputPool.cpp).

/// Idle bytes of large results' buffers a process keeps for the next
/// results (gatherjit.set_output_pool).
constexpr size_t DefaultOutputPoolBytes = size_t(128) << 20;
/// A new C-ordered array for a result: a large one's buffer comes from the
/// process's pool of buffers earlier results gave back when they died
/// (its bytes are not set; a dtype holding references never comes from it).
py::array newArray(const py::dtype &Type, const std::vector<py::ssize_t> &Shape);
/// A new C-ordered result as a DLPack capsule ("dltensor") of CPU memory
/// (a large one's from the same pool), its buffer's address in \p Data;
/// nullopt for a dtype a DLPack consumer may not take as numpy has it
/// (only floats, complex, signed integers and uint8 are made).
std::optional<py::capsule> newDlpackResult(const py::dtype &Type,
                                           const std::vector<py::ssize_t> &Shape, void *&Data);
/// Keeps at most \p Bytes of idle buffers from now on (0: none), and lets
/// those past them linger \p LingerSeconds where given (see
/// OutputPool::DefaultLinger); returns the capacity it replaces.
size_t setOutputPool(size_t Bytes, std::optional<double> LingerSeconds);
size_t outputPoolIdleBytes();

// Kernels (Kernels.cpp).

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
  /// are taken as they are, PyTorch CPU tensors of dtypes seen before read
  /// directly (callOnTensors); anything else goes through gatherjit._array
  /// (PyTorch tensors, DLPack), and PyTorch data gives a PyTorch result.
  py::object call(py::handle DataObj, py::handle IndicesObj, py::handle OutObj);

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
    if (runsNothing())
      return;
    // Other Python threads run meanwhile, unless the kernel is done sooner
    // than the GIL would change hands (a few KiB written).
    const Status S = withoutGil(OutBytes >= GilFreeBytes, [&] { return K.run(In, Idx, Dst); });
    if (!S)
      raise(S);
  }

  std::string ir() { return take(runtime().optimizedIR(K.desc())); }
  std::string assembly() { return take(runtime().assembly(K.desc())); }

  /// Compiles the kernel ahead of time into an object file (and its C
  /// header if \p Header is given), for the host, under the C name \p Name.
  void saveObject(const std::string &Path, const std::string &Name, const std::string &Header);

  /// The output's shape as the ONNX operator gives it (leading ones that
  /// pad the descriptor dropped to the data's and indices' ranks).
  std::vector<py::ssize_t> outputShape() const { return OutShape; }
  const Kernel &kernel() const { return K; }
  const std::string &op() const { return Op; }

  std::vector<py::ssize_t> OutShape;
  py::dtype OutType = py::dtype::of<float>(); // Set by whoever makes the kernel.
  /// The data's dtype, byte order included, that the kernel reads.
  py::dtype InType = py::dtype::of<float>();
  /// The output's bytes (the GIL is released from GilFreeBytes on).
  uint64_t OutBytes = 0;
  /// How the data and indices were described, to pickle the kernel.
  py::tuple Spec;
  /// A take or gather_nd under "raise" whose output is empty though its
  /// indices are not (a dimension of the data is 0), where numpy still
  /// checks the indices its loops meet: the kernel's run checks them all.
  /// Another empty output is not run: numpy meets no index there (the
  /// data's dimensions before the axis hold nothing).
  bool ChecksIndicesAlone = false;
  /// True where a call runs nothing (see ChecksIndicesAlone).
  bool runsNothing() const { return OutBytes == 0 && !ChecksIndicesAlone; }

  /// A new array for the output.
  py::array newOutput() { return newArray(OutType, OutShape); }

private:
  /// A numpy dtype as its type number, size and byte order: what a call
  /// compares (decoding the dtype again would cost more than a tiny run).
  struct DtypeId {
    int Num = -1;
    py::ssize_t Size = 0;
    char Order = 0;
    static DtypeId of(const py::dtype &D) {
      return {D.num(), static_cast<py::ssize_t>(itemSize(D)), D.byteorder()};
    }
    bool operator==(const DtypeId &) const = default;
  };
  /// The dtypes of data, indices and out seen to be the kernel's.
  DtypeId Seen[3];
  /// The same for PyTorch tensors: torch's dtype objects that a call on
  /// tensors read in place (no copy of narrow indices) ran with.
  py::object TorchSeen[3];

  /// call() on PyTorch CPU tensors of the kernel's layouts and of dtypes
  /// seen before, read directly; nullopt where the general path must serve
  /// (and check) the call.
  std::optional<py::object> callOnTensors(py::handle DataObj, py::handle IndicesObj,
                                          py::handle OutObj);
  /// After the general path ran on \p Data, \p Indices and \p Out, views of
  /// \p DataObj, \p IndicesObj and \p OutObj: their dtypes join TorchSeen
  /// where all are tensors whose own memory the views are.
  void rememberTensorDtypes(py::handle DataObj, py::handle IndicesObj, py::handle OutObj,
                            const py::array &Data, const py::array &Indices, const py::array &Out);

  /// \p A's dtype, shape and strides, as an error names them.
  static std::string layoutString(const py::array &A);
  /// ValueError unless \p A has \p T's sizes, strides and type (and, where
  /// \p Order is given, that dtype's byte order: checkDataByteOrder).
  static void expectLayout(const py::array &A, const TensorDesc &T, const char *Name, DtypeId &Seen,
                           const py::dtype *Order = nullptr);

  Kernel K;
  std::string Op;
};

// PyTorch CPU tensors read directly (Tensors.cpp).

/// A PyTorch tensor as a call reads it, through torch.Tensor's own
/// descriptors: its data's address, its sizes and strides (tuples of
/// Python ints, the strides in elements) and its dtype (torch's dtypes are
/// singletons: the object names the type).
struct TorchTensor {
  uintptr_t Pointer = 0;
  py::object Sizes, Strides, Dtype;

  /// Whether the sizes and strides are \p T's (see padsRank); strides of
  /// dimensions of one element or none do not count.
  bool hasLayout(const TensorDesc &T) const;
};
/// Which tensors that require grad the fast path leaves to the general one:
/// none; every one (an out=, which torch refuses to write); or data while
/// autograd records (gatherjit.torch's differentiable functions).
enum class GradRule { Ignore, Refuse, RefuseWhileRecording };
/// \p T read so where it is exactly a torch.Tensor on the CPU whose bits
/// are its values (not a conjugated or negated complex view) and that
/// \p Grad does not refuse; nullopt where the general path must serve it,
/// and for anything else (also while torch is not imported).
std::optional<TorchTensor> readTorchTensor(py::handle T, GradRule Grad);
/// \p K run on \p In and \p Idx into a new PyTorch tensor, as the general
/// path's result for tensor data \p Like would be.
py::object newTensorResult(PyKernel &K, const void *In, const void *Idx, py::handle Like);

/// An epilogue from Python: (source, function, file name, parameter bytes,
/// row_out, checked), as gatherjit.Epilogue passes it.
struct PyEpilogue {
  Epilogue E;
  uint64_t RowOut = 0;
};

/// The epilogue a (source, function, file_name, params, row_out, checked)
/// tuple describes, if any.
std::optional<PyEpilogue> epilogueOf(const std::optional<py::tuple> &T);

/// The kernel for ONNX operator \p Op ("gather_elements", "gather",
/// "gather_nd") on \p Data and \p Indices under mode \p Mode ("raise",
/// "clip", "clamp"). \p OutT, if given, is the output array's layout (any
/// strides). \p E, if given, is fused into the kernel: the output then
/// takes its OUT type (and a row epilogue's row length) and is packed.
std::shared_ptr<PyKernel> compileFor(const std::string &Op, TensorDesc Data, TensorDesc Indices,
                                     int64_t Axis, const std::string &Mode,
                                     const py::dtype &DataType,
                                     const std::optional<TensorDesc> &OutT = std::nullopt,
                                     const std::optional<PyEpilogue> &E = std::nullopt,
                                     Runtime *On = nullptr);
/// A kernel for a DirectML-style descriptor in `gatherjit run`'s JSON.
std::shared_ptr<PyKernel> compileDescriptor(const std::string &Json,
                                            const std::optional<py::tuple> &Fused);

// The function forms (Calls.cpp).

/// An axis (or batch_dims) given as a Python integer; \p Overflow set for
/// one beyond int64.
int64_t axisValue(py::handle Axis, bool &Overflow);
/// numpy's AxisError for an axis outside a rank-\p Rank array's, or
/// ValueError for a negative or overflowing batch_dims.
void checkAxis(const std::string &Op, py::handle AxisObj, int64_t Axis, bool Overflow,
               int64_t Rank);
/// take_along_axis's \p Data and \p Indices broadcast as numpy's: on the
/// dimensions other than \p Axis, a size of 1 against another becomes that
/// size with a stride of 0; ValueError for ranks that differ,
/// gatherjit._ShapeMismatchError for sizes that do not broadcast.
void broadcastAlongAxis(TensorDesc &Data, TensorDesc &Indices, int64_t Axis);
/// take / take_along_axis / gather_nd on numpy arrays, into \p Out or a new
/// array.
py::object gatherArrays(const std::string &Op, py::array Data, py::array Indices,
                        py::handle AxisObj, std::optional<py::array> Out, const std::string &Mode,
                        const std::optional<py::tuple> &Fused, bool Broadcast);
/// The same on PyTorch CPU tensors without an epilogue; None where the
/// general path must serve the call. \p TorchRules: the call of
/// gatherjit.torch's functions, which leave 0-d operands (torch's shape
/// rules) and data that requires grad while autograd records to it too.
py::object gatherTensors(const std::string &Op, py::handle DataObj, py::handle IndicesObj,
                         py::handle AxisObj, py::handle OutObj, py::handle Mode, bool Broadcast,
                         bool TorchRules);
/// One of the package's gather functions (gatherjit's take,
/// take_along_axis, gather_nd; gatherjit.torch's gather_elements, gather,
/// gather_nd), named by \p Fallback's module and name, as a built-in
/// function of \p Native with the text signature \p Signature and
/// \p Fallback's docstring: the calls the native layer serves alone run
/// from the call, the rest go to \p Fallback (Functions.cpp).
py::object gatherFunction(py::module_ &Native, const py::function &Fallback,
                          const std::string &Signature);
/// The Python exception for the C++ one being handled, as pybind11's own
/// functions raise it; returns null. An unwinding C++ did not throw
/// (pthread_exit's, pthread_cancel's) is thrown on.
PyObject *raiseCurrent();

} // namespace gatherjit::binding

#endif
