//===- python/src/Calls.cpp - The function forms -------------------------===//
//
// take, take_along_axis and gather_nd on arrays and PyTorch tensors: a
// layout table in front of the runtime's cache, so that a repeated call
// skips building and validating its descriptor.
//
//===----------------------------------------------------------------------===//

#include "Native.h"

#include <array>
#include <limits>
#include <unordered_map>

namespace gatherjit::binding {

namespace {

/// Appends \p V's bytes to \p Key.
void putInt(std::string &Key, int64_t V) {
  Key.append(reinterpret_cast<const char *>(&V), sizeof V);
}

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
  Put(static_cast<int64_t>(itemSize(T)));
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
  std::string Key;
  Key.reserve(256); // Room for most calls' layouts, appended next, without growing.
  Key.append(1, Source).append(Op).append(1, '\0').append(Mode).append(1, '\0');
  Key.push_back(Broadcast ? 'b' : 'o');
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

} // namespace

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

void broadcastAlongAxis(TensorDesc &Data, TensorDesc &Indices, int64_t Axis) {
  if (Data.rank() != Indices.rank())
    throw py::value_error("take_along_axis: indices of rank " + std::to_string(Indices.rank()) +
                          " and data of rank " + std::to_string(Data.rank()) +
                          "; the ranks must be equal");
  // A size of 1 repeats (or, against a size of 0, vanishes) through a
  // stride of 0 (no copy).
  for (TensorDesc *T : {&Data, &Indices})
    if (!T->Strides)
      T->Strides = packedStrides(T->Sizes);
  const int64_t R = Data.rank(), A = Axis < 0 ? Axis + R : Axis;
  for (int64_t D = 0; D < R; ++D) {
    if (D == A)
      continue;
    uint64_t &DS = Data.Sizes[D], &IS = Indices.Sizes[D];
    if (DS == 1 && IS != 1) {
      DS = IS;
      (*Data.Strides)[D] = 0;
    } else if (IS == 1 && DS != 1) {
      IS = DS;
      (*Indices.Strides)[D] = 0;
    } else if (IS != DS) {
      // numpy raises IndexError here; ValueError is what a bad shape was.
      const std::string Message = "take_along_axis: data " + tupleString(Data.Sizes) +
                                  " and indices " + tupleString(Indices.Sizes) +
                                  " do not broadcast at dimension " + std::to_string(D);
      PyErr_SetString(package("_ShapeMismatchError").ptr(), Message.c_str());
      throw py::error_already_set();
    }
  }
}

namespace {

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
  if (Broadcast && Op == "gather_elements")
    broadcastAlongAxis(DataT, IdxT, Axis);
  std::optional<TensorDesc> OutT;
  if (Out)
    OutT = tensorOf(*Out, "out");
  std::shared_ptr<PyKernel> K = compileFor(Op, std::move(DataT), std::move(IdxT), Axis, Mode,
                                           Data.dtype(), OutT, epilogueOf(Fused));
  if (!Key.empty())
    rememberCall(std::move(Key), K);
  return K;
}

/// A PyTorch CPU tensor's layout appended to \p Key and its data pointer,
/// or false for a tensor the fast path does not take (see readTorchTensor),
/// and for a 0-d one unless \p Scalar.
bool tensorLayout(py::handle T, GradRule Grad, bool Scalar, std::string &Key, uintptr_t &Pointer) {
  const std::optional<TorchTensor> R = readTorchTensor(T, Grad);
  if (!R)
    return false;
  const Py_ssize_t Rank = PyTuple_GET_SIZE(R->Sizes.ptr());
  if (Rank == 0 && !Scalar)
    return false;
  Pointer = R->Pointer;
  putInt(Key, static_cast<int64_t>(Rank));
  for (Py_ssize_t D = 0; D < Rank; ++D) {
    putInt(Key, PyLong_AsLongLong(PyTuple_GET_ITEM(R->Sizes.ptr(), D)));
    putInt(Key, PyLong_AsLongLong(PyTuple_GET_ITEM(R->Strides.ptr(), D)));
  }
  putInt(Key, static_cast<int64_t>(reinterpret_cast<uintptr_t>(R->Dtype.ptr())));
  return true;
}

/// The references an object array holds, as a uint64 array over the same
/// memory (which it keeps alive): what a kernel moves for it.
py::array objectWords(const py::array &Objects) {
  return py::array(py::dtype("uint64"),
                   std::vector<py::ssize_t>(Objects.shape(), Objects.shape() + Objects.ndim()),
                   std::vector<py::ssize_t>(Objects.strides(), Objects.strides() + Objects.ndim()),
                   Objects.data(), Objects);
}

/// A new object array of \p Words' shape holding a new reference to each
/// object whose address a word holds: words a kernel gathered from
/// objectWords, never a caller's.
py::array objectsOf(const py::array &Words) {
  py::array Objects = cOrderArray(
      py::dtype("O"), std::vector<py::ssize_t>(Words.shape(), Words.shape() + Words.ndim()));
  // numpy made it of null references (an object array is zeroed), and the
  // kernel's result is C-ordered, as Objects is.
  auto **To = static_cast<PyObject **>(Objects.mutable_data());
  const auto *From = static_cast<const uint64_t *>(Words.data());
  for (py::ssize_t I = 0, N = Words.size(); I < N; ++I) {
    To[I] = reinterpret_cast<PyObject *>(static_cast<uintptr_t>(From[I]));
    Py_XINCREF(To[I]);
  }
  return Objects;
}

} // namespace

/// kernelForArrays' kernel run into \p Out or a new array; mode "wrap"
/// (numpy's: every index modulo its axis's size) through wrapped indices.
py::object gatherArrays(const std::string &Op, py::array Data, py::array Indices,
                        py::handle AxisObj, std::optional<py::array> Out, const std::string &Mode,
                        const std::optional<py::tuple> &Fused, bool Broadcast) {
  if (Mode == "wrap") {
    const py::tuple Wrapped = package("_wrapped")(Op, Data, Indices, AxisObj);
    return gatherArrays(Op, Data, Wrapped[0], AxisObj, Out, Wrapped[1].cast<std::string>(), Fused,
                        Broadcast);
  }
  if (Out && !describable(*Out)) {
    // An out whose strides a kernel cannot write (numpy's negative ones, or
    // steps of part of an element): the result is made in a C-ordered
    // array of out's shape and dtype, which the kernel path checks, then
    // copied into out, as numpy writes one.
    if (!Out->writeable())
      throw py::value_error("out is read-only");
    py::array Packed =
        newArray(Out->dtype(), std::vector<py::ssize_t>(Out->shape(), Out->shape() + Out->ndim()));
    gatherArrays(Op, Data, Indices, AxisObj, Packed, Mode, Fused, Broadcast);
    Out->attr("__setitem__")(py::ellipsis(), Packed);
    return std::move(*Out);
  }
  if (holdsReferences(Data.dtype())) {
    // Elements holding references: the result holds a new reference to
    // each object gathered (numpy's take does the same), and numpy counts
    // those an out= replaces. An object array's references are moved as
    // 8-byte words; records holding some are taken by numpy at the
    // positions the kernel gathers.
    if (Fused)
      throw py::type_error("an epilogue computes on numbers; data has dtype " +
                           dtypeString(Data.dtype()));
    py::array Result;
    if (Data.dtype().kind() == 'O') {
      Result = objectsOf(gatherArrays(Op, objectWords(Data), Indices, AxisObj, std::nullopt, Mode,
                                      Fused, Broadcast));
    } else {
      py::module_ Np = py::module_::import("numpy");
      py::object Positions = Np.attr("arange")(Data.size(), py::arg("dtype") = "int64")
                                 .attr("reshape")(Data.attr("shape"));
      py::object Taken =
          gatherArrays(Op, Positions, Indices, AxisObj, std::nullopt, Mode, Fused, Broadcast);
      Result = Np.attr("ravel")(Data).attr("take")(Taken);
    }
    if (!Out)
      return Result;
    if (!Out->dtype().equal(Data.dtype()) || !Out->attr("shape").equal(Result.attr("shape")))
      throw py::value_error("out must be an array of dtype " + dtypeString(Data.dtype()) +
                            " and shape " + std::string(py::str(Result.attr("shape"))) + "; got " +
                            dtypeString(Out->dtype()) + " " +
                            std::string(py::str(Out->attr("shape"))));
    Out->attr("__setitem__")(py::ellipsis(), Result);
    return std::move(*Out);
  }
  if (Fused)
    Data = inNativeOrder(Data); // The epilogue computes on the values.
  std::shared_ptr<PyKernel> K =
      kernelForArrays(Op, Data, Indices, AxisObj, Out, Mode, Fused, Broadcast);
  py::object Got = K->run(Data, Indices, Out);
  // numpy's take of one element from one axis gives a scalar, not a 0-d
  // array.
  if (!Out && K->OutShape.empty() && Op == "gather")
    return Got[py::tuple()];
  return Got;
}

/// gatherArrays for PyTorch CPU tensors without an epilogue: a layout seen
/// before runs straight on the tensors' pointers; a new one goes through
/// numpy views once, and its kernel joins the layout table only if it reads
/// and writes the tensors' own memory (no copy was needed). Returns None where the general path
/// must serve the call (not tensors, another device, an axis that is not
/// exactly an int, mode "wrap", an out that requires grad, and what
/// \p TorchRules leaves to it: 0-d operands, data that autograd records,
/// empty indices of GatherElements).
py::object gatherTensors(const std::string &Op, py::handle DataObj, py::handle IndicesObj,
                         py::handle AxisObj, py::handle OutObj, py::handle ModeObj, bool Broadcast,
                         bool TorchRules) {
  if (!PyLong_CheckExact(AxisObj.ptr()))
    return py::none();
  const std::string Mode = stringArg(ModeObj, "mode", ModeNames);
  if (Mode == "wrap")
    return py::none();
  bool Overflow = false;
  const int64_t Axis = axisValue(AxisObj, Overflow);
  std::string Key = callKey('t', Op, Mode, Broadcast, Axis);
  uintptr_t In = 0, Idx = 0, Dst = 0;
  const GradRule DataGrad = TorchRules ? GradRule::RefuseWhileRecording : GradRule::Ignore;
  if (!tensorLayout(DataObj, DataGrad, !TorchRules, Key, In) ||
      !tensorLayout(IndicesObj, GradRule::Ignore, !TorchRules, Key, Idx) ||
      (!OutObj.is_none() && !tensorLayout(OutObj, GradRule::Refuse, true, Key, Dst)))
    return py::none();
  std::shared_ptr<PyKernel> K;
  if (auto It = callKernels().find(Key); It != callKernels().end()) {
    K = It->second;
  } else {
    py::array Data = operand(DataObj, "data", false),
              Indices = operand(IndicesObj, "indices", false);
    if (TorchRules && Op == "gather_elements" && Indices.size() == 0)
      return py::none(); // torch.gather's rule for empty indices is the package's.
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
  return newTensorResult(*K, reinterpret_cast<const void *>(In),
                         reinterpret_cast<const void *>(Idx), DataObj);
}
} // namespace gatherjit::binding
