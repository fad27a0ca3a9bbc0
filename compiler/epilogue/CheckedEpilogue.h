//===- compiler/epilogue/CheckedEpilogue.h - Epilogues that check ---------===//
/// \file
/// Checked mode (Epilogue::Checked) as a rewrite of clang's module: every
/// function of the source inlined into the entry, and every memory access
/// of the entry guarded so that one outside the epilogue's regions sets a
/// fault byte and returns instead. Private to compiler/epilogue/.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_EPILOGUE_CHECKEDEPILOGUE_H
#define GATHERJIT_COMPILER_EPILOGUE_CHECKEDEPILOGUE_H

#include "gatherjit/Descriptor.h"
#include "gatherjit/Status.h"

#include <cstdint>
#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace gatherjit {

/// The bytes each pointer of a checked epilogue may reach.
struct EpilogueRegions {
  uint64_t RowIn = 0;  ///< a row epilogue's row (read only)
  uint64_t RowOut = 0; ///< a row epilogue's output row
  uint64_t Params = 0; ///< the parameter block (read only)
};

/// The most bytes a checked epilogue's local variables may take, together:
/// they live on the stack of whichever thread runs the kernel (oneTBB's
/// workers have 4 MiB, a caller's thread may have less), where an overflow
/// is no access a test can stop. 64 KiB holds a row of 16,384 floats.
constexpr uint64_t CheckedEpilogueStackBytes = 64 * 1024;

/// Rewrites \p Function of \p M (clang's module of a source with line
/// tables) into its checked form, which takes a last pointer to a fault
/// byte. A construct checked mode refuses is InvalidArgument
/// "FILE:LINE:COL: error: ...". Strips the line tables.
Status makeEpilogueChecked(llvm::Module &M, const std::string &Function,
                           const EpilogueSignature &Sig, const EpilogueRegions &Regions,
                           const std::string &File);

} // namespace gatherjit

#endif
