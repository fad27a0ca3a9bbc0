//===- python/src/Functions.cpp - the package's gather functions ---------===//
//
// gatherjit's take, take_along_axis and gather_nd, and gatherjit.torch's
// gather_elements, gather and gather_nd, as built-in functions. A call the
// native layer serves alone (no epilogue, the CPU) runs from the call
// itself: numpy arrays (exactly numpy.ndarray, an int axis) through
// gatherArrays, plain PyTorch CPU tensors through gatherTensors. Every
// other call, bad arguments included, goes to the package's Python
// function of the same signature, which serves it and raises Python's own
// errors. A small call costs about 0.35 µs on arrays, and the Python
// function's frame would add a third to it.
//
//===----------------------------------------------------------------------===//

#include "Native.h"

#include <unistd.h>

#include <array>
#include <string>
#include <utility>

namespace gatherjit::binding {

namespace {

/// The parameters, in order; a torch function has the first three and
/// mode.
enum Param { Data, Indices, Axis, Out, Mode, Epilogue, Device, NumParams };

/// One of the six functions: its names and its gather.
struct GatherFunction {
  const char *Module, *Name, *Op;
  /// "axis", or gather_nd's "batch_dims".
  const char *AxisName;
  /// Whether the axis may be left out (it is then 0).
  bool AxisDefaults;
  /// gatherjit.torch's: PyTorch tensors by torch's rules, not numpy arrays.
  bool Torch;
  /// numpy's and ONNX's broadcast of the other dimensions; torch.gather's
  /// shape rule where false.
  bool Broadcast;
};

constexpr GatherFunction Functions[] = {
    {"gatherjit", "take_along_axis", "gather_elements", "axis", false, false, true},
    {"gatherjit", "take", "gather", "axis", true, false, true},
    {"gatherjit", "gather_nd", "gather_nd", "batch_dims", true, false, true},
    {"gatherjit.torch", "gather_elements", "gather_elements", "axis", false, true, false},
    {"gatherjit.torch", "gather", "gather", "axis", true, true, true},
    {"gatherjit.torch", "gather_nd", "gather_nd", "batch_dims", true, true, true}};

/// A function once made: the Python function that serves the rest of its
/// calls, and its method definition and docstring (which the built-in
/// function points at).
struct MadeFunction {
  PyObject *Fallback = nullptr;
  std::string Doc;
  PyMethodDef Def{};
};
MadeFunction Made[std::size(Functions)];

using Arguments = std::array<PyObject *, NumParams>;

/// \p Args bound to \p F's parameters (defaults filled in, a missing mode
/// null); false where the Python function must say what is wrong.
bool bindArguments(const GatherFunction &F, PyObject *const *Args, Py_ssize_t NArgs,
                   PyObject *KwNames, Arguments &A) {
  const Param Params[] = {Data, Indices, Axis, Out, Mode, Epilogue, Device};
  const Param TorchParams[] = {Data, Indices, Axis, Mode};
  const Param *Order = F.Torch ? TorchParams : Params;
  const Py_ssize_t Count = F.Torch ? std::size(TorchParams) : std::size(Params);
  const char *Names[NumParams] = {"data", "indices",  F.AxisName, "out",
                                  "mode", "epilogue", "device"};
  if (NArgs > Count)
    return false;
  static PyObject *Zero = PyLong_FromLong(0);
  A = {nullptr, nullptr, F.AxisDefaults ? Zero : nullptr, Py_None, nullptr, Py_None, Py_None};
  bool Given[NumParams] = {};
  for (Py_ssize_t I = 0; I < NArgs; ++I) {
    A[Order[I]] = Args[I];
    Given[Order[I]] = true;
  }
  const Py_ssize_t NKw = KwNames ? PyTuple_GET_SIZE(KwNames) : 0;
  for (Py_ssize_t K = 0; K < NKw; ++K) {
    PyObject *Key = PyTuple_GET_ITEM(KwNames, K);
    Py_ssize_t At = 0;
    while (At < Count && PyUnicode_CompareWithASCIIString(Key, Names[Order[At]]) != 0)
      ++At;
    if (At == Count || Given[Order[At]])
      return false; // Unknown, or given twice.
    A[Order[At]] = Args[NArgs + K];
    Given[Order[At]] = true;
  }
  return A[Data] && A[Indices] && A[Axis];
}

/// Whether the call runs on the CPU without an epilogue: what the native
/// layer may serve alone.
bool plainCall(const Arguments &A) {
  return A[Epilogue] == Py_None &&
         (A[Device] == Py_None ||
          (PyUnicode_Check(A[Device]) && PyUnicode_CompareWithASCIIString(A[Device], "cpu") == 0));
}

/// Whether gatherArrays serves the call alone.
bool plainArrays(const Arguments &A) {
  return plainArray(A[Data]) && plainArray(A[Indices]) && PyLong_CheckExact(A[Axis]) &&
         (A[Out] == Py_None || plainArray(A[Out]));
}

/// The call served by the native layer alone, or None.
py::object nativeCall(const GatherFunction &F, const Arguments &A) {
  static PyObject *Raise = PyUnicode_InternFromString("raise");
  PyObject *ModeObj = A[Mode] ? A[Mode] : Raise;
  if (!plainCall(A))
    return py::none();
  if (!F.Torch && plainArrays(A)) {
    std::optional<py::array> OutArray;
    if (A[Out] != Py_None)
      OutArray = py::reinterpret_borrow<py::array>(A[Out]);
    return gatherArrays(F.Op, py::reinterpret_borrow<py::array>(A[Data]),
                        py::reinterpret_borrow<py::array>(A[Indices]), A[Axis], std::move(OutArray),
                        stringArg(ModeObj, "mode", ModeNames), std::nullopt, F.Broadcast);
  }
  // PyTorch CPU tensors; None for anything else.
  return gatherTensors(F.Op, A[Data], A[Indices], A[Axis], A[Out], ModeObj, F.Broadcast, F.Torch);
}

PyObject *callGather(const GatherFunction &F, PyObject *Fallback, PyObject *const *Args,
                     Py_ssize_t NArgs, PyObject *KwNames) {
  Arguments A;
  if (bindArguments(F, Args, NArgs, KwNames, A)) {
    try {
      py::object Got;
      try {
        Got = nativeCall(F, A);
      } catch (py::error_already_set &E) {
        // An out-of-range index, named in the caller's shapes.
        if (E.matches(PyExc_IndexError))
          package("_reraise_out_of_range")(F.Op, py::handle(A[Data]), py::handle(A[Indices]),
                                           py::handle(A[Axis]), E.value());
        throw;
      }
      if (!Got.is_none())
        return Got.release().ptr();
    } catch (...) {
      return raiseCurrent();
    }
  }
  return PyObject_Vectorcall(Fallback, Args, static_cast<size_t>(NArgs), KwNames);
}

template <size_t I>
PyObject *callFunction(PyObject *, PyObject *const *Args, Py_ssize_t NArgs, PyObject *KwNames) {
  return callGather(Functions[I], Made[I].Fallback, Args, NArgs, KwNames);
}

using Trampoline = PyObject *(*)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);
template <size_t... I> constexpr auto trampolines(std::index_sequence<I...>) {
  return std::array<Trampoline, sizeof...(I)>{callFunction<I>...};
}
constexpr auto Trampolines = trampolines(std::make_index_sequence<std::size(Functions)>());

/// Whether the interpreter is finalizing (readable without the GIL).
bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

} // namespace

void takeGilBack(PyThreadState *Saved) {
  try {
    PyEval_RestoreThread(Saved);
  } catch (...) {
    // An exception not thrown by C++ has no exception_ptr: pthread_exit's
    // unwinding (abi::__forced_unwind). A handler of abi::__forced_unwind &
    // would bind its reference to no object.
    if (std::current_exception() || !finalizing())
      throw;
    for (;;)
      pause(); // Never returning, this handler is not left: nothing unwinds.
  }
}

PyObject *raiseCurrent() {
  // An exception not thrown by C++ has no exception_ptr: the unwinding of
  // a thread that pthread_exit or pthread_cancel ends goes on to the
  // thread's end.
  std::exception_ptr Current = std::current_exception();
  if (!Current)
    throw;
  py::detail::translate_exception(Current);
  return nullptr;
}

py::object gatherFunction(py::module_ &Native, const py::function &Fallback,
                          const std::string &Signature) {
  const std::string Module = py::str(Fallback.attr("__module__")),
                    Name = py::str(Fallback.attr("__name__"));
  for (size_t I = 0; I < std::size(Functions); ++I) {
    const GatherFunction &F = Functions[I];
    if (Module != F.Module || Name != F.Name)
      continue;
    MadeFunction &M = Made[I];
    Py_XDECREF(M.Fallback); // A module imported again makes its functions again.
    M.Fallback = Fallback.inc_ref().ptr();
    // "name(signature)\n--\n\n" gives the function its __text_signature__.
    const py::object Doc = Fallback.attr("__doc__");
    M.Doc = Name + Signature + "\n--\n\n" + (Doc.is_none() ? "" : Doc.cast<std::string>());
    M.Def = {F.Name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Trampolines[I])),
             METH_FASTCALL | METH_KEYWORDS, M.Doc.c_str()};
    PyObject *Function = PyCMethod_New(&M.Def, Native.ptr(), py::str(Module).ptr(), nullptr);
    if (!Function)
      throw py::error_already_set();
    return py::reinterpret_steal<py::object>(Function);
  }
  throw py::value_error(Module + "." + Name + " is not a gather function of the package");
}

} // namespace gatherjit::binding
