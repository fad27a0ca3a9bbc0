//===- compiler/plan/PlanRules.h - Rules the plan's files share ----------===//
/// \file
/// Private to compiler/plan/: what KernelPlan.cpp (the row kinds, the
/// CPU's memory strategies and the dispatch), LoopPlan.cpp (how a CPU's
/// element loop loads) and GpuPlan.cpp (a GPU's grid) take from each
/// other.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_PLAN_PLANRULES_H
#define GATHERJIT_COMPILER_PLAN_PLANRULES_H

#include "compiler/plan/KernelPlan.h"

namespace gatherjit::plan {

/// Element rows that read along contiguous input rows their indices pick
/// (GatherElements on an axis other than the last).
bool readsAlongRows(const KernelSpec &S);

/// The bytes an element kernel moves through the caches: twice its output
/// (written, its elements read) and its indices.
uint64_t movedBytes(const KernelSpec &S);

/// The width element and shared-index rows are vectorized at; 0 for the
/// code generator's default.
unsigned loopVectorBytes(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T);

/// Whether such rows load their elements one by one into vectors rather
/// than by gather instructions.
bool scalarGathers(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T);

/// KernelPlan::ScalarLoop and its prefetches, for rows none of the memory
/// strategies \p P already has (streamed indices, a touched row, tiles)
/// takes.
void planScalarLoop(const KernelSpec &S, const TargetFacts &T, KernelPlan &P);

/// A family kernel's grid on a GPU: the most blocks any shape's grid has
/// (a launch takes as many as its shape's elements fill).
void planGpuFamily(KernelPlan &P);

/// A specialized kernel's grid and thread schedule on a GPU, for the row
/// kind \p P already has; the CPU's memory strategies do not apply.
void planGpuGrid(const KernelSpec &S, KernelPlan &P);

} // namespace gatherjit::plan

#endif // GATHERJIT_COMPILER_PLAN_PLANRULES_H
