//===- runtime/CudaDriver.h - The CUDA driver, loaded at run time ---------===//
/// \file
/// libcuda.so.1 opened with dlopen (never linked: CPU use never loads it)
/// into a table of the driver API's entry points, the _v2 forms where they
/// exist: a device's primary context, PTX modules loaded with
/// cuModuleLoadDataEx (made for the device's architecture by
/// compiler/backend/GpuBackend.cpp), kernels launched with the plan's grid.
/// runOnCuda (runtime/CudaRun.cpp) is one whole run from host buffers.
///
/// Every way this fails is Unsupported with its own message: no driver
/// library, the toolkit's stub library, no device (or not that one), a
/// compute capability below 7.0, a driver too old for the PTX, no PTX
/// compiler in the driver. GATHERJIT_CUDA_DRIVER names another library
/// (the test suite's fake driver).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_CUDADRIVER_H
#define GATHERJIT_RUNTIME_CUDADRIVER_H

#include "compiler/backend/Backend.h"
#include "gatherjit/Compile.h"
#include "gatherjit/Runtime.h"
#include "gatherjit/Validate.h"
#include "runtime/System.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gatherjit {

struct KernelPlan;
struct KernelSpec;
class Executable;

/// A CUDA device opened through the driver, its primary context current
/// on the threads that use it.
class CudaDevice final : public ArtefactLoader {
public:
  /// Loads the driver and opens device \p Ordinal (see the file comment for
  /// the ways this fails).
  static Expected<std::shared_ptr<CudaDevice>> open(int Ordinal);
  /// "sm_NN", the architecture PTX is made for.
  const std::string &arch() const { return Arch; }
  /// "cuda:N (sm_NN)".
  std::string name() const;
  /// Loads the PTX module \p Ptx and returns its kernel \p Name (planned
  /// by \p Plan, for \p Spec) as code a Kernel runs: runRows launches
  /// the grid on the calling thread's stream (see StreamScope) with device
  /// pointers, waits for it and returns 0, 1 + the first bad index's
  /// position, or DeviceFailed.
  Expected<std::shared_ptr<const Executable>> load(const std::string &Name,
                                                   const std::vector<char> &Ptx,
                                                   const KernelSpec &Spec,
                                                   const KernelPlan &Plan) override;
  /// Device memory of \p Bytes, freed with the last pointer to it.
  Expected<std::shared_ptr<void>> allocate(size_t Bytes) const;
  /// Copies \p Bytes from the host to device memory at \p Dst.
  Status copyToDevice(void *Dst, const void *Src, size_t Bytes) const;
  /// Copies \p Bytes from device memory at \p Src to the host.
  Status copyToHost(void *Dst, const void *Src, size_t Bytes) const;
  /// The time (microseconds, CUDA events) of one device-to-device copy of
  /// \p Bytes: the line a gather that writes those bytes is measured by.
  Expected<double> copyUs(void *Dst, const void *Src, size_t Bytes) const;
  /// The host's time (microseconds) of \p Repeat calls of an empty kernel
  /// (one thread, no parameters), each a launch on the calling thread's
  /// stream and its synchronize: the driver's floor under any call's time.
  Expected<std::vector<double>> emptyCallsUs(unsigned Repeat) const;

private:
  CudaDevice() = default;
  int Ordinal = 0;
  int Dev = 0;
  void *Context = nullptr; ///< The device's primary context, retained once.
  std::string Arch;
};

/// What a device kernel's runRows returns when the driver failed; the
/// message is lastDeviceError() on that thread.
constexpr int64_t DeviceFailed = -2;
std::string lastDeviceError();
/// How long the last device kernel this thread launched in a KernelTiming
/// scope ran (CUDA events); 0 outside one.
double lastKernelUs();
/// The driver's compile time of the last module this thread loaded (its
/// CU_JIT_WALL_TIME, milliseconds): part of the load's time.
double lastJitMs();

/// Launches of device kernels on this thread are timed by CUDA events
/// while the scope lives (two events a launch: about 3 µs of a tiny call).
class KernelTiming {
public:
  KernelTiming();
  ~KernelTiming();

private:
  bool Saved;
};

/// Launches of device kernels on this thread go to \p Stream (a CUstream;
/// null: the context's default stream) while the scope lives.
class StreamScope {
public:
  explicit StreamScope(void *Stream);
  ~StreamScope();

private:
  void *Saved;
};

/// "cpu", "cuda" or "cuda:N": the device ordinal, or std::nullopt for the
/// CPU; InvalidArgument naming the text otherwise.
Expected<std::optional<int>> parseDevice(const std::string &Text);

/// What one device run took and where: the PTX's making and loading
/// (milliseconds), and the medians over its repeats of the kernel and of a
/// device-to-device copy of the output's bytes (microseconds), and of
/// the whole call as its caller sees it: Kernel::run from its start to its
/// return after the stream's synchronize (microseconds, wall clock).
struct DeviceRun {
  std::string Device; ///< e.g. "cuda:0 (sm_90)"
  /// The kernel's descriptor: with an epilogue, the fused one, whose
  /// output the run's output buffer holds.
  ValidDesc Desc;
  double PtxMs = 0, LoadMs = 0, KernelUs = 0, CopyUs = 0, CallUs = 0;
  /// Of LoadMs, the driver's compile (lastJitMs).
  double JitMs = 0;
  /// The median of as many empty kernels' calls (CudaDevice::emptyCallsUs).
  double EmptyCallUs = 0;
  /// The PTX came from the options' CacheDir (no PtxMs).
  bool FromDisk = false;
};

/// Runs \p V on CUDA device \p Ordinal \p Repeat times, in a runtime of
/// \p Options (its Device and Threads set here; Specialize::Never: the
/// family's kernel, AtCompile: its own; a CacheDir keeps the PTX), with
/// the element epilogue \p Fused fused in (none where its Function is
/// empty; \p RowOut as Runtime::compile takes it): \p Input and \p Indices
/// are host buffers, copied to the device, and the output is copied back
/// into \p Output, allocated to the kernel's output (DeviceRun::Desc). An
/// out-of-range index under Check is the interpreter's error for it.
Expected<DeviceRun> runOnCuda(const ValidDesc &V, int Ordinal, const RuntimeOptions &Options,
                              const void *Input, const void *Indices, ByteBuffer &Output,
                              unsigned Repeat = 1, const Epilogue &Fused = {}, uint64_t RowOut = 0);

/// Runs \p V (under Check) on CUDA device \p Ordinal, in a runtime of mode
/// \p Mode, with one index made
/// out of range at a time, at the last, first and middle element of the
/// indices, then none, all through one kernel; then launches it three
/// times asynchronously, the second with its last index bad, and finishes:
/// the number of checks (5), each of whose error (or none) was the
/// interpreter's, or an Internal error naming the first that was not. 0
/// for other policies and empty operands.
Expected<unsigned> checkBadIndicesOnCuda(const ValidDesc &V, int Ordinal, Specialize Mode,
                                         const void *Input, const void *Indices);

/// The PTX of \p V's kernel, named \p Name, with the element epilogue
/// \p Fused fused in (none where its Function is empty), for the
/// architecture of CUDA device \p Ordinal when a driver and the device are
/// there, else for sm_80: the module `gatherjit aot` writes for it.
Expected<std::string> ptxFor(const ValidDesc &V, std::optional<int> Ordinal, OptLevel Level,
                             const std::string &Name, const Epilogue &Fused = {},
                             uint64_t RowOut = 0);

} // namespace gatherjit

#endif
