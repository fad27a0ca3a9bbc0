//===- python/src/module.cpp - gatherjit._native -------------------------===//
//
// The Python binding of the C++ API: its functions and the Kernel class as
// the gatherjit package's Python half calls them (see Native.h for the
// parts).
//
//===----------------------------------------------------------------------===//

#include "Native.h"

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

PYBIND11_MODULE(_native, M) {
  M.doc() = "gatherjit's native binding (use the gatherjit package)";
  // The runtime's code generator is made while Python imports the rest.
  Runtime::prepare(runtimeOptions());

  py::class_<PyKernel, std::shared_ptr<PyKernel>>(
      M, "Kernel",
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
              S = P.kernel().runOnStream(
                  reinterpret_cast<const void *>(Data), reinterpret_cast<const void *>(Indices),
                  reinterpret_cast<void *>(Out), reinterpret_cast<void *>(Stream));
            }
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
         std::optional<py::tuple> Out) {
        py::dtype DataType("float32"), IndexType("int64"), OutType("float32");
        TensorDesc D = tensorFromSpec(Data, DataType, "data");
        TensorDesc I = tensorFromSpec(Indices, IndexType, "indices");
        std::optional<TensorDesc> O;
        if (Out)
          O = tensorFromSpec(*Out, OutType, "out");
        bool Overflow = false;
        const int64_t Axis = axisValue(AxisObj, Overflow);
        checkAxis(Op, AxisObj, Axis, Overflow, D.rank());
        return compileFor(Op, D, I, Axis, stringArg(Mode, "mode", ModeNames), DataType, O,
                          epilogueOf(Fused), &deviceRuntime(Device));
      },
      py::arg("op"), py::arg("data"), py::arg("indices"), py::arg("axis"), py::arg("mode"),
      py::arg("epilogue"), py::arg("device"), py::arg("out"));
  M.def("compile_descriptor", &compileDescriptor, py::arg("json"),
        py::arg("epilogue") = py::none());
  M.def("gather_tensors", &gatherTensors, py::arg("op"), py::arg("data"), py::arg("indices"),
        py::arg("axis"), py::arg("out"), py::arg("mode"), py::arg("broadcast"),
        py::arg("torch_rules"));
  M.def("set_output_pool", &setOutputPool, py::arg("bytes"), py::arg("linger") = py::none());
  M.def("empty", &newArray, py::arg("dtype"), py::arg("shape"));
  M.def("native_indices", &nativeIndices, py::arg("indices"),
        "Integer indices as a call hands them to its kernel (narrow ones widened to int32, "
        "others in the machine's byte order): the array, or a copy.");
  M.def(
      "gather_arrays",
      [](const std::string &Op, py::array Data, py::array Indices, py::handle AxisObj,
         std::optional<py::array> Out, py::handle Mode, const std::optional<py::tuple> &Fused,
         bool Broadcast) {
        return gatherArrays(Op, std::move(Data), std::move(Indices), AxisObj, std::move(Out),
                            stringArg(Mode, "mode", ModeNames), Fused, Broadcast);
      },
      py::arg("op"), py::arg("data"), py::arg("indices"), py::arg("axis"),
      py::arg("out") = py::none(), py::arg("mode") = "raise", py::arg("epilogue") = py::none(),
      py::arg("broadcast") = true);
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
  M.def("stats", &statsOf, py::arg("device"));
}
