//===- runtime/TierPlan.h - When a shape's specialized kernel is made ----===//
/// \file
/// The adaptive mode's decisions (RuntimeOptions::Specialization), pure
/// functions of a spec: when a shape running the generic loop is hot enough
/// to specialize in the background, and when one call is so large that its
/// specialized kernel pays for its compile within that call. The constants
/// and the measurements that chose them are here; `gatherjit bench
/// --shapes` measures the walks they serve.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_TIERPLAN_H
#define GATHERJIT_RUNTIME_TIERPLAN_H

#include "compiler/spec/KernelSpec.h"
#include "gatherjit/Runtime.h"

#include <algorithm>
#include <cstdint>

namespace gatherjit {

/// A shape is hot after this many runs: the walks the runtime is built for
/// (a batch size or sequence length that changes every few calls) run each
/// shape a handful of times, and a shape seen three times is likely seen
/// again. The compile runs on the background thread, so a wrong guess
/// costs that thread a few milliseconds at O2, not the caller's thread
/// (on a 2-core machine it still shares the caller's caches).
constexpr uint64_t HotRuns = 3;
/// ...or once it has written this many bytes: one call of a few megabytes
/// already loses more to the generic loop than its compile costs the
/// background thread.
constexpr uint64_t HotBytes = uint64_t(1) << 20;

/// Runs before a kernel of \p Spec is hot: HotRuns, or fewer where they
/// write HotBytes.
inline uint64_t hotAfterRuns(const KernelSpec &Spec) {
  const uint64_t Bytes = std::max<uint64_t>(1, Spec.outputBytes());
  return std::clamp<uint64_t>((HotBytes + Bytes - 1) / Bytes, 1, HotRuns);
}

/// What the generic loop loses against the specialized kernel, and what
/// specializing a large kernel costs (LLVM at O2, emit to link).
///
/// Element rows lose per output byte. On a 2-core Xeon: `gatherjit bench
/// --shapes` walk (c) 66 ps/B (the generic loop 348.2 ms against 240.4 ms
/// specialized, over 1.64 GB written); the suite's cases from memory
/// (`gatherjit bench`, one thread) GE1 156 (27.9 against 17.4 ms), GE6
/// 380, GE4 430. The constant, 246 ps/B (walk (c) on a 2-core Zen 4 EPYC,
/// with a generic loop whose element rows ran slower), still has GE1's
/// one-shot call specialized first, which pays there.
///
/// Rows copied whole lose per row and per byte: the generic loop copies a
/// narrow row nearly as fast as a kernel does, a wide one by memcpy where a
/// kernel loads aligned lines. On the Xeon, 4096 rows of a 100,000-row
/// table a call from Python (set_specialize 'never' against 'compile',
/// medians of 300 calls, two runs): rows of 32 bytes 6.4 against 4.9-5.0
/// us (0.37 ns a row), of 64 bytes 8.8-9.2 against 7.1-7.3 (0.44), of 128
/// bytes 30.4-30.5 against 26.6-27.0 (0.88), of 1 KiB 418-424 against
/// 376-377 (10-12). On the Zen 4 (`gatherjit gather --specialize never`
/// against `compile`, one thread, medians of 301 calls, three runs) FLOAT32
/// rows lose more a row: of 16 bytes by 10000 ids from a 16 KiB table 12.3
/// against 6.8 us (0.55 ns a row), from 1.6 MiB 20.1 against 13.0 (0.71),
/// of 32 bytes from 1.6 MiB 22.6 against 15.0 (0.76), of 16 bytes by 100K
/// ids from 16 MiB 0.34 against 0.20 ms (1.4), of 256 bytes from 5 MiB 90
/// against 69 us (2.1). 400 ps a row and 10 ps a byte give the Zen 4's
/// narrow rows from the cache (0.56 ns for 16 bytes), about twice what the
/// Xeon's lose.
///
/// `gatherjit bench`'s O2 compile of a new kernel: 4.6 and 9.4 ms on the
/// Zen 4, 4 ms on the Xeon. The largest is used, so a call is specialized
/// first only where that surely pays.
constexpr uint64_t ElementRowLossPsPerByte = 246;
constexpr uint64_t BlockRowLossPsPerRow = 400;
constexpr uint64_t BlockRowLossPsPerByte = 10;
constexpr uint64_t SpecializeCostNs = 9'400'000;

/// What one call of \p Spec loses to the generic loop, in picoseconds.
inline uint64_t genericLossPs(const KernelSpec &Spec) {
  if (!Spec.innerIsBlock())
    return Spec.outputBytes() * ElementRowLossPsPerByte;
  uint64_t Rows = 1; // Every dimension's but the rows' own.
  for (unsigned D = 0; D + 1 < Spec.Rank; ++D)
    Rows *= Spec.Sizes[D];
  return Rows * BlockRowLossPsPerRow + Spec.outputBytes() * BlockRowLossPsPerByte;
}

/// Runs of the generic loop (or the family of every size's kernel) before
/// \p Spec moves on in the background: to its row family's kernel if that
/// is compiled by then, else to its specialized kernel. Rows copied whole
/// lose so little to the generic loop that a compile of their own pays
/// only once the rows copied have lost it its cost (about 0.9 million rows
/// of 1 KiB, 13 million of 32 bytes): the shapes of a walk before its row
/// family's kernel keep the generic loop and leave the background thread,
/// and the caller's caches, alone.
inline uint64_t specializeAfterRuns(const KernelSpec &Spec) {
  if (Spec.innerIsBlock()) {
    const uint64_t Loss = std::max<uint64_t>(1, genericLossPs(Spec));
    return std::max<uint64_t>(1, (SpecializeCostNs * 1000 + Loss - 1) / Loss);
  }
  return hotAfterRuns(Spec);
}

/// On a device, where a new shape runs its family's kernel (the GPU
/// schedule with every size from the launch), a shape whose output has at
/// least DeviceHotBytes is hot after hotAfterRuns; a smaller one only after
/// DeviceSmallShapeRuns. On an H100 (`gatherjit bench --device cuda`, the
/// generic column), the family kernel lost 17-29 us a call on outputs of
/// 16-64 MiB with block rows or staged rows (G1, GN1, GE1, GE4), 0.2-2.2
/// us on outputs of 2-8 MiB and none on outputs of a few bytes, where the
/// launch is the call; each specialization's compile and module load on
/// the background thread slowed the caller's launches on a shape walk of
/// 200 small shapes (`gatherjit bench --device cuda`'s walk: 95.5 ms when
/// each was specialized after 3 runs, against 44.7 ms for PyTorch's; 23.7
/// ms with these, against 43.4 ms).
constexpr uint64_t DeviceHotBytes = uint64_t(1) << 20;
constexpr uint64_t DeviceSmallShapeRuns = 4096;

/// Runs of a device runtime's family kernel before \p Spec is specialized
/// in the background.
inline uint64_t deviceSpecializeAfterRuns(const KernelSpec &Spec) {
  return Spec.outputBytes() >= DeviceHotBytes ? hotAfterRuns(Spec) : DeviceSmallShapeRuns;
}

/// True if one call of \p Spec loses more to the generic loop than its
/// specialized kernel takes to compile: compile() specializes it before
/// returning, so a one-shot call of a large shape is as fast as ever.
inline bool specializeAtCompile(const KernelSpec &Spec) {
  return genericLossPs(Spec) / 1000 > SpecializeCostNs;
}

/// True if a runtime in \p Mode starts \p Spec without compiling it in
/// compile(): on the generic loop (or, adaptive, its family's kernel).
inline bool startsGeneric(const KernelSpec &Spec, Specialize Mode) {
  if (Spec.hasEpilogue())
    return false; // The generic loop has no epilogue.
  switch (Mode) {
  case Specialize::Adaptive:
    return !specializeAtCompile(Spec);
  case Specialize::AtCompile:
    return false;
  case Specialize::Never:
    return true;
  }
  return false;
}

} // namespace gatherjit

#endif
