//===- compiler/emit/EmitKernel.h - KernelSpec to LLVM IR ----------------===//
/// \file
/// Lowers one KernelSpec to LLVM IR in which every trip count, stride and
/// the axis size are constants. For a kernel named NAME it defines
///   i64 NAME_range(ptr in, ptr indices, ptr out, i64 begin, i64 end)
///   i64 NAME(ptr in, ptr indices, ptr out)      ; all rows
///   i64 NAME_rows                               ; constant row count
/// returning 0, or under Check 1 + the row-major position in the indices
/// tensor of the first out-of-range index, or EpilogueFaulted (-1) when a
/// checked epilogue faulted. Rows are the outermost loop.
/// How the rows run is the plan's choice (compiler/plan/KernelPlan.h); the
/// emitter follows it.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_EMIT_EMITKERNEL_H
#define GATHERJIT_COMPILER_EMIT_EMITKERNEL_H

#include "compiler/plan/KernelPlan.h"
#include "compiler/spec/KernelSpec.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace gatherjit {

/// Adds the kernel's three symbols to \p M (which may hold other kernels).
void emitKernelInto(const KernelSpec &Spec, const KernelPlan &Plan, const std::string &Name,
                    llvm::Module &M);

/// Which entry calls a GPU plan's thread body: the device's kernel
/// NAME(in, indices, out, status) (status: a device word the caller sets
/// to UINT64_MAX, lowered under Check to the key of the first bad index,
/// output element * TupleSize + component), or the host's loop over the
/// same grid, NAME_range/NAME/NAME_rows as a CPU kernel's (one row,
/// returning 1 + the first bad index's position).
enum class GridEntry { Device, SimulatedOnHost };

/// Adds a GPU plan's kernel (Plan.ThreadsPerBlock > 0) to \p M.
void emitThreadKernelInto(const KernelSpec &Spec, const KernelPlan &Plan, const std::string &Name,
                          GridEntry Entry, llvm::Module &M);

/// A fresh module holding one kernel named \p Name.
std::unique_ptr<llvm::Module> emitKernel(const KernelSpec &Spec, const KernelPlan &Plan,
                                         const std::string &Name, llvm::LLVMContext &Ctx);

} // namespace gatherjit

#endif
