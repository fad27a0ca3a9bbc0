//===- compiler/plan/KernelPlan.cpp - How a kernel runs its rows ---------===//
//
// Every tuning constant of the kernels, with what was measured to choose
// it. Figures are from the suite's cases (bench/Cases.h) on a 2-core AMD
// EPYC (Zen 4) unless an Intel core is named; GE and G cases named as
// there.
//
//===----------------------------------------------------------------------===//

#include "compiler/plan/KernelPlan.h"

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
/// A GPU's grid: blocks of 256 threads (8 warps), at most 8192 blocks
/// (about 8 waves of a 132-SM device at 2048 threads per SM), the threads
/// striding over larger outputs. On an H100, threads that took 2, 4 or 8
/// of their elements at once (all indices loaded, then all reads, then the
/// stores) ran every case within noise of one at a time.
constexpr uint64_t GpuThreadsPerBlock = 256;
constexpr uint64_t MaxGpuBlocks = 8192;
/// Block rows move in 16-byte pieces (ld.global.nc.v4 and st.global.v4,
/// a thread's widest access): G1's rows of 768 FLOAT32 element by element
/// ran at 64-67% of a device copy of their bytes, behind PyTorch's
/// index_select, on an H100.
constexpr unsigned GpuWideBytes = 16;
/// Output rows that each read one contiguous input row of at most this
/// many bytes stage it in shared memory (a block of 256 threads with 32 KiB
/// leaves room for 7 such blocks on an SM of 228 KiB), where their reads
/// would touch at least as many bytes of 32-byte sectors as the row has.
/// On an H100: GE1's rows (16 KiB) 127 -> 112 us, GE4's (8 KiB) 92 -> 80
/// us, G2's 12.8 -> 11.0 us. Threads that loaded 2, 4 or 8 of a staged
/// row's indices before gathering any of them ran GE1 in 101.2, 100.4 and
/// 110.6 us against 100.1 us one at a time (GE4: 63.6, 62.5 and 74.2
/// against 62.0). Staging tiles of 16 columns of every axis
/// position instead (GE3: 512 rows x 64 bytes) made GE3 slower, 85 -> 91.5
/// us: its element reads hit L2 already.
constexpr uint64_t GpuMaxStagedRowBytes = 32 << 10;
constexpr uint64_t GpuSectorBytes = 32;
/// ...and more than this many: a row of at most an L1 line is read from L1
/// after its first sectors' misses as from shared memory, so staging it
/// would add only its copy and barrier, and a block per row (whose threads
/// past the row's outputs idle). Such kernels also compile in half the
/// time or less, here on the shared 2-core Zen 4, one run each way:
/// GatherElements FLOAT32 [L, 4] by INT64 [L, 2] made PTX in 2.07-2.08 ms
/// against 3.96-4.12 ms staged (medians of 40 shapes, three runs), and
/// ptxas -O3 for sm_90 (the driver's compiler, standing in for its load
/// of the module, 10-28 ms a kernel on an H100) took 1.8-2.4 ms over an
/// empty module's against 7.3-7.9 ms for G4 staged, 2.6-3.2 against
/// 6.3-6.9 ms for [20, 4] by [20, 2] (best of 5 x 10 runs). Not yet
/// measured on a device.
constexpr uint64_t GpuMinStagedRowBytes = 128;

/// The bytes of the input row each output row reads, where a GPU kernel
/// stages it (see GpuMaxStagedRowBytes); 0 where it does not.
uint64_t stagedRowBytes(const KernelSpec &S) {
  if (S.Family || S.hasEpilogue() || S.Rank == 0 || S.TupleSize != 1 || S.emptyAxis() ||
      S.elements() == 0 || S.ElemBytes > 8 || !S.integerSizedElement())
    return 0;
  const unsigned L = S.Rank - 1;
  // Along the row the index moves and the input does not, but through it.
  if (S.InStride[L] != 0 || S.IdxStride[L] == 0 || S.AxisStride[0] != 1)
    return 0;
  const uint64_t Bytes = S.AxisSize[0] * S.ElemBytes;
  return Bytes > GpuMinStagedRowBytes && Bytes <= GpuMaxStagedRowBytes &&
                 S.Sizes[L] * GpuSectorBytes >= Bytes
             ? Bytes
             : 0;
}
/// Element rows that read along contiguous input rows picked by their
/// indices (GatherElements on an axis other than the last) are taken in
/// tiles of GpuTileColumns columns, every row of a tile before the next
/// tile: the threads running at once then read few columns of every input
/// row, whose sectors stay in L2 between their reads, where row by row
/// they read every column of random rows and a sector read by one row's
/// thread is evicted before another row's thread reads it again. A warp
/// takes one tile's row: its index loads and stores stay whole lines. On
/// an H100: GE2 (4096 x 4096 FLOAT32 on axis 0, a 64 MiB input over a 50
/// MB L2) 405 -> 163 us, below the 421 us of as many random reads; GE3 (a
/// 1 MiB input slab per batch) 85.5 -> 79.8 us. Tiles of 8, 16, 32 and 64
/// columns in one run: GE2 193.4, 165.9, 162.4 and 163.2 us, GE3 89.8,
/// 82.8, 80.8 and 83.2 us. Blocks that each took a whole tile (GE3: its
/// 64 KiB column strip in one SM's L1) instead of the grid striding over
/// the tiles ran GE3 in 165.9 us against 81.3.
constexpr uint64_t GpuTileColumns = 32;

/// Element rows that read along contiguous input rows their indices pick
/// (GatherElements on an axis other than the last).
bool readsAlongRows(const KernelSpec &S) {
  if (S.Family || S.Rank < 2 || S.TupleSize != 1 || S.emptyAxis() || S.elements() == 0)
    return false;
  const unsigned L = S.Rank - 1;
  return S.InStride[L] == 1 && S.IdxStride[L] != 0 && S.OutStride[L] == 1 &&
         S.AxisStride[0] >= S.Sizes[L];
}

/// Output rows of dimension Rank-2 that all read one region of the
/// axis's rows (GatherElements on axis Rank-2, GE3) take strips of this
/// many bytes of every region row: a block copies a strip (at most
/// GpuMaxStagedRowBytes, and no wider than the output's rows) into shared
/// memory and gathers those columns of all output rows from there, where
/// their reads from L2 would each be a 32-byte sector; it does where the
/// strip moves no more bytes than those reads would (each column's region
/// at most a sector per output row). On an H100, in one run: GE3 (FLOAT32
/// [64, 512, 512] on axis 1, 256 output rows) 76.2-77.1 us by tiles of
/// 32 columns, 74.8-75.2 us by strips of 64 bytes (32 KiB a block),
/// 66.3 us by strips of 32 (16 KiB a block, twice as many blocks on an
/// SM). Regions too tall for a sector's strip stay tiles: strips of 8
/// bytes of GE2's 4096 rows (32 KiB a block) ran it in 397-400 us against
/// tiles' 163-164 us, two alternating runs of each.
constexpr uint64_t GpuStripRowBytes = 32;

/// The columns of a GPU kernel's strips (see GpuStripRowBytes); 0 where
/// its output rows do not read one region each, or its strips would not
/// pay or fit.
uint64_t stagedStripColumns(const KernelSpec &S) {
  if (!readsAlongRows(S) || S.hasEpilogue() || S.InStride[S.Rank - 2] != 0 || S.ElemBytes > 8 ||
      !S.integerSizedElement() ||
      S.AxisSize[0] * S.ElemBytes > S.Sizes[S.Rank - 2] * GpuSectorBytes)
    return 0;
  const uint64_t Columns = GpuStripRowBytes / S.ElemBytes;
  return S.AxisSize[0] * GpuStripRowBytes <= GpuMaxStagedRowBytes && Columns <= S.Sizes[S.Rank - 1]
             ? Columns
             : 0;
}

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
  if (!readsAlongRows(S) || S.Epilogue.Kind == EpilogueKind::Row || S.InStride[S.Rank - 2] != 0)
    return 0;
  const uint64_t RowBytes = S.AxisStride[0] * S.ElemBytes;
  if (RowBytes <= PageBytes || S.AxisSize[0] * RowBytes <= CpuTlbReachBytes)
    return 0;
  uint64_t W = 1;
  while (W * 2 * S.ElemBytes <= CpuTileBytes)
    W *= 2;
  return W < S.Sizes[S.Rank - 1] ? W : 0;
}

/// The columns of a GPU kernel's tiles (see GpuTileColumns); 0 where it
/// takes the output row by row. A last tile of fewer columns is run as a
/// whole one whose threads past the row have nothing to do: on an H100
/// (1024 threads, two rounds of one run), FLOAT32 [4001, 4001] on axis 0
/// 372.7-374.2 -> 172.4-172.9 us, [2000, 7770] from [1000, 7770] on axis 0
/// 185.5-187.2 -> 155.0-155.1 us, against rows where no tile was whole.
uint64_t tileColumns(const KernelSpec &S) {
  const unsigned L = S.Rank - 1;
  return readsAlongRows(S) && S.Sizes[L] > GpuTileColumns && S.Sizes[L - 1] > 1 ? GpuTileColumns
                                                                                : 0;
}
/// Element rows that read along input rows run blocks of this many threads:
/// four times as many neighbouring output elements on one SM at once (whose
/// reads of the rows their indices pick then share more of its L1's lines, as
/// we read it). On an H100, 1024 threads against 256 (two rounds of one run):
/// FLOAT32 [60, 1000, 777] by INT32 [60, 500, 777] on axis 1 288.4-289.7 ->
/// 230.0 us, the same with 768 columns 221.2-222.2 -> 207.4-208.9, GE3
/// 79.4-80.2 -> 75.6-75.9, [4000, 4000] on axis 0 157.1-157.3 -> 154.9-155.0; a
/// little slower where the input is larger than L2: GE2 161.0-162.6 ->
/// 162.4-162.5, [8192, 1024] on axis 0 83.9-84.1 -> 85.7-85.9. 512 threads sat
/// between the two. With 1024 threads, tiles of 16 columns ran GE3 in 74.2-74.6
/// us against 76.6-77.4 at 32, but GE2 in 164.1-165.2 against 162.4-163.5: 32
/// kept.
constexpr uint64_t GpuAlongRowsThreads = 1024;
/// Specialized GPU kernels of fewer grid positions than this count their
/// threads' positions in 32 bits (KernelPlan::Index32): with the largest
/// grid's stride added, a position still fits in 32 unsigned bits. Family
/// kernels, whose shapes may be larger, count in 64. Fewer instructions
/// (GE6's PTX 40 -> 33; a rank-3 shape of sizes no power of two divides
/// by mul.hi.u32, not a dozen instructions of mul.hi.u64), not measured
/// speed: on an H100 in one run, 32 against 64 bits, GE2 162.2 / 161.8 us,
/// GE3 80.2 / 80.5, GE6 77.2 / 77.3, GN2 15.9 / 16.0, GatherElements
/// FLOAT32 [16, 1000, 777] on axis 1 131.0 / 131.0 (memory-bound all).
constexpr uint64_t GpuIndex32Elements = uint64_t(1) << 31;
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

/// The bytes an element kernel moves through the caches: twice its output
/// (written, its elements read) and its indices.
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

/// Element rows from a table the core's caches do not hold, one index an
/// element along a contiguous axis.
bool gathersBeyondCore(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T,
                       uint64_t TableBytes) {
  return T.GathersLoseBeyondCore && !T.Gpu && P.Row == RowKind::Element && !S.Family &&
         S.TupleSize == 1 && S.AxisStride[0] == 1 && S.AxisSize[0] * S.ElemBytes >= TableBytes;
}

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

/// The loop of KernelPlan::ScalarLoop, for rows none of the memory
/// strategies (streamed indices, a touched row) takes.
bool scalarLoop(const KernelSpec &S, const KernelPlan &P, const TargetFacts &T) {
  return !P.StreamIndices && !P.TouchInputRow && !P.TileColumns && S.Rank > 0 &&
         gathersBeyondCore(S, P, T, ScalarLoopTableBytes) && movedBytes(S) <= ScalarLoopMovedBytes;
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
         T.LastLevelCacheBytes && gatheredBytes(S) + movedBytes(S) <= T.LastLevelCacheBytes;
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
    if (T.Gpu) {
      P.ThreadsPerBlock = GpuThreadsPerBlock;
      P.Blocks = MaxGpuBlocks;
      P.ElementAligned = true;
      P.StreamedOperands = true;
    }
    P.LoopVectorBytes = loopVectorBytes(S, P, T);
    P.ScalarGathers = scalarGathers(S, P, T);
    return P;
  }
  P.MaxStraightLoop = MaxStraightLoop;
  P.MaxStraightCopies = MaxStraightCopies;
  P.MaxInlinePrefetchLines = MaxInlinePrefetchLines;
  P.Row = S.innerIsBlock()                ? RowKind::Block
          : permutes(S, T)                ? RowKind::Permute
          : !T.Gpu && sharesRowIndices(S) ? RowKind::SharedIndices
                                          : RowKind::Element;
  P.LoopVectorBytes = loopVectorBytes(S, P, T);
  P.ScalarGathers = scalarGathers(S, P, T);
  if (P.Row == RowKind::Permute) {
    // The row is in registers and the indices are read in order: nothing
    // to prefetch or stream.
    P.PermuteBytes = T.PermuteBytes;
    P.PermuteRegisters =
        static_cast<unsigned>((S.AxisSize[0] * S.ElemBytes + T.PermuteBytes - 1) / T.PermuteBytes);
    return P;
  }
  if (T.Gpu) {
    // The CPU's memory strategies below (and the table) do not apply.
    P.ThreadsPerBlock = GpuThreadsPerBlock;
    P.ElementAligned = true;
    // Evict-first indices and outputs: G1 22.4 -> 20.2 us, GE2 (a 64 MiB
    // table over a 50 MB L2) 418 -> 405 us on an H100, the rest unmoved.
    P.StreamedOperands = true;
    uint64_t Elements = S.elements();
    if ((P.StagedRowBytes = stagedRowBytes(S))) {
      P.Blocks = std::min(S.elements() / S.Sizes[S.Rank - 1], MaxGpuBlocks);
      return P;
    }
    if ((P.StagedStripColumns = stagedStripColumns(S))) {
      P.Blocks = std::min(stagedStrips(S, P.StagedStripColumns), MaxGpuBlocks);
      return P;
    }
    if (std::optional<KernelSpec> Wide = widenedBlocks(S, GpuWideBytes)) {
      P.WideBytes = GpuWideBytes;
      Elements = Wide->elements();
    }
    if (readsAlongRows(S)) {
      P.ThreadsPerBlock = GpuAlongRowsThreads;
      P.TileColumns = tileColumns(S);
      Elements = tiledGridElements(S, P.TileColumns);
    }
    // (A widened body's positions are fewer than its narrow body's.)
    P.Index32 = !S.Family && std::max(Elements, S.elements()) < GpuIndex32Elements;
    P.Blocks = gridBlocks(Elements, P.ThreadsPerBlock, MaxGpuBlocks);
    return P;
  }
  if (P.Row == RowKind::Element && (P.TileColumns = cpuTileColumns(S)))
    return P; // Tiles' rows: none of the whole rows' memory strategies.
  planTablePrefetch(S, T, P);
  planStreaming(S, T, P);
  if ((P.ScalarLoop = scalarLoop(S, P, T))) {
    P.ScalarGathers = false;
    if (!P.PrefetchRowsAhead) { // Each element a "row" of its own bytes.
      P.PrefetchRowsAhead = ScalarLoopAhead;
      P.PrefetchRowBytes = S.ElemBytes;
    }
  }
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
