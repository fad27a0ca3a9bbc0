//===- compiler/backend/ObjectLoader.h - Objects linked without LLVM ------===//
/// \file
/// Links one kernel's relocatable object into the process: the sections a
/// kernel object has (code, read-only constants, perhaps data) are laid out
/// in one mapping, relocated, and protected. This is what lets the command
/// line run a kernel from the kernel cache without loading LLVM; a runtime
/// links with ORC (compiler/backend/Jit.h).
///
/// It handles x86-64 ELF objects with the relocations LLVM's small code
/// model emits (absolute 64- and 32-bit, PC-relative, PLT and GOT) and
/// calls to memcpy, memmove and memset. Anything else (another machine, an
/// unknown relocation or symbol, a malformed file) is refused with an
/// Unsupported status, never linked in part: the caller compiles instead.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_BACKEND_OBJECTLOADER_H
#define GATHERJIT_COMPILER_BACKEND_OBJECTLOADER_H

#include "compiler/backend/Executable.h"
#include "gatherjit/Status.h"

#include <memory>
#include <string>
#include <string_view>

namespace gatherjit {

/// Links \p Object and returns its \p Name_range entry as an Executable;
/// the mapping is freed when the last holder lets go.
Expected<std::shared_ptr<const Executable>> loadKernelObject(std::string_view Object,
                                                             const std::string &Name);

} // namespace gatherjit

#endif
