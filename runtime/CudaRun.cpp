//===- runtime/CudaRun.cpp - Device runs and PTX from descriptors ---------===//

#include "runtime/CudaDriver.h"

#include "compiler/backend/Target.h"
#include "compiler/pipeline/Pipeline.h"
#include "gatherjit/Interpreter.h"
#include "gatherjit/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace gatherjit {

Expected<std::string> ptxFor(const ValidDesc &V, std::optional<int> Ordinal, OptLevel Level,
                             const std::string &Name, const Epilogue &Epi, uint64_t RowOut) {
  std::string Arch = DefaultGpuArch;
  if (Ordinal)
    if (Expected<std::shared_ptr<CudaDevice>> D = CudaDevice::open(*Ordinal))
      Arch = ptxArchFor((*D)->arch());
  Expected<std::unique_ptr<CodeGenerator>> Gen =
      createCodeGenerator({"nvptx64-nvidia-cuda", Arch, ""}, Level);
  if (!Gen)
    return Gen.status();
  ValidDesc Fused = V;
  Expected<PipelineKernel> K = fusedKernel(Fused, Epi, RowOut, (*Gen)->targetMachine(), Name);
  if (!K)
    return K.status();
  Expected<PipelineResult> R = runPipeline({K.take()}, *backendFor(**Gen), Level);
  if (!R)
    return R.status();
  return std::string(R->Bytes.begin(), R->Bytes.end());
}

namespace {

/// A kernel compiled for a device and its three buffers there, the
/// operands copied in.
struct DeviceSetup {
  std::unique_ptr<Runtime> RT;
  std::shared_ptr<CudaDevice> D;
  Kernel K;
  uint64_t Bytes[3] = {};
  std::shared_ptr<void> Buffers[3];
  double JitMs = 0; ///< The driver's compile of the kernel's module.

  Status run() const { return K.run(Buffers[0].get(), Buffers[1].get(), Buffers[2].get()); }
};

Expected<DeviceSetup> setUp(const ValidDesc &V, int Ordinal, RuntimeOptions Options,
                            const void *Input, const void *Indices, const Epilogue &Fused = {},
                            uint64_t RowOut = 0) {
  Options.Device = "cuda:" + std::to_string(Ordinal);
  Options.Threads = 1;
  DeviceSetup Set;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  if (!RT)
    return RT.status();
  Set.RT = RT.take();
  Expected<std::shared_ptr<CudaDevice>> D = CudaDevice::open(Ordinal);
  if (!D)
    return D.status();
  Set.D = D.take();
  Expected<Kernel> K =
      Fused.Function.empty() ? Set.RT->compile(V) : Set.RT->compile(V, Fused, RowOut);
  if (!K)
    return K.status();
  Set.K = K.take();
  // Loaded on this thread (an empty output loads no module).
  Set.JitMs = Set.K.symbolName().empty() ? 0 : lastJitMs();
  const TensorDesc &Output = Set.K.desc().Output; // An epilogue's type and rows.
  const uint64_t Bytes[3] = {requiredElements(V.Input) * V.Input.elementBytes(),
                             requiredElements(V.Indices) * V.Indices.elementBytes(),
                             requiredElements(Output) * Output.elementBytes()};
  for (int B = 0; B < 3; ++B) {
    Set.Bytes[B] = Bytes[B];
    Expected<std::shared_ptr<void>> Made = Set.D->allocate(Bytes[B]);
    if (!Made)
      return Made.status();
    Set.Buffers[B] = Made.take();
  }
  for (auto [B, Host] : {std::pair{0, Input}, {1, Indices}})
    if (Bytes[B])
      if (Status S = Set.D->copyToDevice(Set.Buffers[B].get(), Host, Bytes[B]); !S)
        return S;
  return Set;
}

double median(std::vector<double> Us) {
  if (Us.empty())
    return 0.0;
  std::sort(Us.begin(), Us.end());
  return Us.size() % 2 ? Us[Us.size() / 2] : (Us[Us.size() / 2 - 1] + Us[Us.size() / 2]) / 2;
}

} // namespace

Expected<DeviceRun> runOnCuda(const ValidDesc &V, int Ordinal, const RuntimeOptions &Options,
                              const void *Input, const void *Indices, ByteBuffer &Output,
                              unsigned Repeat, const Epilogue &Fused, uint64_t RowOut) {
  Expected<DeviceSetup> Set = setUp(V, Ordinal, Options, Input, Indices, Fused, RowOut);
  if (!Set)
    return Set.status();
  DeviceRun Run;
  Run.Device = Set->D->name();
  Run.Desc = Set->K.desc();
  Expected<ByteBuffer> Out = ByteBuffer::allocate(Set->Bytes[2], "the output");
  if (!Out)
    return Out.status();
  const CompileTimes &Times = Set->K.compileTimes();
  Run.PtxMs = Times.Emit + Times.Optimize + Times.Codegen;
  Run.LoadMs = Times.Link;
  Run.JitMs = Set->JitMs;
  Run.FromDisk = Set->K.fromDiskCache();
  // The kernel's time by events; then the whole call's, untimed.
  std::vector<double> Kernel, Copy, Call;
  for (unsigned I = 0; I < std::max(1u, Repeat); ++I) {
    KernelTiming Timed;
    if (Status S = Set->run(); !S)
      return S;
    Kernel.push_back(lastKernelUs());
  }
  for (unsigned I = 0; I < std::max(1u, Repeat); ++I) {
    const auto Start = std::chrono::steady_clock::now();
    if (Status S = Set->run(); !S)
      return S;
    Call.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - Start)
            .count());
  }
  // The line: the output's bytes copied on the device, as often.
  const uint64_t OutBytes = Set->Bytes[2];
  if (OutBytes) {
    Expected<std::shared_ptr<void>> Twin = Set->D->allocate(OutBytes);
    if (!Twin)
      return Twin.status();
    for (unsigned I = 0; I < std::max(1u, Repeat); ++I) {
      Expected<double> Us = Set->D->copyUs(Twin->get(), Set->Buffers[2].get(), OutBytes);
      if (!Us)
        return Us.status();
      Copy.push_back(*Us);
    }
  }
  Expected<std::vector<double>> Empty = Set->D->emptyCallsUs(std::max(1u, Repeat));
  if (!Empty)
    return Empty.status();
  Run.KernelUs = median(Kernel);
  Run.CopyUs = median(Copy);
  Run.CallUs = median(Call);
  Run.EmptyCallUs = median(*Empty);
  if (OutBytes)
    if (Status S = Set->D->copyToHost(Out->data(), Set->Buffers[2].get(), OutBytes); !S)
      return S;
  Output = Out.take();
  return Run;
}

Expected<unsigned> checkBadIndicesOnCuda(const ValidDesc &V, int Ordinal, Specialize Mode,
                                         const void *Input, const void *Indices) {
  RuntimeOptions Options;
  Options.Specialization = Mode;
  Expected<DeviceSetup> Set = setUp(V, Ordinal, Options, Input, Indices);
  if (!Set)
    return Set.status();
  const uint64_t Bytes = Set->Bytes[1], Size = V.Indices.elementBytes();
  if (V.Policy != OobPolicy::Check || !Bytes || !V.outputElements())
    return 0u;
  // The largest positive index at the last, the first and the middle
  // element of the indices' buffer in turn, then none; each run on the
  // same kernel.
  const uint64_t Count = Bytes / Size;
  const std::vector<char> Host(static_cast<const char *>(Indices),
                               static_cast<const char *>(Indices) + Bytes);
  auto BadAt = [&](int64_t At) {
    std::vector<char> Bad = Host;
    if (At >= 0) {
      std::memset(&Bad[At * Size], 0xff, Size);
      Bad[At * Size + Size - 1] = 0x7f; // Little-endian: the sign byte last.
    }
    return Bad;
  };
  std::vector<char> Out(Set->Bytes[2]);
  // The device's error (or none) must be the interpreter's for indices Bad.
  auto Compare = [&](const std::vector<char> &Bad, const Status &Got,
                     const std::string &What) -> Status {
    const Status Want = interpret(V, Input, Bad.data(), Out.data());
    if (Want.position() == Got.position() && Want.isOk() == Got.isOk())
      return Status::ok();
    return Status::internal("the device's " + What + " reported '" +
                            (Got ? "no error" : Got.message()) + "', the interpreter '" +
                            (Want ? "no error" : Want.message()) + "'");
  };
  unsigned Runs = 0;
  for (int64_t At : {int64_t(Count - 1), int64_t(0), int64_t(Count / 2), int64_t(-1)}) {
    const std::vector<char> Bad = BadAt(At);
    if (Status S = Set->D->copyToDevice(Set->Buffers[1].get(), Bad.data(), Bytes); !S)
      return S;
    ++Runs;
    if (Status S = Compare(Bad, Set->run(),
                           "run with indices element " + std::to_string(At) + " made bad");
        !S)
      return S;
  }
  // Three asynchronous launches, the middle one's indices bad at their
  // last element: the finish names that one.
  const std::vector<char> Bad = BadAt(int64_t(Count - 1));
  Expected<std::shared_ptr<void>> BadOnDevice = Set->D->allocate(Bytes);
  if (!BadOnDevice)
    return BadOnDevice.status();
  for (auto [To, From] :
       {std::pair{Set->Buffers[1].get(), Host.data()}, {BadOnDevice->get(), Bad.data()}})
    if (Status S = Set->D->copyToDevice(To, From, Bytes); !S)
      return S;
  for (const void *Launched : {Set->Buffers[1].get(), BadOnDevice->get(), Set->Buffers[1].get()})
    if (Status S =
            Set->K.launchOnStream(Set->Buffers[0].get(), Launched, Set->Buffers[2].get(), nullptr);
        !S)
      return S;
  ++Runs;
  if (Status S = Compare(Bad, Set->K.finishStream(nullptr),
                         "asynchronous launches, the second with indices element " +
                             std::to_string(Count - 1) + " made bad,");
      !S)
    return S;
  return Runs;
}

} // namespace gatherjit
