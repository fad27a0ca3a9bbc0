//===- runtime/CudaDriver.cpp - The CUDA driver, loaded at run time -------===//

#include "runtime/CudaDriver.h"

#include "compiler/backend/Executable.h"
#include "compiler/plan/KernelPlan.h"
#include "compiler/spec/KernelSpec.h"
#include "gatherjit/Interpreter.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <string_view>

namespace gatherjit {
namespace {

// The driver API's types and the codes gatherjit tells apart (cuda.h).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;
constexpr CUresult Success = 0, NoDevice = 100, InvalidDevice = 101, StubLibrary = 34,
                   InsufficientDriver = 35, JitCompilerNotFound = 221, UnsupportedPtxVersion = 222;
constexpr int AttrMajor = 75, AttrMinor = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_*
constexpr unsigned HostAllocDeviceMap = 2;    // CU_MEMHOSTALLOC_DEVICEMAP

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
  CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*MemHostAlloc)(void **, size_t, unsigned);
  CUresult (*MemHostGetDevicePointer)(CUdeviceptr *, void *, unsigned);
  CUresult (*MemFreeHost)(void *);
  CUresult (*LaunchKernel)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, Handle, void **, void **);
  CUresult (*CtxSynchronize)();
  CUresult (*StreamSynchronize)(Handle);
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
    Get(Table.MemcpyDtoD, "cuMemcpyDtoD_v2");
    Get(Table.MemHostAlloc, "cuMemHostAlloc");
    Get(Table.MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2");
    Get(Table.MemFreeHost, "cuMemFreeHost");
    Get(Table.LaunchKernel, "cuLaunchKernel");
    Get(Table.CtxSynchronize, "cuCtxSynchronize");
    Get(Table.StreamSynchronize, "cuStreamSynchronize");
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
                               "driver (" +
                               What + ")");
  case NoDevice:
    return Status::unsupported("no CUDA device (" + What + ")");
  case InsufficientDriver:
  case UnsupportedPtxVersion:
    return Status::unsupported("the CUDA driver is too old for gatherjit's PTX (" + What + ": " +
                               errorName(A, R) + "); update the driver");
  case JitCompilerNotFound:
    return Status::unsupported("the CUDA driver has no PTX compiler (" + What + ")");
  default:
    return Status::unsupported(What + " failed: " + errorName(A, R));
  }
}

thread_local double LastJitMs = 0;

/// Loads \p Ptx (a C string) into the current context as \p Module; a
/// failure's message ends with the first line of the driver's compiler's
/// error log, which names what it refused. The driver's compile time
/// becomes lastJitMs().
Status loadModule(const Api &A, const char *Ptx, Handle &Module) {
  constexpr int WallTime = 2, ErrorLogBuffer = 5, ErrorLogBufferBytes = 6; // CUjit_option
  char Log[1024] = {};
  int Options[] = {WallTime, ErrorLogBuffer, ErrorLogBufferBytes};
  void *Values[] = {nullptr, Log, reinterpret_cast<void *>(uintptr_t(sizeof(Log) - 1))};
  const CUresult R = A.ModuleLoadDataEx(&Module, Ptx, 3, Options, Values);
  // The wall time comes back as a float in its value's slot.
  float Ms = 0;
  std::memcpy(&Ms, &Values[0], sizeof(Ms));
  LastJitMs = Ms;
  if (R == Success)
    return Status::ok();
  Status S = failed(A, R, "cuModuleLoadDataEx");
  const std::string_view Text(Log, strnlen(Log, sizeof(Log)));
  const std::string_view Line = Text.substr(0, Text.find('\n'));
  if (Line.empty())
    return S;
  return Status::unsupported(S.message() + "; the driver's PTX compiler: " + std::string(Line));
}

thread_local void *CurrentStream = nullptr;
thread_local std::string LastError;
thread_local double LastKernelUs = 0;
thread_local bool TimeKernels = false;

/// A loaded module and its kernel, shared by every code that launches it
/// (a family kernel's, one code per shape): the status words its launches
/// take (pinned host memory mapped into the device), those no launch
/// holds, and the events that time a launch.
struct LoadedKernel {
  LoadedKernel(const Api &A, Handle Context, Handle Module, Handle Fn, const KernelSpec &Spec,
               const KernelPlan &Plan)
      : A(A), Context(Context), Module(Module), Fn(Fn), Family(Spec.Family),
        PlanBlocks(Plan.Blocks), Threads(Plan.ThreadsPerBlock) {}
  ~LoadedKernel() {
    for (const MappedWord &W : Words)
      A.MemFreeHost(W.Host);
    if (Start) {
      A.EventDestroy(Start);
      A.EventDestroy(Stop);
    }
    A.ModuleUnload(Module);
  }

  struct MappedWord {
    uint64_t *Host = nullptr;
    CUdeviceptr Device = 0;
  };
  /// What a status word holds while no bad index is reported in it.
  static constexpr uint64_t NoKey = ~uint64_t(0);

  /// A status word no launch holds, holding NoKey, into \p Slot (one more
  /// mapped if none is free); false, with the driver's error, otherwise.
  /// Called with Mutex held.
  bool takeWord(size_t &Slot) {
    if (Free.empty()) {
      MappedWord W;
      if (CUresult R = A.MemHostAlloc(reinterpret_cast<void **>(&W.Host), 8, HostAllocDeviceMap);
          R != Success) {
        LastError = failed(A, R, "cuMemHostAlloc").message();
        return false;
      }
      if (CUresult R = A.MemHostGetDevicePointer(&W.Device, W.Host, 0); R != Success) {
        A.MemFreeHost(W.Host);
        LastError = failed(A, R, "cuMemHostGetDevicePointer").message();
        return false;
      }
      __atomic_store_n(W.Host, NoKey, __ATOMIC_RELAXED);
      Words.push_back(W);
      Free.push_back(Words.size() - 1);
    }
    Slot = Free.back();
    Free.pop_back();
    return true;
  }

  const Api &A;
  const Handle Context, Module, Fn;
  /// A family kernel's module: each launch passes its shape.
  const bool Family;
  /// The plan's grid: a family's most blocks.
  const uint64_t PlanBlocks, Threads;
  std::mutex Mutex;
  std::deque<MappedWord> Words;
  std::vector<size_t> Free;
  Handle Start = nullptr, Stop = nullptr;
};

/// A loaded kernel as a Kernel runs it: for a specialized kernel its spec,
/// for a family's one shape of the family, its grid and its asynchronous
/// launches not finished yet.
class CudaCode final : public Executable {
public:
  /// \p Shape: the kernel's spec, or for a family kernel's module one spec
  /// of the family (the family's own spec: code that runs no shape).
  CudaCode(std::shared_ptr<LoadedKernel> Loaded, const KernelSpec &Shape)
      : K(std::move(Loaded)), Bound(!Shape.Family), Tuple(Shape.TupleSize), Rank(Shape.Rank) {
    if (!Bound)
      return;
    Blocks = K->Family ? gridBlocks(Shape.elements(), K->Threads, K->PlanBlocks) : K->PlanBlocks;
    if (K->Family)
      Values = familyShape(Shape);
    for (unsigned D = 0; D < Rank; ++D) {
      Sizes[D] = Shape.Sizes[D];
      PosStride[D] = Shape.PosStride[D];
    }
  }

  std::shared_ptr<const Executable> forShape(const KernelSpec &Shape) const override {
    assert(K->Family && !Shape.Family && "a family kernel's module, bound to one of its shapes");
    return std::make_shared<CudaCode>(K, Shape);
  }

  /// A call is the launch and one synchronize: the status word lives in
  /// pinned host memory mapped into the device's address space, so its
  /// key needs no copy back, and it is reset only after a bad index (a run
  /// without one leaves it as it was). Events time the launch only inside
  /// a KernelTiming scope.
  int64_t runRows(const void *Input, const void *Indices, void *Output, int64_t Begin,
                  int64_t End) const override {
    if (std::max<int64_t>(Begin, 0) >= std::min<int64_t>(End, 1))
      return 0; // The grid is the one row.
    if (!Bound)
      return unbound();
    std::unique_lock<std::mutex> Lock(K->Mutex);
    size_t Slot;
    if (!prepareLaunch(Slot))
      return DeviceFailed;
    uint64_t *Word = K->Words[Slot].Host;
    auto GiveBack = [&](int64_t Result) {
      if (!Lock.owns_lock())
        Lock.lock();
      K->Free.push_back(Slot);
      return Result;
    };
    // The events are the module's: a timed call keeps them to itself.
    const bool Timed = TimeKernels;
    if (Timed && !K->Start) {
      K->A.EventCreate(&K->Start, 0);
      K->A.EventCreate(&K->Stop, 0);
    }
    if (Timed)
      K->A.EventRecord(K->Start, CurrentStream);
    if (CUresult R = launch(Input, Indices, Output, Slot); R != Success)
      return GiveBack(fail(R, "the kernel's launch"));
    if (Timed)
      K->A.EventRecord(K->Stop, CurrentStream);
    else
      Lock.unlock(); // The word is this call's: other shapes' calls launch meanwhile.
    const CUresult Synced = synchronize();
    if (Synced != Success)
      return GiveBack(fail(Synced, "the kernel"));
    float Ms = 0;
    LastKernelUs =
        Timed && K->A.EventElapsedTime(&Ms, K->Start, K->Stop) == Success ? Ms * 1000.0 : 0;
    return GiveBack(takeKey(Word));
  }

  /// An asynchronous launch keeps its status word until the finish that
  /// reads it.
  int64_t launchRows(const void *Input, const void *Indices, void *Output, int64_t Begin,
                     int64_t End) const override {
    if (std::max<int64_t>(Begin, 0) >= std::min<int64_t>(End, 1))
      return 0;
    if (!Bound)
      return unbound();
    std::lock_guard<std::mutex> Lock(K->Mutex);
    size_t Slot;
    if (!prepareLaunch(Slot))
      return DeviceFailed;
    if (CUresult R = launch(Input, Indices, Output, Slot); R != Success) {
      K->Free.push_back(Slot);
      return fail(R, "the kernel's launch");
    }
    Pending.push_back({CurrentStream, Slot, Indices});
    return 0;
  }

  int64_t finishLaunches(const void **Indices) const override {
    if (CUresult R = K->A.CtxSetCurrent(K->Context); R != Success)
      return fail(R, "cuCtxSetCurrent");
    // This stream's launches so far, waited for without the lock (other
    // shapes' calls launch meanwhile); launches made since are a later
    // finish's.
    std::vector<Launch> Mine;
    {
      std::lock_guard<std::mutex> Lock(K->Mutex);
      std::vector<Launch> Others;
      for (const Launch &L : Pending)
        (L.Stream == CurrentStream ? Mine : Others).push_back(L);
      Pending = std::move(Others);
    }
    const CUresult Synced = synchronize();
    std::lock_guard<std::mutex> Lock(K->Mutex);
    if (Synced != Success) {
      Pending.insert(Pending.end(), Mine.begin(), Mine.end());
      return fail(Synced, "the kernel");
    }
    int64_t First = 0;
    for (const Launch &L : Mine) {
      const int64_t R = takeKey(K->Words[L.Slot].Host);
      if (R && !First) {
        First = R;
        *Indices = L.Indices;
      }
      K->Free.push_back(L.Slot);
    }
    return First;
  }
  void *entryAddress() const override { return nullptr; }

private:
  struct Launch {
    void *Stream;
    size_t Slot;
    const void *Indices;
  };

  int64_t fail(CUresult R, const char *What) const {
    LastError = failed(K->A, R, What).message();
    return DeviceFailed;
  }
  /// With K->Mutex held: the module's context current on this thread and
  /// a status word taken into \p Slot; false, with the driver's error,
  /// otherwise.
  bool prepareLaunch(size_t &Slot) const {
    if (CUresult R = K->A.CtxSetCurrent(K->Context); R != Success) {
      fail(R, "cuCtxSetCurrent");
      return false;
    }
    return K->takeWord(Slot);
  }
  int64_t unbound() const {
    LastError = "a family kernel runs bound to one of its shapes";
    return DeviceFailed;
  }
  CUresult synchronize() const {
    return CurrentStream ? K->A.StreamSynchronize(CurrentStream) : K->A.CtxSynchronize();
  }
  /// Launches the grid on the thread's stream with status word \p Slot (and
  /// a family's shape, whose bytes the driver copies at the launch).
  CUresult launch(const void *Input, const void *Indices, void *Output, size_t Slot) const {
    CUdeviceptr In = reinterpret_cast<CUdeviceptr>(Input),
                Idx = reinterpret_cast<CUdeviceptr>(Indices),
                Out = reinterpret_cast<CUdeviceptr>(Output);
    void *Args[] = {&In, &Idx, &Out, &K->Words[Slot].Device, const_cast<uint64_t *>(Values.data())};
    return K->A.LaunchKernel(K->Fn, static_cast<unsigned>(Blocks), 1, 1,
                             static_cast<unsigned>(K->Threads), 1, 1, 0, CurrentStream, Args,
                             nullptr);
  }
  /// 0 if the status word \p Word holds no key, else 1 + the position in
  /// the indices of the bad index its key names (its output element and
  /// tuple component), or EpilogueFaulted; the word is reset.
  int64_t takeKey(uint64_t *Word) const {
    const uint64_t Key = __atomic_load_n(Word, __ATOMIC_ACQUIRE);
    if (Key == LoadedKernel::NoKey)
      return 0;
    __atomic_store_n(Word, LoadedKernel::NoKey, __ATOMIC_RELEASE);
    if (Key >= DeviceEpilogueFaultBit)
      return EpilogueFaulted;
    uint64_t E = Key / Tuple, Pos = Key % Tuple;
    for (unsigned D = Rank; D-- > 0;) {
      Pos += (E % Sizes[D]) * PosStride[D];
      E /= Sizes[D];
    }
    return static_cast<int64_t>(Pos + 1);
  }

  const std::shared_ptr<LoadedKernel> K;
  const bool Bound;
  uint64_t Blocks = 0, Tuple;
  unsigned Rank;
  uint64_t Sizes[MaxRank] = {}, PosStride[MaxRank] = {};
  std::array<uint64_t, FamilyShapeSlots> Values{};
  /// Guarded by K->Mutex.
  mutable std::vector<Launch> Pending;
};

} // namespace

Expected<std::shared_ptr<CudaDevice>> CudaDevice::open(int Ordinal) {
  Expected<const Api *> Loaded = loadApi();
  if (!Loaded)
    return Loaded.status();
  const Api &Cu = **Loaded;
  if (CUresult R = Cu.Init(0); R != Success)
    return failed(Cu, R, "cuInit");
  int Count = 0;
  if (CUresult R = Cu.DeviceGetCount(&Count); R != Success)
    return failed(Cu, R, "cuDeviceGetCount");
  if (Ordinal < 0 || Ordinal >= Count)
    return Status::unsupported("no CUDA device " + std::to_string(Ordinal) + ": the driver has " +
                               std::to_string(Count));
  std::shared_ptr<CudaDevice> D(new CudaDevice);
  D->Ordinal = Ordinal;
  if (CUresult R = Cu.DeviceGet(&D->Dev, Ordinal); R != Success)
    return failed(Cu, R == InvalidDevice ? NoDevice : R, "cuDeviceGet");
  int Major = 0, Minor = 0;
  if (CUresult R = Cu.DeviceGetAttribute(&Major, AttrMajor, D->Dev); R != Success)
    return failed(Cu, R, "cuDeviceGetAttribute");
  if (CUresult R = Cu.DeviceGetAttribute(&Minor, AttrMinor, D->Dev); R != Success)
    return failed(Cu, R, "cuDeviceGetAttribute");
  D->Arch = "sm_" + std::to_string(Major * 10 + Minor);
  if (Major < 7)
    return Status::unsupported("CUDA device " + std::to_string(Ordinal) + " is " + D->Arch +
                               "; gatherjit's GPU kernels need sm_70 or later");
  if (CUresult R = Cu.PrimaryCtxRetain(&D->Context, D->Dev); R != Success)
    return failed(Cu, R, "cuDevicePrimaryCtxRetain");
  if (CUresult R = Cu.CtxSetCurrent(D->Context); R != Success)
    return failed(Cu, R, "cuCtxSetCurrent");
  return D;
}

std::string CudaDevice::name() const {
  return "cuda:" + std::to_string(Ordinal) + " (" + Arch + ")";
}

Expected<std::shared_ptr<const Executable>> CudaDevice::load(const std::string &Name,
                                                             const std::vector<char> &PtxText,
                                                             const KernelSpec &Spec,
                                                             const KernelPlan &Plan) {
  // The driver reads the module as a C string.
  const std::string Ptx(PtxText.begin(), PtxText.end());
  const Api &Cu = **loadApi();
  Handle Module = nullptr, Fn = nullptr;
  // The loading thread may not be the one that opened the device.
  if (CUresult R = Cu.CtxSetCurrent(Context); R != Success)
    return failed(Cu, R, "cuCtxSetCurrent");
  if (Status S = loadModule(Cu, Ptx.c_str(), Module); !S)
    return S;
  if (CUresult R = Cu.ModuleGetFunction(&Fn, Module, Name.c_str()); R != Success) {
    Cu.ModuleUnload(Module);
    return failed(Cu, R, "cuModuleGetFunction");
  }
  return std::shared_ptr<const Executable>(std::make_shared<CudaCode>(
      std::make_shared<LoadedKernel>(Cu, Context, Module, Fn, Spec, Plan), Spec));
}

Status CudaDevice::copyToHost(void *Dst, const void *Src, size_t Bytes) const {
  const Api &Cu = **loadApi();
  if (CUresult R = Cu.MemcpyDtoH(Dst, reinterpret_cast<CUdeviceptr>(Src), Bytes); R != Success)
    return failed(Cu, R, "cuMemcpyDtoH");
  return Status::ok();
}

Expected<std::shared_ptr<void>> CudaDevice::allocate(size_t Bytes) const {
  const Api *Cu = *loadApi();
  CUdeviceptr Ptr = 0;
  if (CUresult R = Cu->MemAlloc(&Ptr, std::max<size_t>(Bytes, 1)); R != Success)
    return failed(*Cu, R, "cuMemAlloc");
  return std::shared_ptr<void>(reinterpret_cast<void *>(Ptr),
                               [Cu](void *P) { Cu->MemFree(reinterpret_cast<CUdeviceptr>(P)); });
}

Status CudaDevice::copyToDevice(void *Dst, const void *Src, size_t Bytes) const {
  const Api &Cu = **loadApi();
  if (CUresult R = Cu.MemcpyHtoD(reinterpret_cast<CUdeviceptr>(Dst), Src, Bytes); R != Success)
    return failed(Cu, R, "cuMemcpyHtoD");
  return Status::ok();
}

Expected<double> CudaDevice::copyUs(void *Dst, const void *Src, size_t Bytes) const {
  const Api &Cu = **loadApi();
  Handle Start = nullptr, Stop = nullptr;
  Cu.EventCreate(&Start, 0);
  Cu.EventCreate(&Stop, 0);
  Cu.EventRecord(Start, nullptr);
  CUresult R =
      Cu.MemcpyDtoD(reinterpret_cast<CUdeviceptr>(Dst), reinterpret_cast<CUdeviceptr>(Src), Bytes);
  Cu.EventRecord(Stop, nullptr);
  float Ms = 0;
  if (R == Success)
    R = Cu.EventSynchronize(Stop);
  if (R == Success)
    R = Cu.EventElapsedTime(&Ms, Start, Stop);
  Cu.EventDestroy(Start);
  Cu.EventDestroy(Stop);
  if (R != Success)
    return failed(Cu, R, "cuMemcpyDtoD");
  return Ms * 1000.0;
}

Expected<std::vector<double>> CudaDevice::emptyCallsUs(unsigned Repeat) const {
  // PTX of the oldest architecture gatherjit runs on: every driver that
  // opens a device JIT-compiles it.
  static const char Ptx[] = ".version 6.0\n.target sm_70\n.address_size 64\n"
                            ".visible .entry gj_empty()\n{\n\tret;\n}\n";
  const Api &Cu = **loadApi();
  Handle Module = nullptr, Fn = nullptr;
  if (CUresult R = Cu.CtxSetCurrent(Context); R != Success)
    return failed(Cu, R, "cuCtxSetCurrent");
  if (Status S = loadModule(Cu, Ptx, Module); !S)
    return S;
  CUresult R = Cu.ModuleGetFunction(&Fn, Module, "gj_empty");
  std::vector<double> Us;
  // One untimed call first: the first launch of a module costs more.
  for (unsigned I = 0; I <= Repeat && R == Success; ++I) {
    const auto Start = std::chrono::steady_clock::now();
    R = Cu.LaunchKernel(Fn, 1, 1, 1, 1, 1, 1, 0, CurrentStream, nullptr, nullptr);
    if (R == Success)
      R = CurrentStream ? Cu.StreamSynchronize(CurrentStream) : Cu.CtxSynchronize();
    if (I > 0)
      Us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - Start)
              .count());
  }
  Cu.ModuleUnload(Module);
  if (R != Success)
    return failed(Cu, R, "the empty kernel");
  return Us;
}

std::string lastDeviceError() { return LastError; }
double lastKernelUs() { return LastKernelUs; }
double lastJitMs() { return LastJitMs; }

KernelTiming::KernelTiming() : Saved(TimeKernels) { TimeKernels = true; }
KernelTiming::~KernelTiming() { TimeKernels = Saved; }

StreamScope::StreamScope(void *Stream) : Saved(CurrentStream) { CurrentStream = Stream; }
StreamScope::~StreamScope() { CurrentStream = Saved; }

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

} // namespace gatherjit
