//===- compiler/plan/KernelPlan.cpp - How a kernel runs its rows ---------===//
//
// The row kinds and the CPU's memory strategies, and planKernel, which
// hands a CPU's element loops to LoopPlan.cpp and a GPU's grid to
// GpuPlan.cpp: every tuning constant here with what was measured to
// choose it. Figures are from the suite's cases (bench/Cases.h) on a 2-core AMD
// EPYC (Zen 4) unless an Intel core is named; GE and G cases named as
// there.
//
//===----------------------------------------------------------------------===//

#include "compiler/plan/KernelPlan.h"
#include "compiler/plan/PlanRules.h"

#include <algorithm>
#include <sstream>

namespace gatherjit {
namespace {

/// Outputs of at least this many bytes do not stay in a cache; writing them
/// with non-temporal stores saves reading each line before overwriting it.
constexpr uint64_t NonTemporalBytes = 16u << 20;
/// Block rows are prefetched from tables of at least this many bytes, this
/// many bytes ahead: whole rows of up to MaxPrefetchRowBytes, or, where the
/// hardware prefetcher follows a row (TargetFacts), their first
/// RowHeadBytes. On an Intel core with AVX-512, prefetching 256-1024 bytes
/// of each row rather than 4 KiB measured 13-16% faster on G1 (3 KiB rows;
/// 3.3 -> 2.75 ms) and GN1 (4 KiB rows; 1.7 -> 1.45 ms); 128 bytes and
/// 2 KiB gained less, and 6-24 KiB ahead made no difference. On AMD's Zen 4
/// (three runs, alternating): G1 3.76-3.78 -> 2.92-3.22 ms, GN1 2.07-2.55 ->
/// 1.22-1.50 ms, where the generic loop (256 bytes of each row) took 3.10-4.18
/// and 1.59-2.23 ms.
constexpr uint64_t PrefetchTableBytes = 1u << 20;
constexpr uint64_t PrefetchAheadBytes = 12u << 10;
constexpr uint64_t MaxPrefetchRowBytes = 4u << 10;
constexpr uint64_t RowHeadBytes = 512;
constexpr uint64_t MaxRowsAhead = 8;
/// Element rows gathering along the innermost dimension, reading at least
/// this many index bytes in all, contiguous along rows of at least
/// MinStreamedRow elements, run in blocks of StreamBlock elements, each
/// prefetching the indices IndexAheadBytes ahead and, when the input row
/// they gather from is contiguous, an equal share of the next row's input
/// row (spread out: prefetching a whole row before each row measured 15-28%
/// slower on GE1 and GE4, and 10-25% on G2). Together these keep more
/// misses in flight than the hardware prefetcher does alone. Rows sharing
/// their indices (below) prefetch the next input row in the same way.
/// Streaming was measured to pay where the innermost dimension is the
/// gathered axis (GE1, GE4, GE6: 20-25% faster); along other axes it cost
/// about 3%. On an Intel core, 4 KiB ahead rather than 8 made byte rows
/// larger than L1 faster (GE6 13.3-13.5 -> 10.4-11.0 ms; UINT8 rows of
/// 128 KiB 11% and of 2 MiB 22% faster) and GE1 and GE4 neither faster nor
/// slower (within 3% in three runs each); 1-2 KiB gained no more.
constexpr uint64_t StreamedIndexBytes = 4u << 20;
constexpr uint64_t MinStreamedRow = 256;
constexpr uint64_t StreamBlock = 64;
constexpr uint64_t IndexAheadBytes = 4u << 10;
/// A block prefetches at most this many lines of the next input row.
constexpr uint64_t MaxShareLines = 16;
/// Element rows with their own indices load input rows of this many bytes
/// or more before their gathers (touchesInputRow).
constexpr uint64_t TouchedRowBytes = 1u << 20;
/// Rows that all gather from one region of at least this many bytes
/// prefetch the next region, at most MaxRegionShareLines lines per row.
constexpr uint64_t RegionBytes = 64u << 10;
constexpr uint64_t MaxRegionShareLines = 64;
/// Element rows that all read the same indices (a Gather's dimensions
/// before the axis), of at most this many elements, read them once per call
/// into a table of input offsets on the stack (32 KiB), checked once.
constexpr uint64_t MaxSharedRow = 4096;
/// Spans of at most this many lines are prefetched by straight-line code,
/// longer ones in a loop: a long straight run of prefetches makes the
/// instruction scheduler (quadratic in a block's length) slow to compile,
/// while a loop of them cost nothing measurable on GE1 and G2.
constexpr uint64_t MaxInlinePrefetchLines = 16;

/// CPU element rows that read along input rows (readsAlongRows), where every
/// row of dimension Rank-2 reads one region of the input (the axis is that
/// dimension) whose rows are longer than a page and which is larger than
/// the TLB reaches (CpuTlbReachBytes of 4 KiB pages), take the region in
/// tiles of CpuTileBytes of columns: all rows of a tile, then the next, so
/// that a tile's reads of each input row fall within a page or two where
/// whole rows' reads miss the TLB. Measured in gatherjit's kernels on a
/// 2-core Xeon with AVX-512 (one thread, operands on 4 KiB pages, as the
/// command line's and most allocators' are), whole rows against tiles of
/// 64, 128, 256, 512, 1024 and 2048 columns: GE2 (FLOAT32 4096 x 4096 by
/// INT64 on axis 0) 106.5 ms against 90.7, 85.5, 81.6, 78.9, 78.7 and
/// 101.2; the same by INT32 103.8 against 85.0, 78.5, 75.2, 76.7, 74.4 and
/// 99.0; UINT8 8192 x 8192 469 against 463, 417, 398, 408, 390 and 386;
/// FLOAT32 [4, 2048, 2048] on axis 1 69.6 against 64.4, 61.2, 61.0, 62.4,
/// 60.2 and 69.8; FLOAT32 16384 x 1024 (rows of one page) 113 against
/// 111-117 at every width, so not tiled. On 2 MiB pages (numpy's large
/// arrays, where the system grants them) GE2's tiles cost 2-3% (78.7-80.8
/// -> 81.1-82.0 ms).
constexpr uint64_t CpuTileBytes = 2u << 10;
constexpr uint64_t PageBytes = 4u << 10;
constexpr uint64_t CpuTlbReachBytes = 8u << 20;

uint64_t cpuTileColumns(const KernelSpec &S) {
  if (!plan::readsAlongRows(S) || S.Epilogue.Kind == EpilogueKind::Row ||
      S.InStride[S.Rank - 2] != 0)
    return 0;
  const uint64_t RowBytes = S.AxisStride[0] * S.ElemBytes;
  if (RowBytes <= PageBytes || S.AxisSize[0] * RowBytes <= CpuTlbReachBytes)
    return 0;
  uint64_t W = 1;
  while (W * 2 * S.ElemBytes <= CpuTileBytes)
    W *= 2;
  return W < S.Sizes[S.Rank - 1] ? W : 0;
}

/// Block rows of at least this many bytes store around an unaligned
/// output's vector boundaries (TargetFacts::MaskedByteStores). Rows from an
/// L2-resident table, 512 KiB a call, into an output 16 bytes past a line
/// (where a large numpy array's buffer starts), in C on a 2-core Xeon with
/// AVX-512: 1 KiB rows 14.5 -> 11.2 us, 512-byte rows 16.3 -> 12.3 us,
/// 256-byte rows 18.5 -> 15.4 us, 128-byte rows unchanged.
constexpr uint64_t AlignStoresFromBytes = 256;
/// Block rows of at least this many bytes load a skewed input's lines
/// aligned (KernelPlan::AlignLoads). A large numpy array's buffer starts 16
/// bytes past a line, so every vector load of its rows spans two lines.
/// From Python on a 2-core Zen 4, a take from such a table repeated, the
/// builds without and with it in turn, three runs each: 1,000 rows of
/// 1 KiB 29.3-31.0 -> 27.0-27.6 us a call, 300 rows 8.2 -> 7.5 us, 333
/// rows of 3 KiB 26.4-26.9 -> 25.4-25.6 us. The same copy in C: 512-byte
/// rows moved both ways with the machine's load, 256-byte rows went
/// 38.8 -> 40.3 us (4,000 a call).
constexpr uint64_t AlignLoadsFromBytes = 1024;
/// Loops of at most this many iterations, of constant count, are unrolled
/// (the pipeline has no unroller; a tiny kernel's row pays no loop
/// overhead).
constexpr uint64_t MaxStraightLoop = 4;
/// A nest of such loops makes at most this many copies of any code, the
/// innermost loops unrolled first: unbounded, the copies multiplied down
/// the nest, and a GatherElements of rank 5 to 8, sizes 3, whose strides
/// keep the dimensions apart took 90, 153, 427 and 1,190 ms to compile at
/// O2 (rank 8 of sizes 4: 65,536 copies), against 23-30 ms at 16 (2-core
/// Zen 4, one process, loaded). 16 keeps a row of 16 elements straight;
/// over the 488 random configurations of rank 3 or more with 16 to 4,096
/// elements, the sum of their run times' medians moved within the
/// machine's noise (24.4-25.3 us unbounded, 25.4-25.9 at 16, 25.5-26.3 at
/// 4) and their compiles took 16% less at 16 (35% at 4).
constexpr uint64_t MaxStraightCopies = 16;

/// Element rows gathering from a contiguous input row of at most
/// MaxPermuteRegisters registers (of TargetFacts::PermuteBytes) permute
/// their outputs out of the row loaded into registers, from output rows of
/// MinPermuteRow elements (rank 1's one row always). GatherElements FLOAT32
/// [L, 64] by INT64 [L, 16] on axis 1 (walk (a) of `gatherjit bench
/// --shapes`), 500 rows: 2.2 us permuted against 3.2 us with a load per
/// element and 2.3 us with AVX-512 gathers, in C on a 2-core Xeon with
/// AVX-512 (4 registers: two two-register permutes and a blend).
constexpr unsigned MaxPermuteRegisters = 4;
constexpr uint64_t MinPermuteRow = 4;

/// The bytes of input rows an element kernel gathers from: each output
/// row's own, or one row that they all read.
uint64_t gatheredBytes(const KernelSpec &S) {
  const unsigned L = S.Rank - 1;
  const uint64_t RowBytes = S.AxisSize[0] * S.ElemBytes;
  for (unsigned D = 0; D < L; ++D)
    if (S.InStride[D] != 0)
      return S.Sizes[L] ? S.elements() / S.Sizes[L] * RowBytes : 0;
  return RowBytes;
}

bool permutes(const KernelSpec &S, const TargetFacts &T) {
  if (!T.PermuteBytes || S.Rank == 0 || S.hasEpilogue() || S.TupleSize != 1 || S.emptyAxis() ||
      (S.ElemBytes != 4 && S.ElemBytes != 8))
    return false;
  const unsigned L = S.Rank - 1;
  return S.InStride[L] == 0 && S.AxisStride[0] == 1 && S.IdxStride[L] == 1 && S.OutStride[L] == 1 &&
         S.AxisSize[0] * S.ElemBytes <= MaxPermuteRegisters * T.PermuteBytes &&
         (S.Rank == 1 || S.Sizes[L] >= MinPermuteRow);
}

/// Whether every row reads the same indices: no dimension before the
/// innermost moves the index or the position.
bool indicesSameEveryRow(const KernelSpec &S) {
  for (unsigned D = 0; D + 1 < S.Rank; ++D)
    if (S.IdxStride[D] != 0 || S.PosStride[D] != 0)
      return false;
  return true;
}

bool sharesRowIndices(const KernelSpec &S) {
  if (S.Rank < 2 || S.innerIsBlock() || S.emptyAxis() || S.rows() < 2 ||
      S.Sizes[S.Rank - 1] > MaxSharedRow)
    return false;
  return indicesSameEveryRow(S);
}

/// Element rows that each gather from their own contiguous input row and
/// read most of its lines (one read for every two lines or more,
/// expected), where loading that row in order before its gathers pays:
/// read in order, a row streams in at the memory's pace (the hardware
/// prefetcher follows), where prefetches of its lines (PrefetchNextInputRow)
/// each hold a miss until their line comes, and a next row prefetched
/// whole evicts the row being read. Measured on Zen 4 against the
/// prefetches, one process, the kernel planned each way and run alternately
/// after a 256 MiB copy:
/// - Rows that all gather by the same indices, of an input of 1 MiB or
///   more, reading at most a third of their row's elements. FLOAT32 by
///   INT64 ids: rows of 128 KiB by 8192 ids (a dask block's take of
///   columns) 7.8 against 12.6 ms, by 4096 4.4 against 9.5, by 1024 3.3
///   against 4.4, by 512 (one read for four lines) 2.3 and 2.3, by 16384
///   (half the row) 9.7 and 9.8; rows of 16 KiB by 1024 ids (G2's shape)
///   2.1 against 3.0, by 1536 1.8 and 1.8, by 2048 2.4-2.7 against 3.0-3.2
///   (slower); rows of 8 KiB by 640 ids 1.1 against 1.7, by 768 1.2 and
///   1.3, by 1024 slower; rows of 1 KiB by 64 ids 1.2 against 1.7, by 128
///   slower. With more reads the prefetches overlap the gathers.
/// - Rows with streamed indices of their own, of TouchedRowBytes or more
///   (the indices stream beside the row): UINT8 rows of 1 MiB by INT64
///   (GE6) 12.5 against 14.0 ms, FLOAT32 rows of 1 MiB 38.9 against 40.5,
///   of 2 MiB 39.7 against 50.1, of 4 MiB 102 against 137. Below it the
///   touch gains little or loses: FLOAT32 rows of 512 KiB 19.9 against
///   20.5, of 128 KiB 18.4 against 18.0, of 64 KiB 22.1 against 20.7, of
///   16 KiB (GE1) 19.3 against 16.1; UINT8 rows of 128 KiB 9.2 against
///   10.2.
bool touchesInputRow(const KernelSpec &S, bool StreamsIndices, unsigned LineBytes) {
  if (S.Rank < 2 || S.innerIsBlock() || S.TupleSize != 1 || S.AxisStride[0] != 1)
    return false;
  const unsigned L = S.Rank - 1;
  const uint64_t RowBytes = S.AxisSize[0] * S.ElemBytes;
  if (S.InStride[L] != 0 || S.InStride[L - 1] == 0 || 2 * S.Sizes[L] * LineBytes < RowBytes)
    return false;
  if (indicesSameEveryRow(S))
    return 3 * S.Sizes[L] <= S.AxisSize[0] && S.rows() * RowBytes >= PrefetchTableBytes;
  return StreamsIndices && RowBytes >= TouchedRowBytes;
}

/// Rows read fewer than this many times a line (expected) do not stream
/// where their input, with the bytes the kernel streams, fits the host's
/// last-level cache (TargetFacts::LastLevelCacheBytes). Streaming and
/// loading rows first (touchesInputRow) were measured with reads dense
/// (GE1, GE4, GE6: 16 to 64 a line) or inputs from memory. Warm, on an
/// Intel Xeon with AVX512-FP16 (2 MiB of L2 a core, 480 MiB of L3), from
/// Python (each plan forced in turn, twice, best of three medians of 21),
/// GatherElements FLOAT32 by INT64 along rows, streamed (rows of 1 MiB or
/// more loaded first where read twice a line) against not: rows of 1 MiB
/// by one id a line 2.49-2.53 against 2.21-2.30 ms, by four 1.40-1.41
/// against 1.20-1.27 (two threads 0.73-0.74 against 0.63-0.64), rows of 4
/// MiB by eight 5.06-5.22 against 5.21-5.41 (even), rows of 16 KiB by one
/// 0.55-0.57 against 0.54-0.61 (even); with the loop or the loads into
/// vectors that rows from beyond the core's caches take when not
/// streamed, rows of 4 MiB by one id a line 0.70 against 0.57 (two
/// threads 0.37 against 0.30), by four 2.83-2.88 against 2.09-2.10 (1.44-
/// 1.47 against 1.05-1.07), rows of 16 MiB by one 7.2-7.8 against 3.6-4.3,
/// by four 20.5-21.0 against 18.2-18.7. By 16 a line, streamed and loaded
/// first won: rows of 4 MiB 45.3-45.6 against 59.2-59.4 ms.
constexpr uint64_t StreamedReadsPerLine = 8;

/// Rows that all gather by the same indices, read fewer than this many
/// times a line from an input the host's last-level cache holds, neither
/// load their rows in order first (touchesInputRow) nor prefetch the next
/// row (PrefetchNextInputRow): both were measured from memory, after a
/// 256 MiB copy. Warm, on the Intel Xeon above, `gatherjit gather --axis 1
/// --specialize compile --repeat 101`, two runs, FLOAT32 by INT64, loaded
/// first / the next prefetched / neither, one thread: [64, 16000] by 500
/// ids (one read for two lines) 0.140-0.142 / 0.067-0.072 / 0.042-0.052
/// ms, [64, 32768] by 1024 0.301 / 0.175-0.201 / 0.160-0.182, [512,
/// 32768] by 1024 2.48-2.49 / 1.32-1.34 / 1.27-1.30 (two threads 1.23 /
/// 0.71-0.75 / 0.65-0.68); [64, 100000] by 1000 (prefetched, not loaded
/// first) 0.171-0.185 / 0.140; by 2000 0.346-0.360 / 0.291-0.297. Read
/// four times a line, loading first lost less warm and won cold: [64,
/// 32768] by 8192 0.47-0.48 / 0.41 / 0.41-0.42, [512, 32768] by 8192
/// 4.02-4.07 / 3.60-3.70 / 3.62-3.72, G2 warm 0.70-0.72 ms each, but G2 in
/// the suite (its caches evicted) 1.36-1.47 loaded first against 1.66-1.73
/// plainly. On a 2-core Zen 4 (32 MiB of L3; from Python, three runs, one
/// thread), this rule's plan against the one before it: [64, 16000] by 500
/// ids 26-27 against 60-67 us, [64, 100000] by 1000 66-68 against 69-85.
constexpr uint64_t SharedRowReadsPerLine = 2;

/// Whether rows read fewer than \p ReadsPerLine elements a line (expected)
/// from an input that, with the indices and output the kernel streams
/// through it, the host's last-level cache holds from call to call.
bool readsSparselyFromCache(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T,
                            uint64_t ReadsPerLine) {
  const unsigned L = S.Rank - 1;
  return S.Sizes[L] * P.LineBytes < ReadsPerLine * S.AxisSize[0] * S.ElemBytes &&
         T.LastLevelCacheBytes && gatheredBytes(S) + plan::movedBytes(S) <= T.LastLevelCacheBytes;
}

bool streamsIndices(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T) {
  if (S.Rank < 2 || S.innerIsBlock() || S.TupleSize != 1 || sharesRowIndices(S))
    return false;
  const unsigned L = S.Rank - 1;
  if (S.InStride[L] != 0 || S.IdxStride[L] != 1 || S.Sizes[L] < MinStreamedRow ||
      S.elements() * S.indexBytes() < StreamedIndexBytes)
    return false;
  return !readsSparselyFromCache(S, P, T, StreamedReadsPerLine);
}

/// Elements of the input that the rows of dimension Rank-2 gather from
/// when they all gather from the same region (its index is replaced by the
/// gathered one: InStride 0).
uint64_t regionElements(const KernelSpec &S) {
  const unsigned L = S.Rank - 1;
  return (S.AxisSize[0] - 1) * S.AxisStride[0] + (S.Sizes[L] - 1) * S.InStride[L] + 1;
}

/// Element rows whose dimension Rank-2 shares one region of the input (GE3:
/// a slice), of dimension Rank-3, prefetch the next region in shares.
bool prefetchesNextRegion(const KernelSpec &S) {
  if (S.Rank < 3 || S.innerIsBlock() || S.TupleSize != 1 || S.AxisSize[0] == 0 ||
      S.InStride[S.Rank - 2] != 0 || S.InStride[S.Rank - 3] == 0)
    return false;
  return regionElements(S) * S.ElemBytes >= RegionBytes &&
         S.Sizes[S.Rank - 3] * regionElements(S) * S.ElemBytes >= PrefetchTableBytes;
}

} // namespace

bool plan::readsAlongRows(const KernelSpec &S) {
  if (S.Family || S.Rank < 2 || S.TupleSize != 1 || S.emptyAxis() || S.elements() == 0)
    return false;
  const unsigned L = S.Rank - 1;
  return S.InStride[L] == 1 && S.IdxStride[L] != 0 && S.OutStride[L] == 1 &&
         S.AxisStride[0] >= S.Sizes[L];
}

const char *rowKindName(RowKind Kind) {
  switch (Kind) {
  case RowKind::Block:
    return "block";
  case RowKind::Element:
    return "element";
  case RowKind::SharedIndices:
    return "shared-indices";
  case RowKind::Permute:
    return "permute";
  }
  return "?";
}

namespace {

/// Prefetches for rows gathered from a table larger than the cache: block
/// rows, or a row epilogue's rows.
void planTablePrefetch(const KernelSpec &S, const TargetFacts &T, KernelPlan &P) {
  const unsigned L = S.Rank == 0 ? 0 : S.Rank - 1;
  // The whole row, or its first MaxPrefetchRowBytes (the hardware
  // prefetcher following the rest): a row's lines are not fetched in order
  // otherwise. Only its head where the prefetcher follows rows.
  const uint64_t Prefetched = T.PrefetcherFollowsRows ? RowHeadBytes : MaxPrefetchRowBytes;
  if (P.Row == RowKind::Block && S.Rank >= 2 && S.tableBytes() >= PrefetchTableBytes) {
    // Rows gathered from a table too large for the cache are misses the
    // hardware prefetcher cannot predict: fetch them a few rows ahead.
    const uint64_t RowBytes = S.Sizes[L] * S.ElemBytes;
    P.PrefetchRowsAhead = std::clamp<uint64_t>(PrefetchAheadBytes / RowBytes, 1, MaxRowsAhead);
    P.PrefetchRowBytes = std::min(Prefetched, RowBytes);
  }
  if (S.Epilogue.Kind == EpilogueKind::Row && S.Rank >= 1 && !S.emptyAxis() &&
      S.tableBytes() >= PrefetchTableBytes) {
    // The same for a row epilogue's rows, each one "element".
    const uint64_t RowBytes = std::max<uint64_t>(1, S.RowIn * S.ElemBytes);
    P.PrefetchRowsAhead = std::clamp<uint64_t>(PrefetchAheadBytes / RowBytes, 1, MaxRowsAhead);
    P.PrefetchRowBytes = std::min(Prefetched, RowBytes);
  }
}

/// Streamed indices, shared row indices' next rows and next regions: the
/// element rows' memory strategies.
void planStreaming(const KernelSpec &S, const TargetFacts &T, KernelPlan &P) {
  const unsigned L = S.Rank == 0 ? 0 : S.Rank - 1;
  P.StreamIndices = streamsIndices(S, P, T);
  const bool WarmSharedRows = S.Rank >= 2 && !S.innerIsBlock() && !S.emptyAxis() &&
                              indicesSameEveryRow(S) &&
                              readsSparselyFromCache(S, P, T, SharedRowReadsPerLine);
  P.TouchInputRow = !WarmSharedRows && touchesInputRow(S, P.StreamIndices, P.LineBytes);
  if (P.StreamIndices) {
    P.IndexAheadBytes = IndexAheadBytes;
    P.PrefetchNextInputRow = S.AxisStride[0] == 1 && !P.TouchInputRow;
  } else if (P.Row == RowKind::SharedIndices) {
    P.PrefetchNextInputRow = !WarmSharedRows && !P.TouchInputRow && S.TupleSize == 1 &&
                             S.AxisStride[0] == 1 && S.InStride[L] == 0 &&
                             S.Sizes[L] >= StreamBlock &&
                             S.rows() * S.AxisSize[0] * S.ElemBytes >= PrefetchTableBytes;
  }
  if (P.StreamIndices || P.PrefetchNextInputRow)
    P.BlockElements = StreamBlock;
  if (P.PrefetchNextInputRow)
    P.MaxShareLines = MaxShareLines;
  if (prefetchesNextRegion(S)) {
    // A region its rows read at least once for every two of its lines is
    // loaded in order first, as a row is (touchesInputRow). FLOAT32 slabs
    // by rows of INT32 indices, the kernel planned each way in one process
    // and run alternately after a 256 MiB copy, touched against
    // prefetched: GE3's 64 slabs of 1 MiB by 256 rows of 512 10.6-11.5
    // against 11.8-13.6 ms (in C, on a more loaded machine, 15.1 against
    // 30.6), by 16 rows (one read for two lines) 4.0 against 4.3; 256
    // slabs of 256 KiB by 128 rows 10.4 against 15.5; 16 slabs of 4 MiB by
    // 512 rows 26.4 against 33.8.
    P.RegionElements = regionElements(S);
    const uint64_t Reads = S.Sizes[S.Rank - 2] * S.Sizes[S.Rank - 1];
    P.TouchRegion = 2 * Reads * P.LineBytes >= P.RegionElements * S.ElemBytes;
    P.PrefetchNextRegion = !P.TouchRegion;
    if (P.PrefetchNextRegion)
      P.MaxRegionShareLines = MaxRegionShareLines;
  }
}

/// The bytes of each block row the kernel copies whole (rank 2 or more,
/// from an axis that is not empty); 0 for other rows.
uint64_t copiedRowBytes(const KernelSpec &S, const KernelPlan &P) {
  if (P.Row != RowKind::Block || S.Rank < 2 || S.emptyAxis())
    return 0;
  return S.Sizes[S.Rank - 1] * S.ElemBytes;
}

/// Whether the output is written with non-temporal stores.
bool planNonTemporal(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T) {
  const unsigned L = S.Rank == 0 ? 0 : S.Rank - 1;
  // Non-temporal stores for a large output written in whole lines: block
  // rows of at least two vectors, or streamed element rows into a
  // contiguous output of integer-sized elements (buffered a block at a
  // time).
  const bool LargeOutput = S.outputBytes() >= NonTemporalBytes;
  const bool StreamedBlockRows = copiedRowBytes(S, P) >= 2 * T.VectorBytes;
  const bool StreamedElementRows =
      P.StreamIndices && S.OutStride[L] == 1 && S.integerSizedElement();
  // (An epilogue's output is written by its code, element by element.)
  return LargeOutput && (StreamedBlockRows || StreamedElementRows) && !S.hasEpilogue();
}

} // namespace

KernelPlan planKernel(const KernelSpec &S, const TargetFacts &T) {
  if (S.Family && S.PlanRows) {
    // A row family runs as its planned shape: what the plan decides from
    // the rows (large outputs, region prefetches) is the key's.
    KernelSpec Planned = S;
    Planned.Family = false;
    Planned.PlanRows = 0;
    Planned.Sizes[0] = S.PlanRows;
    return planKernel(Planned, T);
  }
  KernelPlan P;
  P.LineBytes = T.CacheLineBytes;
  P.VectorBytes = T.VectorBytes;
  if (S.Family) {
    // Any sizes: element rows, none of the strategies sizes choose. On a
    // GPU the most blocks any shape's grid has; a launch takes as many as
    // its shape's elements fill, as a specialized kernel's plan does.
    if (T.Gpu)
      plan::planGpuFamily(P);
    P.LoopVectorBytes = plan::loopVectorBytes(S, P, T);
    P.ScalarGathers = plan::scalarGathers(S, P, T);
    return P;
  }
  P.MaxStraightLoop = MaxStraightLoop;
  P.MaxStraightCopies = MaxStraightCopies;
  P.MaxInlinePrefetchLines = MaxInlinePrefetchLines;
  P.Row = S.innerIsBlock()                ? RowKind::Block
          : permutes(S, T)                ? RowKind::Permute
          : !T.Gpu && sharesRowIndices(S) ? RowKind::SharedIndices
                                          : RowKind::Element;
  P.LoopVectorBytes = plan::loopVectorBytes(S, P, T);
  P.ScalarGathers = plan::scalarGathers(S, P, T);
  if (P.Row == RowKind::Permute) {
    // The row is in registers and the indices are read in order: nothing
    // to prefetch or stream.
    P.PermuteBytes = T.PermuteBytes;
    P.PermuteRegisters =
        static_cast<unsigned>((S.AxisSize[0] * S.ElemBytes + T.PermuteBytes - 1) / T.PermuteBytes);
    return P;
  }
  if (T.Gpu) {
    plan::planGpuGrid(S, P);
    return P;
  }
  if (P.Row == RowKind::Element && (P.TileColumns = cpuTileColumns(S)))
    return P; // Tiles' rows: none of the whole rows' memory strategies.
  planTablePrefetch(S, T, P);
  planStreaming(S, T, P);
  plan::planScalarLoop(S, T, P);
  P.NonTemporal = planNonTemporal(S, P, T);
  P.AlignStores =
      T.MaskedByteStores && !P.NonTemporal && copiedRowBytes(S, P) >= AlignStoresFromBytes;
  P.AlignLoads = T.PermuteBytes == 64 && P.VectorBytes == 64 && !P.NonTemporal &&
                 copiedRowBytes(S, P) >= AlignLoadsFromBytes;
  return P;
}

std::string KernelPlan::describe() const {
  std::ostringstream OS;
  OS << "row=" << rowKindName(Row);
  if (PermuteRegisters)
    OS << "(registers=" << PermuteRegisters << ")";
  if (StreamIndices)
    OS << " stream-indices(block=" << BlockElements << ",ahead=" << IndexAheadBytes << ")";
  if (PrefetchNextInputRow)
    OS << " prefetch-next-row(block=" << BlockElements << ",lines<=" << MaxShareLines << ")";
  if (TouchInputRow)
    OS << " touch-row";
  if (TouchRegion)
    OS << " touch-region(elements=" << RegionElements << ")";
  if (PrefetchNextRegion)
    OS << " prefetch-next-region(elements=" << RegionElements << ",lines<=" << MaxRegionShareLines
       << ")";
  if (PrefetchRowsAhead)
    OS << " prefetch-rows(ahead=" << PrefetchRowsAhead << ",bytes=" << PrefetchRowBytes << ")";
  if (NonTemporal)
    OS << " non-temporal";
  if (AlignStores)
    OS << " align-stores";
  if (AlignLoads)
    OS << " align-loads";
  if (LoopVectorBytes)
    OS << " loop-vector=" << LoopVectorBytes;
  if (ScalarGathers)
    OS << " scalar-gathers";
  if (ScalarLoop)
    OS << " scalar-loop";
  if (TileColumns && !Blocks)
    OS << " tile-columns=" << TileColumns;
  if (Blocks)
    OS << " grid(blocks=" << Blocks << ",threads=" << ThreadsPerBlock
       << (WideBytes ? ",wide=" + std::to_string(WideBytes) : std::string())
       << (StagedRowBytes ? ",staged-row=" + std::to_string(StagedRowBytes) : std::string())
       << (StagedStripColumns ? ",staged-strip=" + std::to_string(StagedStripColumns)
                              : std::string())
       << (TileColumns ? ",tile-columns=" + std::to_string(TileColumns) : std::string())
       << (Index32 ? ",index32" : "") << ")";
  return OS.str();
}

} // namespace gatherjit
