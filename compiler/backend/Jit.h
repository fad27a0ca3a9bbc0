//===- compiler/backend/Jit.h - Linking kernels into the process ---------===//
/// \file
/// Links each kernel's object file into the process on its own, freed when
/// the code is released: evicting a kernel really frees its code, and code
/// for one spec may be linked again (a higher tier, or a recompile after
/// eviction) while older code still runs. x86-64 objects are linked by
/// compiler/backend/ObjectLoader.h, in a fraction of ORC's time; the rest (another
/// host, an object the loader refuses), and every kernel when perf maps or
/// GDB want to know of them, go through one LLJIT per runtime, created at
/// its first use: a process that never needs it never pays for it.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_BACKEND_JIT_H
#define GATHERJIT_COMPILER_BACKEND_JIT_H

#include "compiler/backend/Backend.h"
#include "compiler/backend/Executable.h"
#include "gatherjit/Status.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace llvm::orc {
class JITDylib;
class LLJIT;
} // namespace llvm::orc

namespace gatherjit {

/// The signature of every kernel's NAME_range entry.
using KernelRangeFn = int64_t (*)(const void *, const void *, void *, int64_t, int64_t);

class JitEngine;

struct JitOptions {
  /// Write /tmp/perf-<pid>.map entries so `perf report` names kernels.
  bool PerfMap = false;
  /// Register code with the GDB JIT interface.
  bool Debugger = false;
};

/// Linked host code; freed when the last holder lets go.
class JitCode final : public Executable {
public:
  ~JitCode() override;
  KernelRangeFn entry() const { return Entry; }
  int64_t runRows(const void *Input, const void *Indices, void *Output, int64_t Begin,
                  int64_t End) const override {
    return Entry(Input, Indices, Output, Begin, End);
  }
  void *entryAddress() const override { return reinterpret_cast<void *>(Entry); }

private:
  friend class JitEngine;
  std::shared_ptr<JitEngine> Engine;
  llvm::orc::JITDylib *Dylib = nullptr;
  KernelRangeFn Entry = nullptr;
};

class JitEngine : public std::enable_shared_from_this<JitEngine>, public ArtefactLoader {
public:
  static Expected<std::shared_ptr<JitEngine>> create(const JitOptions &Options);
  ~JitEngine();

  /// Links \p Object and returns its NAME_range entry.
  Expected<std::shared_ptr<const Executable>> link(const std::string &Name,
                                                   const std::vector<char> &Object);
  /// link(), as the host backend's loader.
  Expected<std::shared_ptr<const Executable>> load(const std::string &Name,
                                                   const std::vector<char> &Object,
                                                   const KernelSpec &,
                                                   const KernelPlan &) override {
    return link(Name, Object);
  }
  /// Links \p Object with ORC.
  Expected<std::shared_ptr<JitCode>> linkWithOrc(const std::string &Name,
                                                 const std::vector<char> &Object);
  /// Linked code objects not yet freed.
  uint64_t liveCount() const { return Live.load(); }
  /// True once ORC has been set up (see above).
  bool orcStarted() {
    std::lock_guard<std::mutex> Lock(OrcMutex);
    return J != nullptr;
  }

private:
  friend class JitCode;
  JitEngine() = default;
  /// The LLJIT, created at the first call.
  Expected<llvm::orc::LLJIT *> orc();
  void writePerfMap(const std::string &Name, uint64_t Address, const std::vector<char> &Object);

  std::mutex OrcMutex;
  std::unique_ptr<llvm::orc::LLJIT> J;
  JitOptions Options;
  std::mutex PerfMutex;
  std::atomic<uint64_t> Live{0};
  std::atomic<uint64_t> Linked{0}; ///< Numbers the JITDylibs.
};

} // namespace gatherjit

#endif
