//===- runtime/CudaDriver.h - The CUDA driver, loaded at run time ---------===//
/// \file
/// libcuda.so.1 opened with dlopen (never linked: CPU use never loads it)
/// into a table of the driver API's entry points, the _v2 forms where they
/// exist, and a gather run on a device through it: the kernel's PTX made
/// for the device's architecture (compiler/backend/GpuBackend.cpp), loaded
/// with cuModuleLoadDataEx into the device's primary context, the operands
/// copied in, one launch of the plan's grid, the output copied back.
///
/// Every way this fails is Unsupported with its own message: no driver
/// library, the toolkit's stub library, no device (or not that one), a
/// compute capability below 7.0, a driver too old for the PTX, no PTX
/// compiler in the driver. GATHERJIT_CUDA_DRIVER names another library
/// (the test suite's fake driver).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_CUDADRIVER_H
#define GATHERJIT_RUNTIME_CUDADRIVER_H

#include "gatherjit/Compile.h"
#include "gatherjit/Validate.h"

#include <cstdint>
#include <optional>
#include <string>

namespace gatherjit {

/// "cpu", "cuda" or "cuda:N": the device ordinal, or std::nullopt for the
/// CPU; InvalidArgument naming the text otherwise.
Expected<std::optional<int>> parseDevice(const std::string &Text);

/// What one device run took (milliseconds) and where.
struct DeviceRun {
  std::string Device; ///< e.g. "cuda:0 (sm_90)"
  double PtxMs = 0, LoadMs = 0, KernelUs = 0;
};

/// Runs \p V on CUDA device \p Ordinal: \p Input and \p Indices are host
/// buffers, copied to the device and the output copied back into
/// \p Output. An out-of-range index under Check is the interpreter's
/// error for it.
Expected<DeviceRun> runOnCuda(const ValidDesc &V, int Ordinal, OptLevel Level, const void *Input,
                              const void *Indices, void *Output);

/// The PTX of \p V's kernel, named \p Name, for the architecture of CUDA
/// device \p Ordinal when a driver and the device are there, else for
/// sm_80.
Expected<std::string> ptxFor(const ValidDesc &V, std::optional<int> Ordinal, OptLevel Level,
                             const std::string &Name);

} // namespace gatherjit

#endif
