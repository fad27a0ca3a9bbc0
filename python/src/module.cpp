//===- python/src/module.cpp - gatherjit._native -------------------------===//
//
// The Python binding of the C++ API: its functions and the Kernel class as
// the gatherjit package's Python half calls them (see Native.h for the
// parts).
//
//===----------------------------------------------------------------------===//

#include "Native.h"

#include <algorithm>
#include <cstring>

using namespace gatherjit;
using namespace gatherjit::binding;

/// The cache statistics of the process's runtime for \p Device ("cpu",
/// "cuda" or "cuda:N"), as Python's stats() returns them.
static py::dict statsOf(const std::string &Device) {
  const CacheStats S = Device == "cpu" ? runtime().stats() : deviceRuntime(Device).stats();
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
  D["output_pool_bytes"] = outputPoolIdleBytes();
  return D;
}

/// k(data, indices, out=None) from the Kernel type's call slot. pybind11
/// matches keyword arguments to parameters at about 0.25 µs a call, as
/// long as a small run itself; this reads the few it takes directly, with
/// Python's errors for the rest. Kernel.__call__ remains pybind11's, the
/// same function.
static PyObject *callKernel(PyObject *Self, PyObject *Args, PyObject *Kwargs) {
  static constexpr const char *Names[] = {"data", "indices", "out"};
  try {
    const Py_ssize_t Given = PyTuple_GET_SIZE(Args);
    if (Given > 3)
      throw py::type_error("Kernel.__call__() takes from 2 to 3 positional arguments but " +
                           std::to_string(Given) + " were given");
    PyObject *Operands[3] = {nullptr, nullptr, Py_None};
    for (Py_ssize_t I = 0; I < Given; ++I)
      Operands[I] = PyTuple_GET_ITEM(Args, I);
    Py_ssize_t Pos = 0;
    PyObject *Key, *Value;
    while (Kwargs && PyDict_Next(Kwargs, &Pos, &Key, &Value)) {
      const char *Name = PyUnicode_Check(Key) ? PyUnicode_AsUTF8(Key) : nullptr;
      if (!Name)
        throw py::type_error("Kernel.__call__() keywords must be strings");
      const auto *It = std::find_if(std::begin(Names), std::end(Names),
                                    [&](const char *N) { return std::strcmp(N, Name) == 0; });
      if (It == std::end(Names))
        throw py::type_error(std::string("Kernel.__call__() got an unexpected keyword argument '") +
                             Name + "'");
      const Py_ssize_t At = It - std::begin(Names);
      if (At < Given)
        throw py::type_error(std::string("Kernel.__call__() got multiple values for argument '") +
                             Name + "'");
      Operands[At] = Value;
    }
    for (int I = 0; I < 2; ++I)
      if (!Operands[I])
        throw py::type_error(std::string("Kernel.__call__() missing required argument '") +
                             Names[I] + "'");
    PyKernel &K = py::cast<PyKernel &>(py::handle(Self));
    return K.call(Operands[0], Operands[1], Operands[2]).release().ptr();
  } catch (...) {
    return raiseCurrent();
  }
}

/// The package's calls of every gather on arrays and tensors, functions of
/// positional arguments called with Python's vector convention: pybind11's
/// dispatcher (its argument vectors and casters) costs about 0.15 µs a
/// call, a third of a small gather's.
static void expectArguments(Py_ssize_t N, Py_ssize_t Want, const char *Function) {
  if (N != Want)
    throw py::type_error(std::string(Function) + "() takes " + std::to_string(Want) +
                         " positional arguments but " + std::to_string(N) + " were given");
}

/// The gather a package call names.
static std::string opArg(PyObject *Op) {
  return stringArg(Op, "op", "'gather_elements', 'gather' or 'gather_nd'");
}

/// gather_arrays(op, data, indices, axis, out, mode, epilogue, broadcast)
static PyObject *gatherArraysCall(PyObject *, PyObject *const *Args, Py_ssize_t N) {
  try {
    expectArguments(N, 8, "gather_arrays");
    std::optional<py::array> Out;
    if (Args[4] != Py_None)
      Out = operand(Args[4], "out", true);
    std::optional<py::tuple> Fused;
    if (Args[6] != Py_None) {
      if (!PyTuple_Check(Args[6]))
        throw py::type_error("epilogue must be a tuple from gatherjit.Epilogue");
      Fused = py::reinterpret_borrow<py::tuple>(Args[6]);
    }
    return gatherArrays(opArg(Args[0]), operand(Args[1], "data", false),
                        operand(Args[2], "indices", false), Args[3], std::move(Out),
                        stringArg(Args[5], "mode", ModeNames), Fused, PyObject_IsTrue(Args[7]) == 1)
        .release()
        .ptr();
  } catch (...) {
    return raiseCurrent();
  }
}

/// gather_tensors(op, data, indices, axis, out, mode, broadcast, torch_rules)
static PyObject *gatherTensorsCall(PyObject *, PyObject *const *Args, Py_ssize_t N) {
  try {
    expectArguments(N, 8, "gather_tensors");
    return gatherTensors(opArg(Args[0]), Args[1], Args[2], Args[3], Args[4], Args[5],
                         PyObject_IsTrue(Args[6]) == 1, PyObject_IsTrue(Args[7]) == 1)
        .release()
        .ptr();
  } catch (...) {
    return raiseCurrent();
  }
}

PYBIND11_MODULE(_native, M) {
  M.doc() = "gatherjit's native binding (use the gatherjit package)";
  DescrLayout::Numpy2 =
      py::module_::import("numpy").attr("__version__").cast<std::string>().rfind("1.", 0) != 0;
  // pybind11's table of numpy's C API is a function-local static whose
  // first use imports numpy.core.multiarray: under numpy 2 a module not yet
  // imported, whose file read releases the GIL while the static's guard is
  // held, so two threads' first calls would deadlock (one waiting on the
  // guard holding the GIL, the other for the GIL holding the guard). It and the
  // binding's own statics that import are made here, on the importing
  // thread, before any call.
  py::detail::npy_api::get();
  plainArray(Py_None);
  // The runtime's code generator is made while Python imports the rest.
  Runtime::prepare(runtimeOptions());

  py::class_<PyKernel, std::shared_ptr<PyKernel>> KernelClass(
      M, "Kernel",
      "A gather compiled for one layout of its "
      "operands; call it as k(data, indices, out=None).");
  KernelClass
      .def("__call__", &PyKernel::call, py::arg("data"), py::arg("indices"),
           py::arg("out") = py::none(),
           "Runs the kernel (the GIL released) on arrays of the compiled shapes, dtypes and "
           "strides; returns out, or a new array.")
      .def(
          "_run_device",
          [](const PyKernel &P, uintptr_t Data, uintptr_t Indices, uintptr_t Out,
             uintptr_t Stream) {
            if (P.runsNothing())
              return;
            const Status S = withoutGil(true, [&] {
              return P.kernel().runOnStream(
                  reinterpret_cast<const void *>(Data), reinterpret_cast<const void *>(Indices),
                  reinterpret_cast<void *>(Out), reinterpret_cast<void *>(Stream));
            });
            if (!S)
              raise(S);
          },
          py::arg("data"), py::arg("indices"), py::arg("out"), py::arg("stream"))
      .def("ir", &PyKernel::ir, "The optimized LLVM IR.")
      .def("asm", &PyKernel::assembly, "The machine code, as assembly.")
      .def(
          "save_object",
          [](PyKernel &K, py::handle Path, py::handle Name, py::handle Header) {
            K.saveObject(pathArg(Path, "path"), stringArg(Name, "name", "a C identifier"),
                         Header.is_none() ? std::string() : pathArg(Header, "header"));
          },
          py::arg("path"), py::arg("name") = "gather", py::arg("header") = py::none(),
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
  reinterpret_cast<PyTypeObject *>(KernelClass.ptr())->tp_call = callKernel;
  PyType_Modified(reinterpret_cast<PyTypeObject *>(KernelClass.ptr()));

  M.def(
      "compile",
      [](const std::string &Op, py::tuple Data, py::tuple Indices, py::handle AxisObj,
         py::handle Mode, const std::optional<py::tuple> &Fused) {
        py::dtype DataType("float32"), IndexType("int64");
        TensorDesc D = tensorFromSpec(Data, DataType, "data");
        TensorDesc I = tensorFromSpec(Indices, IndexType, "indices");
        bool Overflow = false;
        const int64_t Axis = axisValue(AxisObj, Overflow);
        checkAxis(Op, AxisObj, Axis, Overflow, D.rank());
        return compileFor(Op, D, I, Axis, stringArg(Mode, "mode", ModeNames), DataType,
                          std::nullopt, epilogueOf(Fused));
      },
      py::arg("op"), py::arg("data"), py::arg("indices"), py::arg("axis") = 0,
      py::arg("mode") = "raise", py::arg("epilogue") = py::none());
  M.def(
      "compile_device",
      [](const std::string &Op, py::tuple Data, py::tuple Indices, py::handle AxisObj,
         py::handle Mode, const std::optional<py::tuple> &Fused, const std::string &Device,
         std::optional<py::tuple> Out, bool Broadcast) {
        py::dtype DataType("float32"), IndexType("int64"), OutType("float32");
        TensorDesc D = tensorFromSpec(Data, DataType, "data");
        TensorDesc I = tensorFromSpec(Indices, IndexType, "indices");
        std::optional<TensorDesc> O;
        if (Out)
          O = tensorFromSpec(*Out, OutType, "out");
        bool Overflow = false;
        const int64_t Axis = axisValue(AxisObj, Overflow);
        checkAxis(Op, AxisObj, Axis, Overflow, D.rank());
        if (Broadcast && Op == "gather_elements")
          broadcastAlongAxis(D, I, Axis);
        return compileFor(Op, D, I, Axis, stringArg(Mode, "mode", ModeNames), DataType, O,
                          epilogueOf(Fused), &deviceRuntime(Device));
      },
      py::arg("op"), py::arg("data"), py::arg("indices"), py::arg("axis"), py::arg("mode"),
      py::arg("epilogue"), py::arg("device"), py::arg("out"), py::arg("broadcast"));
  M.def("compile_descriptor", &compileDescriptor, py::arg("json"),
        py::arg("epilogue") = py::none());
  M.def("set_output_pool", &setOutputPool, py::arg("bytes"), py::arg("linger") = py::none());
  M.def("empty", &newArray, py::arg("dtype"), py::arg("shape"));
  M.def("native_indices", &nativeIndices, py::arg("indices"),
        "Integer indices as a call hands them to its kernel (narrow ones widened to int32, "
        "others in the machine's byte order): the array, or a copy.");
  static PyMethodDef Calls[] = {
      {"gather_arrays",
       reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(gatherArraysCall)), METH_FASTCALL,
       "gather_arrays(op, data, indices, axis, out, mode, epilogue, broadcast): take, "
       "take_along_axis or gather_nd on numpy arrays into out or a new array."},
      {"gather_tensors",
       reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(gatherTensorsCall)),
       METH_FASTCALL,
       "gather_tensors(op, data, indices, axis, out, mode, broadcast, torch_rules): the same on "
       "PyTorch CPU tensors; None where the general path must serve the call."},
      {nullptr, nullptr, 0, nullptr}};
  if (PyModule_AddFunctions(M.ptr(), Calls) != 0)
    throw py::error_already_set();
  M.def(
      "gather_function",
      [M](const py::function &Fallback, const std::string &Signature) mutable {
        return gatherFunction(M, Fallback, Signature);
      },
      py::arg("fallback"), py::arg("signature"),
      "One of the package's gather functions as a built-in function: the calls the native "
      "layer serves alone run from the call, every other call goes to fallback.");
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
    (void)withoutGil(true, [] {
      runtime().drainBackground();
      return Status::ok();
    });
  });
  M.def("_stop_background", [] {
    if (!RuntimeCreated)
      return;
    (void)withoutGil(true, [] {
      runtime().stopBackground();
      return Status::ok();
    });
  });
  M.def("stats", &statsOf, py::arg("device"));
}
