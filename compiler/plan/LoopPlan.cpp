//===- compiler/plan/LoopPlan.cpp - How an element loop loads ---------------===//
//
// How a CPU kernel's element rows load their elements: vectorized at
// which width, by gather instructions or one by one, or in a scalar loop
// prefetching ahead; the tuning constants with what was measured to
// choose them, on the core each names.
//
//===----------------------------------------------------------------------===//

#include "compiler/plan/PlanRules.h"

namespace gatherjit::plan {

/// Element and shared-index rows of elements of at least this many bytes
/// are vectorized at TargetFacts::WideLoopBytes where the target names it.
/// The suite (`gatherjit bench`, 512 against 256 bits, two alternating
/// runs on a 2-core Xeon with AVX512-FP16, one thread): GN2 (FLOAT32
/// points) 3.88 / 3.94 -> 3.29 / 3.26 ms, G3 (FLOAT32 shared indices)
/// 134 / 138 -> 115 / 119 us, GE1 (FLOAT32 in-row) 15.8 / 15.5 -> 14.7 /
/// 14.9 ms; GE2, GE3 and the block rows unmoved; GE6 (UINT8 elements,
/// whose gathers are emulated) 9.8 / 10.1 -> 10.5 / 11.9 ms, hence the
/// floor.
constexpr uint64_t WideLoopMinElementBytes = 4;

/// Element and shared-index rows of narrower elements gathered by 32-bit
/// indices, moving fewer than NarrowLoopMaxBytes (twice the output and the
/// indices), are vectorized at TargetFacts::NarrowLoopBytes where the
/// target names it. Each such element is loaded alone and inserted into a
/// vector (no gather instruction moves bytes or words); at the default
/// width the vectorizer took 32 of them an iteration by 32-bit indices and
/// 16 by 64-bit ones, and 16 ran faster while the operands came from the
/// caches. On a 2-core Xeon with AVX512-FP16, one thread, `--repeat 20` or
/// 40 medians at the default width against 16 bytes, two or three runs:
/// GatherElements on axis 1 of INT8 [N, 1024] by INT32, N = 2048 (12 MiB
/// moved) 1.29 -> 0.98 ms, 4096 (24 MiB) 2.54 -> 1.97, 8192 (48 MiB)
/// 5.04-5.09 -> 3.91-4.08, 16384 (96 MiB) 11.98-12.02 -> 12.24-12.40
/// (slower); FLOAT16 [2048, 1024] 1.16 -> 0.93, [4096, 2048] (64 MiB)
/// 4.86-4.93 -> 4.94-5.12, GE4's [4096, 4096] (128 MiB) 10.02-10.34 ->
/// 10.49-10.61; by INT64 the same INT8 and FLOAT16 [2048, 1024] 0.96 and
/// 0.90 at the default, 1.27 and 1.13 at 16 bytes (they keep it); INT8
/// [16384, 64] by [16384, 16] 0.154 -> 0.116-0.120, INT8 [16, 1024, 256]
/// by [16, 512, 256] 1.50-1.59 -> 1.34-1.37; on axis 0 of UINT8 [1024,
/// 1024] 0.72-0.76 -> 0.66-0.70; Gather (shared indices) of 700 columns of
/// FLOAT16 [2048, 2048] 0.38 either way.
constexpr uint64_t NarrowLoopMaxBytes = 64u << 20;

uint64_t movedBytes(const KernelSpec &S) {
  return 2 * S.outputBytes() + S.elements() * S.TupleSize * S.indexBytes();
}

unsigned loopVectorBytes(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T) {
  const bool Gathers = P.Row == RowKind::Element || P.Row == RowKind::SharedIndices;
  if (T.Gpu || !Gathers)
    return 0;
  if (S.ElemBytes >= WideLoopMinElementBytes)
    return T.WideLoopBytes;
  // (A family kernel's shapes are small until they are specialized.)
  const bool FromCaches = S.Family || movedBytes(S) < NarrowLoopMaxBytes;
  return S.indexBytes() == 4 && FromCaches ? T.NarrowLoopBytes : 0;
}

/// Where gather instructions pay only on operands from memory
/// (TargetFacts::GathersOnlyFromMemory), kernels moving fewer than this
/// many bytes (twice the output and the indices) load their elements one
/// by one: their operands stay in the caches from call to call. Measured on
/// a 2-core AMD EPYC (Zen 4), scalar loads against gathers, each case's
/// caches evicted before its runs (the suite, two alternating runs): GE1
/// 24.7-25.8 -> 16.6 ms, GE3 28.9-36.5 -> 13.9-14.5, GE6 16.4-17.4 ->
/// 15.1-15.2, GN2 (24 MiB) 4.75-5.31 -> 3.24-3.80, G2 (12 MiB, a 16 MiB
/// table) 2.19-2.38 -> 1.56-1.77, GE2 and GE4 unmoved; but G3 (8 MiB)
/// 169-185 -> 242-279 us (three runs); and on repeated calls of kernels
/// whose operands a cache holds (the command line's --repeat, one thread):
/// FLOAT32 [1000, 200] by INT64 [1000, 64] on axis 1 23 -> 37 us, FLOAT32
/// [1024, 1024] by INT32 (12 MiB) 0.435 -> 0.507 ms, FLOAT32 [64, 4096] by
/// INT64 [64, 1024] 31 -> 39 us. A family kernel, whose shapes are small
/// until they are specialized, loads one by one too.
constexpr uint64_t GatherFromBytes = 16u << 20;

/// Where gathers lose beyond the core's caches
/// (TargetFacts::GathersLoseBeyondCore), element rows of one index an
/// element along a contiguous axis of at least this many bytes load their
/// elements one by one into vectors. Measured on a 2-core Intel Xeon with
/// AVX512-FP16 (2 MiB of L2 a core, a shared L3 holding the table from
/// call to call), each plan's build in turn, 1M random ids, one thread:
/// FLOAT32 1-D takes by INT64 from tables of 2 MiB 1.24 -> 1.19 ms, 3 MiB
/// 1.84 -> 1.87 (even), 4 MiB 2.53 -> 1.99, 8 MiB 3.23 -> 2.49; FLOAT64 by
/// INT32 of 4 MiB 2.48 -> 1.99, 8 MiB 3.24 -> 2.82. From Python beside
/// torch.index_select and torch.gather (two runs, medians of 31; torch's
/// in brackets): FLOAT32 4 MiB 2.58-2.61 -> 2.04-2.06 ms (2.12-2.47), 6
/// MiB 3.10-3.11 -> 2.37-2.39 (2.39-2.91), FLOAT64 4 MiB 2.60 -> 2.09-2.10
/// (2.32-2.86); GatherElements along 4 rows of 4 MiB by one id a 64-byte
/// line 0.72 -> 0.57-0.58 (0.61-0.65), by four 2.65-2.67 -> 2.07-2.10
/// (2.18-2.47). Two threads: FLOAT32 4 MiB 0.97-1.02 -> 0.88-0.99 (2.0-2.4),
/// FLOAT64 0.96-1.01 -> 0.89-0.92, the rows 0.40-0.42 -> 0.30-0.31 and
/// 1.33-1.45 -> 1.06. Below 4 MiB neither wins throughout: FLOAT64 2 MiB
/// by INT32 on two threads 0.64 -> 0.71-0.75 ms, GatherElements along 16
/// rows of 1 MiB by four ids a line on one 1.29 -> 1.34-1.42 (faster by
/// one id a line, 0.58 -> 0.53). Not taken: GatherND's tuples (GN2, a 4
/// MiB table, 3.67-3.99 -> 4.18-4.51 ms in the suite) and a strided axis
/// (GE2, 84.6 -> 88.3 ms).
constexpr uint64_t ScalarGatherTableBytes = 4u << 20;

/// From tables of this many bytes such rows run a loop of one element an
/// iteration, not vectorized, whose out-of-range indices branch away
/// (KernelPlan::ScalarLoop): no load's address waits on a clamp. Measured
/// in one process (three runtimes, each kernel's plan forced, run in
/// turn, medians of 31, numpy-like tables on huge pages), 1-D takes of 1M
/// random ids, gathers / scalar loads into vectors / this loop, one
/// thread: FLOAT32 by INT64 8 MiB 3.43 / 3.13 / 3.23 ms, 12 MiB 4.09 /
/// 3.62 / 3.37, 16 MiB 4.89 / 4.36 / 3.71, 24 MiB 6.12 / 5.84 / 4.55;
/// FLOAT64 by INT32 8 MiB 3.68 / 3.32 / 3.30, 12 MiB 3.97 / 3.57 / 3.37,
/// 16 MiB 4.79 / 4.22 / 3.58. Two threads: FLOAT32 8 MiB 1.30 / 1.39 /
/// 1.51, 12 MiB 1.86 / 1.82 / 1.81, 16 MiB 2.47 / 2.34 / 1.94, 24 MiB 3.12
/// / 3.08 / 2.33; FLOAT64 8 MiB 1.35 / 1.50 / 1.50, 12 MiB 1.82 / 1.84 /
/// 1.71. Scalar loads into vectors against this loop, FLOAT32: 32 MiB
/// 6.50 / 5.25 (two threads 3.18 / 2.44), 128 MiB 9.09 / 8.05 (4.62 /
/// 4.03); under Clamp 32 MiB 6.32 / 5.03. Below 8 MiB the loop loses to
/// both (4 MiB, two threads: 1.06 / 1.11 / 1.29). The loop runs as fast as
/// a plain C loop that branches on a bad index; the vector form's extra
/// time is in waiting for each address.
constexpr uint64_t ScalarLoopTableBytes = 12u << 20;

namespace {

/// Element rows from a table the core's caches do not hold, one index an
/// element along a contiguous axis.
bool gathersBeyondCore(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T,
                       uint64_t TableBytes) {
  return T.GathersLoseBeyondCore && !T.Gpu && P.Row == RowKind::Element && !S.Family &&
         S.TupleSize == 1 && S.AxisStride[0] == 1 && S.AxisSize[0] * S.ElemBytes >= TableBytes;
}

} // namespace

bool scalarGathers(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T) {
  if (T.Gpu || (P.Row != RowKind::Element && P.Row != RowKind::SharedIndices))
    return false;
  if (T.GathersLoseBeyondCore)
    return gathersBeyondCore(S, P, T, ScalarGatherTableBytes);
  return T.GathersOnlyFromMemory && (S.Family || movedBytes(S) < GatherFromBytes);
}

/// The loop prefetches the element this many iterations ahead picks:
/// its reads miss the caches at random, and the core's out-of-order window
/// keeps too few of them in flight. From Python, each plan's build in
/// turn (three runs, medians of 31), without / 64 / 128 ahead, FLOAT32 by
/// INT64, one thread: 1M ids from 128 MiB 8.7-9.7 / 5.6-6.3 / 5.3-5.8 ms,
/// from 32 MiB 4.5-4.9 / 3.9-4.4 / 3.9-4.1, four rows of 16 MiB by 256K
/// ids each 5.5-8.1 / 3.9-4.1 / 3.6-3.7; two threads 3.1-3.2 / 2.5-2.6 /
/// 2.5-2.7, 2.2 / 1.9-2.0 / 2.0-2.1, 1.9-2.2 / 1.7-1.9 / 1.7-1.9; from 12
/// and 16 MiB (the last-level cache's) even. A plain C loop prefetching as
/// far ahead gained as much (128 MiB 8.7 -> 7.5 ms, 64 ahead; 8 and 16
/// ahead lost, 10.6 and 9.3).
constexpr uint64_t ScalarLoopAhead = 128;

/// The loop runs where the bytes it streams (movedBytes) are at most this
/// many: four rows of 16 MiB by 1M ids each took 24-31 ms prefetching
/// against 18-22 with scalar loads into vectors, and a 16 MiB table by 4M
/// ids 24-25 against 18 (2M FLOAT32 elements by INT64, 32 MiB, still won:
/// 16 MiB by 2M 3.33 against 4.11 ms on two threads). The table's size
/// bounds it no more: prefetching, it won on larger ones, 1M ids from
/// 512 MiB 11.5-12.9 against 14.0-14.7 ms (two threads 4.1-4.4 against
/// 5.4-6.0), 2M ids from 128 MiB 17.2-18.8 against 19.0-20.0, from 256
/// MiB 22.4-24.0 against 25.1-26.1, FLOAT64 by INT32 from 128 MiB
/// 16.7-18.0 against 20.4-21.7, where without prefetching it had lost
/// (128 MiB by 2M, two threads, 9.5-10.8 against 7.7-8.3).
constexpr uint64_t ScalarLoopMovedBytes = 32u << 20;

namespace {

/// The loop of KernelPlan::ScalarLoop, for rows none of the memory
/// strategies (streamed indices, a touched row) takes.
bool scalarLoop(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T) {
  return !P.StreamIndices && !P.TouchInputRow && !P.TileColumns && S.Rank > 0 &&
         gathersBeyondCore(S, P, T, ScalarLoopTableBytes) && movedBytes(S) <= ScalarLoopMovedBytes;
}

} // namespace

void planScalarLoop(const KernelSpec &S, const TargetFacts &T, KernelPlan &P) {
  if (!(P.ScalarLoop = scalarLoop(S, P, T)))
    return;
  P.ScalarGathers = false;
  if (!P.PrefetchRowsAhead) { // Each element a "row" of its own bytes.
    P.PrefetchRowsAhead = ScalarLoopAhead;
    P.PrefetchRowBytes = S.ElemBytes;
  }
}

} // namespace gatherjit::plan
