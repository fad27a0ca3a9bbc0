//===- compiler/plan/GpuPlan.cpp - A GPU kernel's grid ---------------------===//
//
// The grid and thread schedule of a kernel on a GPU, and the tuning
// constants that choose them, each with what was measured to choose it:
// on an H100 (driver 580, CUDA 13) unless another machine is named.
//
//===----------------------------------------------------------------------===//

#include "compiler/plan/PlanRules.h"

#include <algorithm>

namespace gatherjit::plan {
namespace {

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

} // namespace

void planGpuFamily(KernelPlan &P) {
  P.ThreadsPerBlock = GpuThreadsPerBlock;
  P.Blocks = MaxGpuBlocks;
  P.ElementAligned = true;
  P.StreamedOperands = true;
}

void planGpuGrid(const KernelSpec &S, KernelPlan &P) {
  P.ThreadsPerBlock = GpuThreadsPerBlock;
  P.ElementAligned = true;
  // Evict-first indices and outputs: G1 22.4 -> 20.2 us, GE2 (a 64 MiB
  // table over a 50 MB L2) 418 -> 405 us on an H100, the rest unmoved.
  P.StreamedOperands = true;
  uint64_t Elements = S.elements();
  if ((P.StagedRowBytes = stagedRowBytes(S))) {
    P.Blocks = std::min(S.elements() / S.Sizes[S.Rank - 1], MaxGpuBlocks);
    return;
  }
  if ((P.StagedStripColumns = stagedStripColumns(S))) {
    P.Blocks = std::min(stagedStrips(S, P.StagedStripColumns), MaxGpuBlocks);
    return;
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
}

} // namespace gatherjit::plan
