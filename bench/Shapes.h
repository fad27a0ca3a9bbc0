//===- bench/Shapes.h - Walks over shapes that change --------------------===//
/// \file
/// The workloads of an operator runtime whose batch size or sequence length
/// changes every few calls, run in-process through the C API: each walk
/// visits many shapes a few calls each, first with every shape new (a
/// fresh runtime), then again once the background thread has specialized
/// the hot ones, beside the shape-generic loop compiled ahead (no runtime
/// at all) and beside every shape specialized before the walk.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_BENCH_SHAPES_H
#define GATHERJIT_BENCH_SHAPES_H

#include <string>

namespace gatherjit::bench {

/// Runs the walks, \p Rounds times each, and returns a Markdown report of
/// their medians.
std::string runShapeWalks(unsigned Rounds);

} // namespace gatherjit::bench

#endif
