//===- compiler/backend/Jit.cpp - Linking kernels into the process -------===//

#include "compiler/backend/Jit.h"

#include "compiler/backend/ObjectLoader.h"
#include "compiler/backend/Target.h"

#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/DebugObjectManagerPlugin.h>
#include <llvm/ExecutionEngine/Orc/EPCDebugObjectRegistrar.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h>
#include <llvm/ExecutionEngine/Orc/TargetProcess/JITLoaderGDB.h>
#include <llvm/Object/ELFObjectFile.h>
#include <llvm/Object/ObjectFile.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gatherjit {

JitCode::~JitCode() {
  if (Dylib) {
    llvm::orc::ExecutionSession &ES = Engine->J->getExecutionSession();
    llvm::consumeError(ES.removeJITDylib(*Dylib));
    // The pool keeps every name ever interned until asked: a server seeing
    // new shapes would grow by each kernel's names.
    ES.getSymbolStringPool()->clearDeadEntries();
    --Engine->Live;
  }
}

JitEngine::~JitEngine() = default;

Expected<std::shared_ptr<JitEngine>> JitEngine::create(const JitOptions &Options) {
  std::shared_ptr<JitEngine> E(new JitEngine());
  E->Options = Options;
  // Kernels that perf or GDB are told of are all ORC's: any failure to set
  // it up shows here.
  if (Options.PerfMap || Options.Debugger)
    if (Expected<llvm::orc::LLJIT *> J = E->orc(); !J)
      return J.status();
  return E;
}

Expected<llvm::orc::LLJIT *> JitEngine::orc() {
  std::lock_guard<std::mutex> Lock(OrcMutex);
  if (J)
    return J.get();
  initializeTargets();
  // Code generation happens before linking (see Runtime); the JIT only
  // links objects, so it needs the host's target for relocations alone.
  // LLJIT would also build a target machine for IR it never sees (about
  // 2 ms of a process's first kernel): its IR compiler makes one lazily.
  auto Built =
      llvm::orc::LLJITBuilder()
          .setCompileFunctionCreator(
              [](llvm::orc::JITTargetMachineBuilder JTMB)
                  -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                return std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(JTMB));
              })
          .create();
  if (!Built)
    return toStatus(Built.takeError(), "creating the JIT");
  if (Options.Debugger) {
    // What enableDebuggerSupport does for ELF, with the registration
    // function's address given directly: it would look it up among the
    // process's exported symbols, and a statically linked LLVM exports none.
    auto *Linking = llvm::dyn_cast<llvm::orc::ObjectLinkingLayer>(&(*Built)->getObjLinkingLayer());
    if (!Linking)
      return Status::internal("enabling the GDB JIT interface: the JIT does not use JITLink");
    llvm::orc::ExecutionSession &ES = (*Built)->getExecutionSession();
    Linking->addPlugin(std::make_unique<llvm::orc::DebugObjectManagerPlugin>(
        ES,
        std::make_unique<llvm::orc::EPCDebugObjectRegistrar>(
            ES, llvm::orc::ExecutorAddr::fromPtr(&llvm_orc_registerJITLoaderGDBWrapper)),
        /*RequireDebugSections=*/false, /*AutoRegisterCode=*/true));
  }
  J = std::move(*Built);
  return J.get();
}

Expected<std::shared_ptr<const Executable>> JitEngine::link(const std::string &Name,
                                                            const std::vector<char> &Object) {
  if (!Options.PerfMap && !Options.Debugger) {
    Expected<std::shared_ptr<const Executable>> Loaded =
        loadKernelObject(std::string_view(Object.data(), Object.size()), Name);
    if (Loaded) {
      // Counted live until the last holder lets go.
      ++Live;
      std::shared_ptr<const Executable> Code = Loaded.take();
      const Executable *Raw = Code.get();
      return std::shared_ptr<const Executable>(
          Raw, [Code = std::move(Code), Self = shared_from_this()](const Executable *) mutable {
            Code.reset();
            --Self->Live;
          });
    }
    // Refused (not x86-64, or what the loader does not handle): ORC links it.
  }
  Expected<std::shared_ptr<JitCode>> Code = linkWithOrc(Name, Object);
  if (!Code)
    return Code.status();
  return std::shared_ptr<const Executable>(Code.take());
}

Expected<std::shared_ptr<JitCode>> JitEngine::linkWithOrc(const std::string &Name,
                                                          const std::vector<char> &Object) {
  Expected<llvm::orc::LLJIT *> Orc = orc();
  if (!Orc)
    return Orc.status();
  llvm::orc::LLJIT *Jit = *Orc;
  // A new JITDylib links against the process's symbols (kernels call
  // memcpy and memset from the C library).
  auto Dylib = Jit->createJITDylib(Name + "." + std::to_string(++Linked));
  if (!Dylib)
    return toStatus(Dylib.takeError(), "creating a JITDylib for " + Name);
  auto Drop = [&] { llvm::consumeError(Jit->getExecutionSession().removeJITDylib(*Dylib)); };
  auto Buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(Object.data(), Object.size()),
                                                     Name + ".o");
  if (llvm::Error Err = Jit->addObjectFile(*Dylib, std::move(Buffer))) {
    Drop();
    return toStatus(std::move(Err), "adding " + Name);
  }
  auto Addr = Jit->lookup(*Dylib, Name + "_range");
  if (!Addr) {
    Drop();
    return toStatus(Addr.takeError(), "linking " + Name);
  }
  auto Code = std::make_shared<JitCode>();
  Code->Engine = shared_from_this();
  Code->Dylib = &*Dylib;
  Code->Entry = Addr->toPtr<KernelRangeFn>();
  ++Live;
  if (Options.PerfMap)
    writePerfMap(Name, Addr->getValue(), Object);
  return Code;
}

void JitEngine::writePerfMap(const std::string &Name, uint64_t Address,
                             const std::vector<char> &Object) {
  // perf reads /tmp/perf-<pid>.map: "START SIZE NAME" per line, in hex.
  uint64_t Size = 0;
  auto Obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(Object.data(), Object.size()), Name));
  if (!Obj) {
    llvm::consumeError(Obj.takeError());
    return;
  }
  for (const llvm::object::SymbolRef &Sym : (*Obj)->symbols()) {
    auto SymName = Sym.getName();
    if (!SymName) {
      llvm::consumeError(SymName.takeError());
      continue;
    }
    if (*SymName == Name + "_range" && llvm::isa<llvm::object::ELFObjectFileBase>(Obj->get()))
      Size = llvm::object::ELFSymbolRef(Sym).getSize();
  }
  std::lock_guard<std::mutex> Lock(PerfMutex);
  // /tmp is everyone's: never follow a link planted there, and append only
  // to a regular file of our own (created 0600).
  const std::string Path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
  const int Fd = ::open(Path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (Fd < 0)
    return;
  struct stat St;
  if (::fstat(Fd, &St) == 0 && S_ISREG(St.st_mode) && St.st_uid == geteuid()) {
    char Line[512];
    const int N = std::snprintf(Line, sizeof(Line), "%llx %llx %s_range\n",
                                static_cast<unsigned long long>(Address),
                                static_cast<unsigned long long>(Size), Name.c_str());
    if (N > 0 && static_cast<size_t>(N) < sizeof(Line))
      (void)!::write(Fd, Line, static_cast<size_t>(N));
  }
  ::close(Fd);
}

} // namespace gatherjit
