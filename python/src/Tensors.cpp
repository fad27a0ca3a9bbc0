//===- python/src/Tensors.cpp - PyTorch CPU tensors read directly --------===//
//
// What a call reads of a PyTorch tensor, through torch.Tensor's own
// descriptors rather than a numpy view or a DLPack capsule (which cost
// several times a small run), and the new tensors results are written
// into. The binding never imports torch: a tensor exists only once the
// caller has.
//
//===----------------------------------------------------------------------===//

#include "Native.h"

#include <unordered_map>

namespace gatherjit::binding {

namespace {

/// torch.Tensor's descriptors of what a call reads, found once and called
/// directly: a tensor that is exactly a torch.Tensor (no subclass
/// overrides them). Null until torch is imported, or where its Tensor
/// type has other ways (the general path then serves every tensor).
struct Descriptors {
  PyTypeObject *Tensor;
  PyObject *IsCpu, *RequiresGrad, *DataPtr, *Shape, *Stride, *Dtype, *IsNeg;
  PyObject *IsGradEnabled; // torch.is_grad_enabled
};

const Descriptors *descriptors() {
  static const Descriptors *Found = nullptr;
  static bool Looked = false;
  if (Looked)
    return Found;
  py::object Torch = py::reinterpret_steal<py::object>(PyImport_GetModule(py::str("torch").ptr()));
  if (!Torch) {
    PyErr_Clear();
    return nullptr; // Not imported yet: ask again on the next call.
  }
  Looked = true;
  py::object Tensor = Torch.attr("Tensor");
  bool Usable = PyType_Check(Tensor.ptr());
  auto Find = [&](const char *Name, bool Method) {
    PyObject *P = py::object(Tensor.attr(Name)).release().ptr();
    Usable &= Method ? PyCallable_Check(P) != 0 : Py_TYPE(P)->tp_descr_get != nullptr;
    return P;
  };
  auto *D = new Descriptors{reinterpret_cast<PyTypeObject *>(Tensor.ptr()),
                            Find("is_cpu", false),
                            Find("requires_grad", false),
                            Find("data_ptr", true),
                            Find("shape", false),
                            Find("stride", true),
                            Find("dtype", false),
                            Find("is_neg", true),
                            py::object(Torch.attr("is_grad_enabled")).release().ptr()};
  Usable &= PyCallable_Check(D->IsGradEnabled) != 0;
  Tensor.release(); // Kept for the process's life, as the descriptors are.
  Found = Usable ? D : nullptr;
  return Found;
}

} // namespace

std::optional<TorchTensor> readTorchTensor(py::handle T, GradRule Grad) {
  const Descriptors *Attrs = descriptors();
  if (!Attrs || Py_TYPE(T.ptr()) != Attrs->Tensor)
    return std::nullopt;
  auto Get = [&](PyObject *Descr) {
    return py::reinterpret_steal<py::object>(Py_TYPE(Descr)->tp_descr_get(
        Descr, T.ptr(), reinterpret_cast<PyObject *>(Py_TYPE(T.ptr()))));
  };
  auto Call = [&](PyObject *Descr) {
    PyObject *Self = T.ptr();
    return py::reinterpret_steal<py::object>(PyObject_Vectorcall(Descr, &Self, 1, nullptr));
  };
  if (Get(Attrs->IsCpu).ptr() != Py_True)
    return std::nullopt;
  if (Grad != GradRule::Ignore && Get(Attrs->RequiresGrad).ptr() == Py_True) {
    if (Grad == GradRule::Refuse)
      return std::nullopt;
    const py::object Recording = py::reinterpret_steal<py::object>(
        PyObject_Vectorcall(Attrs->IsGradEnabled, nullptr, 0, nullptr));
    if (!Recording) {
      PyErr_Clear();
      return std::nullopt;
    }
    if (Recording.ptr() == Py_True)
      return std::nullopt;
  }
  // A tensor without strided storage (sparse, mkldnn) has no data
  // pointer or strides: the general path names what it is.
  TorchTensor R;
  const py::object Data = Call(Attrs->DataPtr);
  if (Data)
    R.Sizes = Get(Attrs->Shape);
  if (R.Sizes)
    R.Strides = Call(Attrs->Stride);
  if (!R.Strides) {
    PyErr_Clear();
    return std::nullopt;
  }
  if (!PyLong_Check(Data.ptr()) || !PyTuple_Check(R.Sizes.ptr()) ||
      !PyTuple_Check(R.Strides.ptr()) ||
      PyTuple_GET_SIZE(R.Strides.ptr()) != PyTuple_GET_SIZE(R.Sizes.ptr()))
    return std::nullopt;
  R.Pointer = static_cast<uintptr_t>(PyLong_AsUnsignedLongLong(Data.ptr()));
  // A conjugated or negated view holds other values than it shows: the
  // general path makes them. PyTorch makes such views of complex tensors
  // and, negated, of their real parts (x.conj().imag); those of other
  // types come from private functions alone, and asking every tensor would
  // cost a call each.
  enum class Kind { Other, Floating, Complex };
  R.Dtype = Get(Attrs->Dtype);
  static auto *Kinds = new std::unordered_map<PyObject *, Kind>();
  auto [It, New] = Kinds->try_emplace(R.Dtype.ptr(), Kind::Other);
  if (New)
    It->second = R.Dtype.attr("is_complex").ptr() == Py_True          ? Kind::Complex
                 : R.Dtype.attr("is_floating_point").ptr() == Py_True ? Kind::Floating
                                                                      : Kind::Other;
  if (It->second == Kind::Complex)
    return std::nullopt;
  if (It->second == Kind::Floating) {
    const py::object Negated = Call(Attrs->IsNeg);
    if (Negated.ptr() != Py_False) {
      PyErr_Clear();
      return std::nullopt;
    }
  }
  return R;
}

bool TorchTensor::hasLayout(const TensorDesc &T) const {
  // The descriptor may pad with leading ones; compare what remains.
  const size_t Rank = static_cast<size_t>(PyTuple_GET_SIZE(Sizes.ptr()));
  if (!padsRank(T, Rank))
    return false;
  const size_t Pad = T.rank() - Rank;
  for (size_t D = 0; D < Rank; ++D) {
    const uint64_t Size = T.Sizes[Pad + D];
    const long long Got = PyLong_AsLongLong(PyTuple_GET_ITEM(Sizes.ptr(), D));
    if (Got < 0 || static_cast<uint64_t>(Got) != Size)
      return false;
    if (Size > 1 && PyLong_AsLongLong(PyTuple_GET_ITEM(Strides.ptr(), D)) !=
                        static_cast<long long>((*T.Strides)[Pad + D]))
      return false;
  }
  return true;
}

py::object newTensorResult(PyKernel &K, const void *In, const void *Idx, py::handle Like) {
  // Made as a DLPack capsule that PyTorch adopts (a third cheaper than a
  // numpy array through from_numpy), where its dtype allows.
  void *Memory = nullptr;
  if (std::optional<py::capsule> Capsule = newDlpackResult(K.OutType, K.OutShape, Memory)) {
    K.runInto(In, Idx, Memory);
    static py::object *FromDlpack = [] {
      py::module_ Torch = py::module_::import("torch");
      // torch.from_dlpack's own step for a capsule, without its checks for
      // an object that has __dlpack__.
      py::object C = Torch.attr("_C");
      return new py::object(py::hasattr(C, "_from_dlpack") ? C.attr("_from_dlpack")
                                                           : Torch.attr("from_dlpack"));
    }();
    return (*FromDlpack)(*Capsule);
  }
  py::array Result = K.newOutput();
  K.runInto(In, Idx, Result.mutable_data());
  if (Result.dtype().kind() == 'V') // bfloat16: viewed back by the package.
    return package("_result")(Result, Like);
  static py::object *FromNumpy = new py::object(py::module_::import("torch").attr("from_numpy"));
  return (*FromNumpy)(Result);
}

} // namespace gatherjit::binding
