//===- runtime/CudaRun.cpp - Device runs and PTX from descriptors ---------===//

#include "runtime/CudaDriver.h"

#include "compiler/backend/Backend.h"
#include "compiler/backend/Target.h"
#include "compiler/pipeline/Pipeline.h"
#include "gatherjit/Runtime.h"

#include <algorithm>
#include <vector>

namespace gatherjit {

Expected<std::string> ptxFor(const ValidDesc &V, std::optional<int> Ordinal, OptLevel Level,
                             const std::string &Name) {
  std::string Arch = DefaultGpuArch;
  if (Ordinal)
    if (Expected<std::shared_ptr<CudaDevice>> D = CudaDevice::open(*Ordinal))
      Arch = (*D)->arch();
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
                              const void *Indices, void *Output, unsigned Repeat) {
  if (V.Epilogue.Kind != EpilogueKind::None)
    return Status::unsupported("fused epilogues run on the CPU only for now (no --device cuda)");
  RuntimeOptions Options;
  Options.Device = "cuda:" + std::to_string(Ordinal);
  Options.Opt = Level;
  Options.Threads = 1;
  Expected<std::unique_ptr<Runtime>> RT = Runtime::create(Options);
  if (!RT)
    return RT.status();
  Expected<std::shared_ptr<CudaDevice>> D = CudaDevice::open(Ordinal);
  if (!D)
    return D.status();
  DeviceRun Run;
  Run.Device = (*D)->name();
  Expected<Kernel> K = (*RT)->compile(V);
  if (!K)
    return K.status();
  Run.PtxMs = K->compileTimes().Emit + K->compileTimes().Optimize + K->compileTimes().Codegen;
  Run.LoadMs = K->compileTimes().Link;
  const uint64_t Bytes[3] = {requiredElements(V.Input) * V.Input.elementBytes(),
                             requiredElements(V.Indices) * V.Indices.elementBytes(),
                             requiredElements(V.Output) * V.Output.elementBytes()};
  std::shared_ptr<void> Buffers[3];
  for (int B = 0; B < 3; ++B) {
    Expected<std::shared_ptr<void>> Made = (*D)->allocate(Bytes[B]);
    if (!Made)
      return Made.status();
    Buffers[B] = Made.take();
  }
  for (auto [B, Host] : {std::pair{0, Input}, {1, Indices}})
    if (Bytes[B])
      if (Status S = (*D)->copyToDevice(Buffers[B].get(), Host, Bytes[B]); !S)
        return S;
  std::vector<double> Kernel, Copy;
  for (unsigned I = 0; I < std::max(1u, Repeat); ++I) {
    if (Status S = K->run(Buffers[0].get(), Buffers[1].get(), Buffers[2].get()); !S)
      return S;
    Kernel.push_back(lastKernelUs());
  }
  // The line: the output's bytes copied on the device, as often.
  if (Bytes[2]) {
    Expected<std::shared_ptr<void>> Twin = (*D)->allocate(Bytes[2]);
    if (!Twin)
      return Twin.status();
    for (unsigned I = 0; I < std::max(1u, Repeat); ++I) {
      Expected<double> Us = (*D)->copyUs(Twin->get(), Buffers[2].get(), Bytes[2]);
      if (!Us)
        return Us.status();
      Copy.push_back(*Us);
    }
  }
  auto Median = [](std::vector<double> Us) {
    if (Us.empty())
      return 0.0;
    std::sort(Us.begin(), Us.end());
    return Us.size() % 2 ? Us[Us.size() / 2] : (Us[Us.size() / 2 - 1] + Us[Us.size() / 2]) / 2;
  };
  Run.KernelUs = Median(Kernel);
  Run.CopyUs = Median(Copy);
  if (Bytes[2])
    if (Status S = (*D)->copyToHost(Output, Buffers[2].get(), Bytes[2]); !S)
      return S;
  return Run;
}

} // namespace gatherjit
