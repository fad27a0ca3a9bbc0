//===- runtime/CudaDriver.cpp - The CUDA driver, loaded at run time -------===//

#include "runtime/CudaDriver.h"

#include "compiler/backend/Backend.h"
#include "compiler/backend/Target.h"
#include "compiler/pipeline/Pipeline.h"
#include "gatherjit/Interpreter.h"

#include <chrono>
#include <cstdlib>
#include <dlfcn.h>
#include <memory>
#include <mutex>

namespace gatherjit {
namespace {

// The driver API's types and the codes gatherjit tells apart (cuda.h).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;
constexpr CUresult Success = 0, NoDevice = 100, InvalidDevice = 101, StubLibrary = 34,
                   InsufficientDriver = 35, JitCompilerNotFound = 221,
                   UnsupportedPtxVersion = 222;
constexpr int AttrMajor = 75, AttrMinor = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*

/// The entry points, resolved once per process.
struct Api {
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*PrimaryCtxRetain)(Handle *, CUdevice);
  CUresult (*CtxSetCurrent)(Handle);
  CUresult (*ModuleLoadDataEx)(Handle *, const void *, unsigned, int *, void **);
  CUresult (*ModuleGetFunction)(Handle *, Handle, const char *);
  CUresult (*ModuleUnload)(Handle);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*LaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, Handle, void **, void **);
  CUresult (*CtxSynchronize)();
  CUresult (*EventCreate)(Handle *, unsigned);
  CUresult (*EventRecord)(Handle, Handle);
  CUresult (*EventSynchronize)(Handle);
  CUresult (*EventElapsedTime)(float *, Handle, Handle);
  CUresult (*EventDestroy)(Handle);
  CUresult (*GetErrorName)(CUresult, const char **);
};

Expected<const Api *> loadApi() {
  static std::once_flag Once;
  static Api Table;
  static Status Failure = Status::ok();
  std::call_once(Once, [] {
    const char *Named = std::getenv("GATHERJIT_CUDA_DRIVER");
    const std::string Library = Named && *Named ? Named : "libcuda.so.1";
    void *Lib = ::dlopen(Library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!Lib) {
      Failure = Status::unsupported("no CUDA driver: " + Library +
                                    " cannot be loaded (a machine with an NVIDIA GPU and its "
                                    "driver is needed for --device cuda)");
      return;
    }
    bool Missing = false;
    std::string First;
    auto Get = [&](auto &Fn, const char *Name) {
      Fn = reinterpret_cast<std::remove_reference_t<decltype(Fn)>>(::dlsym(Lib, Name));
      if (!Fn && !Missing) {
        Missing = true;
        First = Name;
      }
    };
    Get(Table.Init, "cuInit");
    Get(Table.DeviceGetCount, "cuDeviceGetCount");
    Get(Table.DeviceGet, "cuDeviceGet");
    Get(Table.DeviceGetAttribute, "cuDeviceGetAttribute");
    Get(Table.PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    Get(Table.CtxSetCurrent, "cuCtxSetCurrent");
    Get(Table.ModuleLoadDataEx, "cuModuleLoadDataEx");
    Get(Table.ModuleGetFunction, "cuModuleGetFunction");
    Get(Table.ModuleUnload, "cuModuleUnload");
    Get(Table.MemAlloc, "cuMemAlloc_v2");
    Get(Table.MemFree, "cuMemFree_v2");
    Get(Table.MemcpyHtoD, "cuMemcpyHtoD_v2");
    Get(Table.MemcpyDtoH, "cuMemcpyDtoH_v2");
    Get(Table.LaunchKernel, "cuLaunchKernel");
    Get(Table.CtxSynchronize, "cuCtxSynchronize");
    Get(Table.EventCreate, "cuEventCreate");
    Get(Table.EventRecord, "cuEventRecord");
    Get(Table.EventSynchronize, "cuEventSynchronize");
    Get(Table.EventElapsedTime, "cuEventElapsedTime");
    Get(Table.EventDestroy, "cuEventDestroy_v2");
    Get(Table.GetErrorName, "cuGetErrorName");
    if (Missing)
      Failure = Status::unsupported(Library + " lacks " + First +
                                    ": not a CUDA driver gatherjit can use");
  });
  if (!Failure)
    return Failure;
  return &Table;
}

std::string errorName(const Api &A, CUresult R) {
  const char *Name = nullptr;
  if (A.GetErrorName(R, &Name) != Success || !Name)
    return "CUDA error " + std::to_string(R);
  return Name;
}

/// A driver call's failure as a status.
Status failed(const Api &A, CUresult R, const std::string &What) {
  switch (R) {
  case StubLibrary:
    return Status::unsupported("the CUDA driver found is the toolkit's stub library, not a "
                               "driver (" + What + ")");
  case NoDevice:
    return Status::unsupported("no CUDA device (" + What + ")");
  case InsufficientDriver:
  case UnsupportedPtxVersion:
    return Status::unsupported("the CUDA driver is too old for gatherjit's PTX (" + What +
                               ": " + errorName(A, R) + "); update the driver");
  case JitCompilerNotFound:
    return Status::unsupported("the CUDA driver has no PTX compiler (" + What + ")");
  default:
    return Status::unsupported(What + " failed: " + errorName(A, R));
  }
}

/// The primary context of device \p Ordinal, current on this thread, and
/// its compute capability.
struct Device {
  const Api *A = nullptr;
  CUdevice Dev = 0;
  int Major = 0, Minor = 0;
  std::string arch() const { return "sm_" + std::to_string(Major * 10 + Minor); }
};

Expected<Device> openDevice(int Ordinal) {
  Expected<const Api *> A = loadApi();
  if (!A)
    return A.status();
  const Api &Cu = **A;
  if (CUresult R = Cu.Init(0); R != Success)
    return failed(Cu, R, "cuInit");
  int Count = 0;
  if (CUresult R = Cu.DeviceGetCount(&Count); R != Success)
    return failed(Cu, R, "cuDeviceGetCount");
  if (Ordinal < 0 || Ordinal >= Count)
    return Status::unsupported("no CUDA device " + std::to_string(Ordinal) + ": the driver has " +
                               std::to_string(Count));
  Device D;
  D.A = &Cu;
  if (CUresult R = Cu.DeviceGet(&D.Dev, Ordinal); R != Success)
    return failed(Cu, R == InvalidDevice ? NoDevice : R, "cuDeviceGet");
  if (CUresult R = Cu.DeviceGetAttribute(&D.Major, AttrMajor, D.Dev); R != Success)
    return failed(Cu, R, "cuDeviceGetAttribute");
  if (CUresult R = Cu.DeviceGetAttribute(&D.Minor, AttrMinor, D.Dev); R != Success)
    return failed(Cu, R, "cuDeviceGetAttribute");
  if (D.Major < 7)
    return Status::unsupported("CUDA device " + std::to_string(Ordinal) + " is " + D.arch() +
                               "; gatherjit's GPU kernels need sm_70 or later");
  Handle Ctx = nullptr;
  if (CUresult R = Cu.PrimaryCtxRetain(&Ctx, D.Dev); R != Success)
    return failed(Cu, R, "cuDevicePrimaryCtxRetain");
  if (CUresult R = Cu.CtxSetCurrent(Ctx); R != Success)
    return failed(Cu, R, "cuCtxSetCurrent");
  return D;
}

/// Device memory freed when it goes.
struct Buffer {
  const Api *A;
  CUdeviceptr Ptr = 0;
  ~Buffer() {
    if (Ptr)
      A->MemFree(Ptr);
  }
};

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point T0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - T0).count();
}

uint64_t bytesOf(const TensorDesc &T) { return requiredElements(T) * T.elementBytes(); }

} // namespace

Expected<std::optional<int>> parseDevice(const std::string &Text) {
  if (Text.empty() || Text == "cpu")
    return std::optional<int>();
  if (Text == "cuda")
    return std::optional<int>(0);
  if (Text.rfind("cuda:", 0) == 0 && Text.size() > 5 && Text.size() <= 8 &&
      Text.find_first_not_of("0123456789", 5) == std::string::npos)
    return std::optional<int>(std::atoi(Text.c_str() + 5));
  return Status::invalidArgument("--device '" + Text + "' is not cpu, cuda or cuda:N");
}

Expected<std::string> ptxFor(const ValidDesc &V, std::optional<int> Ordinal, OptLevel Level,
                             const std::string &Name) {
  std::string Arch = DefaultGpuArch;
  if (Ordinal)
    if (Expected<Device> D = openDevice(*Ordinal))
      Arch = D->arch();
  Expected<std::unique_ptr<CodeGenerator>> Gen =
      createCodeGenerator({"nvptx64-nvidia-cuda", Arch, ""}, Level);
  if (!Gen)
    return Gen.status();
  Expected<PipelineResult> R = runPipeline({{canonicalize(V), Name}}, *backendFor(**Gen), Level);
  if (!R)
    return R.status();
  return std::string(R->Bytes.begin(), R->Bytes.end());
}

Expected<DeviceRun> runOnCuda(const ValidDesc &V, int Ordinal, OptLevel Level, const void *Input,
                              const void *Indices, void *Output) {
  if (V.Epilogue.Kind != EpilogueKind::None)
    return Status::unsupported("fused epilogues run on the CPU only for now (no --device cuda)");
  Expected<Device> D = openDevice(Ordinal);
  if (!D)
    return D.status();
  const Api &Cu = *D->A;
  DeviceRun Run;
  Run.Device = "cuda:" + std::to_string(Ordinal) + " (" + D->arch() + ")";
  Clock::time_point T0 = Clock::now();
  Expected<std::unique_ptr<CodeGenerator>> Gen =
      createCodeGenerator({"nvptx64-nvidia-cuda", D->arch(), ""}, Level);
  if (!Gen)
    return Gen.status();
  std::unique_ptr<Backend> Gpu = backendFor(**Gen);
  const KernelSpec Spec = canonicalize(V);
  Expected<PipelineResult> Ptx = runPipeline({{Spec, "gj_gather"}}, *Gpu, Level);
  if (!Ptx)
    return Ptx.status();
  Ptx->Bytes.push_back('\0');
  Run.PtxMs = msSince(T0);
  T0 = Clock::now();
  Handle Module = nullptr, Fn = nullptr;
  if (CUresult R = Cu.ModuleLoadDataEx(&Module, Ptx->Bytes.data(), 0, nullptr, nullptr);
      R != Success)
    return failed(Cu, R, "cuModuleLoadDataEx");
  auto Done = [&] { Cu.ModuleUnload(Module); };
  if (CUresult R = Cu.ModuleGetFunction(&Fn, Module, "gj_gather"); R != Success) {
    Done();
    return failed(Cu, R, "cuModuleGetFunction");
  }
  Run.LoadMs = msSince(T0);
  Status S = [&]() -> Status {
    const uint64_t InBytes = bytesOf(V.Input), IdxBytes = bytesOf(V.Indices),
                   OutBytes = bytesOf(V.Output);
    Buffer In{&Cu}, Idx{&Cu}, Out{&Cu}, Word{&Cu};
    for (auto [Buf, Bytes] : {std::pair{&In, InBytes}, {&Idx, IdxBytes}, {&Out, OutBytes},
                              {&Word, uint64_t(8)}})
      if (CUresult R = Cu.MemAlloc(&Buf->Ptr, std::max<uint64_t>(Bytes, 1)); R != Success)
        return failed(Cu, R, "cuMemAlloc");
    const uint64_t None = ~uint64_t(0);
    for (auto [Buf, Host, Bytes] : {std::tuple{&In, Input, InBytes}, {&Idx, Indices, IdxBytes},
                                    {&Word, static_cast<const void *>(&None), uint64_t(8)}})
      if (Bytes)
        if (CUresult R = Cu.MemcpyHtoD(Buf->Ptr, Host, Bytes); R != Success)
          return failed(Cu, R, "cuMemcpyHtoD");
    const KernelPlan P = planKernel(Spec, Gpu->facts());
    void *Args[] = {&In.Ptr, &Idx.Ptr, &Out.Ptr, &Word.Ptr};
    Handle Start = nullptr, Stop = nullptr;
    Cu.EventCreate(&Start, 0);
    Cu.EventCreate(&Stop, 0);
    Cu.EventRecord(Start, nullptr);
    CUresult R = Cu.LaunchKernel(Fn, static_cast<unsigned>(P.Blocks), 1, 1,
                                 static_cast<unsigned>(P.ThreadsPerBlock), 1, 1, 0, nullptr, Args,
                                 nullptr);
    Cu.EventRecord(Stop, nullptr);
    if (R == Success)
      R = Cu.CtxSynchronize();
    float Ms = 0;
    if (R == Success && Cu.EventSynchronize(Stop) == Success &&
        Cu.EventElapsedTime(&Ms, Start, Stop) == Success)
      Run.KernelUs = Ms * 1000.0;
    Cu.EventDestroy(Start);
    Cu.EventDestroy(Stop);
    if (R != Success)
      return failed(Cu, R, "the kernel's launch");
    uint64_t Key = None;
    if (CUresult R2 = Cu.MemcpyDtoH(&Key, Word.Ptr, 8); R2 != Success)
      return failed(Cu, R2, "cuMemcpyDtoH");
    if (OutBytes)
      if (CUresult R2 = Cu.MemcpyDtoH(Output, Out.Ptr, OutBytes); R2 != Success)
        return failed(Cu, R2, "cuMemcpyDtoH");
    if (Key == None)
      return Status::ok();
    // The first bad index's key: its output element and tuple component,
    // mapped to its position in the indices.
    uint64_t E = Key / Spec.TupleSize, Pos = Key % Spec.TupleSize;
    for (unsigned Dim = Spec.Rank; Dim-- > 0;) {
      Pos += (E % Spec.Sizes[Dim]) * Spec.PosStride[Dim];
      E /= Spec.Sizes[Dim];
    }
    return indexOutOfRangeError(V, Indices, Pos);
  }();
  Done();
  if (!S)
    return S;
  return Run;
}

} // namespace gatherjit
