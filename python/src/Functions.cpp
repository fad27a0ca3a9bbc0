//===- python/src/Functions.cpp - take, take_along_axis, gather_nd -------===//
//
// The package's three gather functions as built-in functions. A call on
// numpy arrays (exactly numpy.ndarray, an int axis, no epilogue, the CPU)
// runs gatherArrays from the call itself; every other call, bad arguments
// included, goes to the package's Python function of the same signature,
// which serves it and raises Python's own errors. A small call costs about
// 0.35 µs, and the Python function's frame would add a quarter to it.
//
//===----------------------------------------------------------------------===//

#include "Native.h"

#include <array>
#include <string_view>

namespace gatherjit::binding {

namespace {

/// One of the three functions: its names, its gather and what the package
/// serves the rest of its calls with.
struct GatherFunction {
  const char *Name;
  const char *Op;
  /// "axis", or gather_nd's "batch_dims".
  const char *AxisName;
  /// Whether the axis may be left out (it is then 0).
  bool AxisDefaults;
  PyObject *Fallback = nullptr;
  std::string Doc;
  PyMethodDef Def{};
};

GatherFunction Functions[] = {{"take_along_axis", "gather_elements", "axis", false},
                              {"take", "gather", "axis", true},
                              {"gather_nd", "gather_nd", "batch_dims", true}};

/// The parameters in order: data, indices, axis, out, mode, epilogue, device.
constexpr int NumParams = 7;
enum Param { Data, Indices, Axis, Out, Mode, Epilogue, Device };

/// The arguments of a call that gatherArrays may serve alone, or false.
bool fastArguments(const GatherFunction &F, PyObject *const *Args, Py_ssize_t NArgs,
                   PyObject *KwNames, std::array<PyObject *, NumParams> &A) {
  if (NArgs > NumParams)
    return false;
  A = {nullptr, nullptr, nullptr, Py_None, nullptr, Py_None, Py_None};
  for (Py_ssize_t I = 0; I < NArgs; ++I)
    A[I] = Args[I];
  const char *Names[NumParams] = {"data", "indices",  F.AxisName, "out",
                                  "mode", "epilogue", "device"};
  const Py_ssize_t NKw = KwNames ? PyTuple_GET_SIZE(KwNames) : 0;
  for (Py_ssize_t K = 0; K < NKw; ++K) {
    PyObject *Key = PyTuple_GET_ITEM(KwNames, K);
    int At = NArgs;
    while (At < NumParams && PyUnicode_CompareWithASCIIString(Key, Names[At]) != 0)
      ++At;
    if (At == NumParams)
      return false; // Unknown, or given twice: the Python function says so.
    A[At] = Args[NArgs + K];
  }
  static PyObject *Zero = PyLong_FromLong(0);
  if (!A[Axis] && F.AxisDefaults)
    A[Axis] = Zero;
  if (!A[Data] || !A[Indices] || !A[Axis])
    return false;
  PyTypeObject *NdArray = py::detail::npy_api::get().PyArray_Type_;
  auto IsArray = [&](PyObject *X) { return Py_TYPE(X) == NdArray; };
  return IsArray(A[Data]) && IsArray(A[Indices]) && PyLong_CheckExact(A[Axis]) &&
         (A[Out] == Py_None || IsArray(A[Out])) && A[Epilogue] == Py_None &&
         (A[Device] == Py_None ||
          (PyUnicode_Check(A[Device]) && PyUnicode_CompareWithASCIIString(A[Device], "cpu") == 0));
}

PyObject *callGather(GatherFunction &F, PyObject *const *Args, Py_ssize_t NArgs,
                     PyObject *KwNames) {
  std::array<PyObject *, NumParams> A;
  if (!fastArguments(F, Args, NArgs, KwNames, A))
    return PyObject_Vectorcall(F.Fallback, Args, static_cast<size_t>(NArgs), KwNames);
  try {
    std::optional<py::array> OutArray;
    if (A[Out] != Py_None)
      OutArray = py::reinterpret_borrow<py::array>(A[Out]);
    const std::string ModeName =
        A[Mode] ? stringArg(A[Mode], "mode", ModeNames) : std::string("raise");
    try {
      return gatherArrays(F.Op, py::reinterpret_borrow<py::array>(A[Data]),
                          py::reinterpret_borrow<py::array>(A[Indices]), A[Axis],
                          std::move(OutArray), ModeName, std::nullopt, true)
          .release()
          .ptr();
    } catch (py::error_already_set &E) {
      // An out-of-range index, named in the caller's shapes.
      if (E.matches(PyExc_IndexError))
        package("_reraise_out_of_range")(F.Op, py::handle(A[Data]), py::handle(A[Indices]),
                                         py::handle(A[Axis]), E.value());
      throw;
    }
  } catch (...) {
    return raiseCurrent();
  }
}

template <int I>
PyObject *callFunction(PyObject *, PyObject *const *Args, Py_ssize_t NArgs, PyObject *KwNames) {
  return callGather(Functions[I], Args, NArgs, KwNames);
}

using Trampoline = PyObject *(*)(PyObject *, PyObject *const *, Py_ssize_t, PyObject *);
constexpr Trampoline Trampolines[] = {callFunction<0>, callFunction<1>, callFunction<2>};

} // namespace

PyObject *raiseCurrent() {
  py::detail::translate_exception(std::current_exception());
  return nullptr;
}

py::object gatherFunction(py::module_ &Module, const std::string &Name, py::function Fallback,
                          const std::string &Signature) {
  for (size_t I = 0; I < std::size(Functions); ++I) {
    GatherFunction &F = Functions[I];
    if (Name != F.Name)
      continue;
    if (F.Fallback)
      throw py::value_error(Name + " is made once");
    F.Fallback = Fallback.release().ptr(); // Kept for the process's life, as the function is.
    // "name(signature)\n--\n\n" gives the function its __text_signature__.
    const py::object Doc = py::getattr(py::handle(F.Fallback), "__doc__", py::none());
    F.Doc = Name + Signature + "\n--\n\n" + (Doc.is_none() ? "" : Doc.cast<std::string>());
    F.Def = {F.Name, reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Trampolines[I])),
             METH_FASTCALL | METH_KEYWORDS, F.Doc.c_str()};
    const py::str ModuleName("gatherjit");
    PyObject *Made = PyCMethod_New(&F.Def, Module.ptr(), ModuleName.ptr(), nullptr);
    if (!Made)
      throw py::error_already_set();
    return py::reinterpret_steal<py::object>(Made);
  }
  throw py::value_error(Name + " is not one of take_along_axis, take, gather_nd");
}

} // namespace gatherjit::binding
