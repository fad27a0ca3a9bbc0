//===- runtime/Kernel.cpp - Kernel handles -------------------------------===//

#include "gatherjit/Interpreter.h"
#include "runtime/KernelState.h"

#include <cstring>
#include <memory>
#include <new>
#include <vector>

namespace gatherjit {
namespace {

/// \p Check's status on \p S's indices where the host can read them:
/// \p Indices itself on the CPU, a copy read back from the device for a
/// device kernel.
template <typename StateT, typename CheckT>
Status onHostIndices(const StateT &S, const void *Indices, CheckT &&Check) {
  if (!S.Device)
    return Check(Indices);
  std::vector<char> Host(requiredElements(S.Desc.Indices) * S.Desc.Indices.elementBytes());
  if (!Host.empty())
    if (Status C = S.Device->copyToHost(Host.data(), Indices, Host.size()); !C)
      return C;
  return Check(static_cast<const void *>(Host.data()));
}

/// A kernel's nonzero return \p R as a status: a faulted epilogue, a
/// failed device, or 1 + the position of a bad index in \p Indices, named
/// with its value (read from the device for a device kernel). Kept out of
/// line: a tiny call's run is a few nanoseconds, and its success path
/// should carry none of this.
template <typename StateT>
[[gnu::noinline, gnu::cold]] Status failureStatus(const StateT &S, const void *Indices, int64_t R) {
  if (R == EpilogueFaulted)
    return epilogueFaultError();
  if (R == DeviceFailed)
    return Status::unsupported(lastDeviceError());
  const uint64_t Position = static_cast<uint64_t>(R - 1);
  return onHostIndices(S, Indices,
                       [&](const void *At) { return indexOutOfRangeError(S.Desc, At, Position); });
}

template <typename StateT> Status resultStatus(const StateT &S, const void *Indices, int64_t R) {
  if (R == 0) [[likely]]
    return Status::ok();
  return failureStatus(S, Indices, R);
}

[[gnu::noinline, gnu::cold]] Status emptyHandleError() {
  return Status::invalidArgument("Kernel::run on an empty kernel handle");
}

/// An empty output's run: nothing is written, but under Check every index
/// is (a device kernel's read back from the device first).
template <typename StateT>
[[gnu::noinline]] Status emptyOutputStatus(const StateT &S, const void *Indices) {
  if (S.Desc.Policy != OobPolicy::Check)
    return Status::ok();
  return onHostIndices(S, Indices, [&](const void *At) { return checkEveryIndex(S.Desc, At); });
}

/// What run() and runRows() share: an empty handle is an error and an empty
/// output runs no code (emptyOutputStatus); otherwise the run is counted
/// (for the tier upgrade), \p Body runs the current code and its result
/// becomes a status.
template <typename StateT, typename BodyT>
[[gnu::always_inline]] inline Status runKernel(const StateT *S, const void *Indices, BodyT &&Body) {
  if (!S) [[unlikely]]
    return emptyHandleError();
  if (!S->Code)
    return emptyOutputStatus(*S, Indices);
  S->Code->countRun();
  return resultStatus(*S, Indices, Body(*S, S->Code->current()));
}

} // namespace

const char *kernelTierName(KernelTier Tier) {
  switch (Tier) {
  case KernelTier::Generic:
    return "generic";
  case KernelTier::Family:
    return "family";
  case KernelTier::Specialized:
    return "specialized";
  }
  return "?";
}

const char *specializeName(Specialize Mode) {
  switch (Mode) {
  case Specialize::Adaptive:
    return "adaptive";
  case Specialize::AtCompile:
    return "compile";
  case Specialize::Never:
    return "never";
  }
  return "?";
}

bool parseSpecialize(std::string_view Text, Specialize &Mode) {
  for (Specialize M : {Specialize::Adaptive, Specialize::AtCompile, Specialize::Never})
    if (Text == specializeName(M)) {
      Mode = M;
      return true;
    }
  return false;
}

const ValidDesc &Kernel::desc() const { return S->Desc; }
uint64_t Kernel::rows() const { return S->Rows; }
const std::string &Kernel::symbolName() const {
  static const std::string None;
  return S->Code ? S->symbol() : None;
}
bool Kernel::cacheHit() const { return Hit; }
bool Kernel::fromDiskCache() const { return !Hit && S->FromDisk; }
OptLevel Kernel::optLevel() const { return S && S->Code ? S->Code->level() : OptLevel::O0; }
KernelTier Kernel::tier() const { return S && S->Code ? S->Code->tier() : KernelTier::Specialized; }

const CompileTimes &Kernel::compileTimes() const {
  static const CompileTimes None;
  return Hit ? None : S->Times;
}

Status Kernel::runRows(const void *Input, const void *Indices, void *Output, uint64_t Begin,
                       uint64_t End) const {
  if (S && S->outputOverlaps(Input, Indices, Output))
    return Status::invalidArgument(
        "Kernel::runRows: the output buffer overlaps the input or indices buffer; "
        "run() computes such a call through a temporary");
  return runKernel(S.get(), Indices, [&](const State &, const Executable &Code) {
    return Code.runRows(Input, Indices, Output, static_cast<int64_t>(Begin),
                        static_cast<int64_t>(End));
  });
}

namespace {

/// Every row of \p S's kernel into \p Output, split across its pool where
/// the plan says the output is worth it.
template <typename StateT>
Status runAllRows(const StateT *S, const void *Input, const void *Indices, void *Output) {
  return runKernel(S, Indices, [&](const StateT &St, const Executable &Code) {
    if (!St.Split)
      return Code.runRows(Input, Indices, Output, 0, static_cast<int64_t>(St.Rows));
    // Each chunk reports its first bad position (+1); the smallest wins,
    // as positions grow with the rows.
    return St.Pool->parallelMin(St.Rows, [&](uint64_t Begin, uint64_t End) {
      return Code.runRows(Input, Indices, Output, static_cast<int64_t>(Begin),
                          static_cast<int64_t>(End));
    });
  });
}

/// run() where the output overlaps an operand: the kernel would read what
/// it has written, so it computes into a copy of the output's bytes (gaps
/// between strided elements keep their values), copied back on success,
/// and the result is the one disjoint buffers give.
template <typename StateT>
[[gnu::noinline]] Status runOverlapping(const StateT *S, const void *Input, const void *Indices,
                                        void *Output) {
  if (S->Device)
    return Status::invalidArgument("Kernel::run: the output overlaps the input or indices "
                                   "buffer, which a device kernel does not allow");
  struct Free {
    void operator()(void *P) const { ::operator delete(P, std::align_val_t(64)); }
  };
  std::unique_ptr<void, Free> Temp(
      ::operator new(S->OutputBytes, std::align_val_t(64), std::nothrow));
  if (!Temp)
    return Status::internal("out of memory: the output overlaps an operand, and its " +
                            std::to_string(S->OutputBytes) + "-byte temporary failed");
  std::memcpy(Temp.get(), Output, S->OutputBytes);
  Status R = runAllRows(S, Input, Indices, Temp.get());
  if (R)
    std::memcpy(Output, Temp.get(), S->OutputBytes);
  return R;
}

} // namespace

Status Kernel::run(const void *Input, const void *Indices, void *Output) const {
  if (S && S->outputOverlaps(Input, Indices, Output)) [[unlikely]]
    return runOverlapping(S.get(), Input, Indices, Output);
  return runAllRows(S.get(), Input, Indices, Output);
}

Status Kernel::runOnStream(const void *Input, const void *Indices, void *Output,
                           void *Stream) const {
  StreamScope Scope(Stream);
  return run(Input, Indices, Output);
}

Status Kernel::launchOnStream(const void *Input, const void *Indices, void *Output,
                              void *Stream) const {
  if (!S || !S->Device)
    return run(Input, Indices, Output);
  if (S->outputOverlaps(Input, Indices, Output))
    return Status::invalidArgument("Kernel::launchOnStream: the output overlaps the input or "
                                   "indices buffer, which a device kernel does not allow");
  StreamScope Scope(Stream);
  return runKernel(S.get(), Indices, [&](const State &St, const Executable &Code) {
    return Code.launchRows(Input, Indices, Output, 0, static_cast<int64_t>(St.Rows));
  });
}

Status Kernel::finishStream(void *Stream) const {
  if (!S || !S->Device || !S->Code)
    return Status::ok();
  StreamScope Scope(Stream);
  const void *Indices = nullptr;
  const int64_t R = S->Code->finishLaunches(&Indices);
  return resultStatus(*S, Indices, R);
}

} // namespace gatherjit
