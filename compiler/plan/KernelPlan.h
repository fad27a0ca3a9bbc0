//===- compiler/plan/KernelPlan.h - How a kernel runs its rows -----------===//
/// \file
/// A pure function from a KernelSpec and the target's facts to a
/// KernelPlan: what the innermost dimension is (a block copy, an element
/// loop, or an element loop through a table of offsets shared by every
/// row), whether indices stream in blocks, what is prefetched how far
/// ahead, whether stores bypass the cache, and whether block rows align
/// their stores, and on a GPU the grid. The emitters follow the plan and
/// decide nothing; the tuning constants and their measurements live in
/// KernelPlan.cpp (the row kinds and the CPU's memory strategies),
/// LoopPlan.cpp (how a CPU's element loop loads) and GpuPlan.cpp (a GPU's
/// grid).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_COMPILER_PLAN_KERNELPLAN_H
#define GATHERJIT_COMPILER_PLAN_KERNELPLAN_H

#include "compiler/spec/KernelSpec.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace gatherjit {

/// What the plan needs to know of the machine (a Backend's facts; see
/// compiler/backend/Backend.h).
struct TargetFacts {
  /// The unit of prefetches, of non-temporal stores' alignment and of
  /// prefetch shares.
  unsigned CacheLineBytes = 64;
  /// The widest vector a block copy moves at once (the code generator
  /// splits it where the machine's are narrower). A power of two dividing
  /// CacheLineBytes.
  unsigned VectorBytes = 64;
  /// The widest register from which one instruction picks elements by a
  /// vector of run-time positions (x86 with AVX-512F: 64); 0 where the
  /// emitter has no such permute.
  unsigned PermuteBytes = 0;
  /// Given the first lines of a row read out of order, the hardware
  /// prefetcher fetches the rest of it in order (x86: Intel's L2 streamer,
  /// AMD's Zen 4 alike): a kernel prefetches only the head of each block
  /// row it gathers.
  bool PrefetcherFollowsRows = false;
  /// A masked store writes any run of bytes within a vector (and a masked
  /// load reads one) as fast as a plain store does: x86 with AVX-512BW,
  /// measured on Intel's cores (AMD's Zen 4's measured slower).
  bool MaskedByteStores = false;
  /// Nonzero where loops that gather elements of 4 bytes or more run
  /// faster vectorized at this many bytes than at the code generator's
  /// default width: x86 cores with AVX512-FP16 (Intel's from Sapphire
  /// Rapids on), whose 512-bit instructions keep the clock, where LLVM's
  /// default is 256 bits.
  unsigned WideLoopBytes = 0;
  /// Nonzero where loops that gather elements narrower than 4 bytes by
  /// 32-bit indices from the caches run faster vectorized at this many
  /// bytes than at the code generator's default width (x86 cores with
  /// AVX512-FP16: 16; LoopPlan.cpp).
  unsigned NarrowLoopBytes = 0;
  /// The target's gather instructions beat scalar loads inserted into
  /// vectors only where the elements come from memory (AMD's Zen 4): a
  /// kernel whose operands the caches hold loads its elements one by one.
  bool GathersOnlyFromMemory = false;
  /// The target's gather instructions lose to scalar loads inserted into
  /// vectors where a row's elements come from a table larger than the
  /// core's own caches (x86 cores with AVX512-FP16, whose L2 is 2 MiB): a
  /// kernel gathering from such a table loads its elements one by one
  /// (KernelPlan::ScalarGathers), and from a larger one runs a loop of one
  /// element an iteration (KernelPlan::ScalarLoop; LoopPlan.cpp).
  bool GathersLoseBeyondCore = false;
  /// The last-level cache's bytes (the host's, as the system tells it);
  /// 0 where not known. An input that fits it stays there from call to
  /// call (streamsIndices in KernelPlan.cpp).
  uint64_t LastLevelCacheBytes = 0;
  /// A GPU runs each element on a thread of its own: no prefetching,
  /// streaming or offset tables, which are CPU strategies.
  bool Gpu = false;
  bool operator==(const TargetFacts &) const = default;
};

/// The innermost dimension's loop.
enum class RowKind {
  /// One index per row, the row a contiguous block (an embedding row):
  /// copied in vectors.
  Block,
  /// One index per element.
  Element,
  /// One index per element, the same indices for every row (a Gather's
  /// dimensions before the axis): read and checked once per call into a
  /// table of input offsets.
  SharedIndices,
  /// One index per element, every element of a row gathering from one
  /// short contiguous input row: the row is loaded into PermuteRegisters
  /// registers, and each vector of indices permutes a vector of output out
  /// of them (no load per element).
  Permute,
};
const char *rowKindName(RowKind Kind); // "block", "element", "shared-indices", "permute"

struct KernelPlan {
  RowKind Row = RowKind::Element;
  /// The output is written with non-temporal stores (and the kernel ends
  /// with a fence).
  bool NonTemporal = false;
  /// Element rows run in blocks of BlockElements, each prefetching the
  /// indices IndexAheadBytes ahead.
  bool StreamIndices = false;
  uint64_t BlockElements = 0;
  uint64_t IndexAheadBytes = 0;
  /// Element or shared-index rows run in blocks of BlockElements, each
  /// prefetching its share (at most MaxShareLines lines) of the contiguous
  /// input row the next row gathers from.
  bool PrefetchNextInputRow = false;
  uint64_t MaxShareLines = 0;
  /// Element rows that read most lines of the contiguous input row they
  /// gather from (sharing their indices, or rows of 1 MiB or more) load it
  /// before they gather, one byte a line in order (in place of
  /// PrefetchNextInputRow): the hardware prefetcher follows the scan, and
  /// the row's gathers then read from the cache.
  bool TouchInputRow = false;
  /// Rows of dimension Rank-2 gather from one region of RegionElements
  /// input elements: each prefetches its share (at most MaxRegionShareLines
  /// lines) of the next region.
  bool PrefetchNextRegion = false;
  uint64_t RegionElements = 0;
  uint64_t MaxRegionShareLines = 0;
  /// Rows of dimension Rank-2 that gather from one region of
  /// RegionElements input elements load it in order, one byte a line,
  /// before the first of them gathers (in place of PrefetchNextRegion).
  bool TouchRegion = false;
  /// Block rows (or a row epilogue's rows, or a scalar loop's elements):
  /// the row this many rows ahead is prefetched (its first
  /// PrefetchRowBytes); 0 for none.
  uint64_t PrefetchRowsAhead = 0;
  uint64_t PrefetchRowBytes = 0;
  /// Block rows into an output not aligned to the copy vector store the
  /// bytes before their first vector boundary and after their last with
  /// masked stores and the vectors between aligned, so that no store spans
  /// two lines (an aligned output takes the plain copy).
  bool AlignStores = false;
  /// Block rows from an input not aligned to the copy vector, into an
  /// aligned output, load the row's lines aligned (the first and last
  /// masked to the row's bytes) and shift each output vector out of two
  /// of them with a two-register permute (TargetFacts::PermuteBytes), so
  /// that no load spans two lines. Inputs aligned, or off by other than a
  /// multiple of 4 bytes, and unaligned outputs take the plain copy.
  bool AlignLoads = false;
  /// Permute rows: the registers that hold the input row, each of
  /// PermuteBytes (TargetFacts).
  unsigned PermuteRegisters = 0;
  unsigned PermuteBytes = 0;
  /// Nonzero: the kernel's loops are vectorized at this many bytes
  /// (TargetFacts::WideLoopBytes or NarrowLoopBytes), not the code
  /// generator's default.
  unsigned LoopVectorBytes = 0;
  /// The kernel's loops load gathered elements one by one into vectors,
  /// not with the target's gather instructions
  /// (TargetFacts::GathersOnlyFromMemory).
  bool ScalarGathers = false;
  /// The element row's loop is not vectorized: it moves one element an
  /// iteration, and an index out of range branches away (under Check the
  /// kernel returns its position, the range's first bad one; under Clamp
  /// and Clip a cold block clamps it), so that each load's address depends
  /// on its index alone (TargetFacts::GathersLoseBeyondCore).
  bool ScalarLoop = false;
  /// Loops of at most this many iterations, of constant count, are emitted
  /// as straight-line code, while the loops so emitted around them make at
  /// most MaxStraightCopies copies of any code.
  uint64_t MaxStraightLoop = 0;
  uint64_t MaxStraightCopies = 0;
  /// The target's line and copy vector (TargetFacts).
  unsigned LineBytes = 64;
  unsigned VectorBytes = 64;
  /// Prefetches of at most this many lines are emitted inline; longer
  /// spans in a loop.
  uint64_t MaxInlinePrefetchLines = 0;
  /// A GPU plan: one thread per output element, in blocks of
  /// ThreadsPerBlock threads, a grid of Blocks blocks striding over the
  /// output when it has more elements than threads.
  uint64_t ThreadsPerBlock = 0;
  uint64_t Blocks = 0;
  /// Nonzero where a GPU kernel may copy its block rows in pieces of this
  /// many bytes (widenedBlocks): it does when the input and output it is
  /// given are aligned to them, and copies element by element otherwise.
  unsigned WideBytes = 0;
  /// Nonzero where each output row reads one contiguous input row of at
  /// most this many bytes (stagedRowBytes): a block copies the row into
  /// shared memory, then its threads gather the output row from there.
  uint64_t StagedRowBytes = 0;
  /// Nonzero where the output rows of dimension Rank-2 all read one input
  /// region of the axis's rows, contiguous along the last dimension
  /// (GatherElements on axis Rank-2; stagedStripColumns): the grid's work
  /// is strips, each this many columns of one such region (every axis
  /// row), which a block copies into shared memory, then gathers those
  /// columns of every output row from there.
  uint64_t StagedStripColumns = 0;
  /// Nonzero where a kernel takes the output of its last two dimensions
  /// in tiles of this many columns, all rows of a tile before the next.
  /// A GPU kernel's threads: element i of the grid is the output element
  /// tiledElement names (a last tile of fewer columns is filled with
  /// positions that have no element, see tiledGridElements). A CPU
  /// kernel's rows of dimension Rank-2 (a last tile of fewer columns is
  /// run as one). Check still names the first bad index in the output's
  /// order.
  uint64_t TileColumns = 0;
  /// A GPU kernel's threads count their grid positions and find their
  /// output coordinates in 32-bit arithmetic (the grid has fewer than
  /// 2^31 positions; offsets stay 64-bit): a constant division is then one
  /// mul.hi.u32, where 64 bits take a dozen instructions.
  bool Index32 = false;
  /// A GPU kernel's index loads and output stores are marked evict-first
  /// (read and written once), leaving the caches to the input.
  bool StreamedOperands = false;
  /// Every buffer is aligned to its element size (a GPU's allocations
  /// are), so elements and indices load and store whole.
  bool ElementAligned = false;

  bool operator==(const KernelPlan &) const = default;
  /// One line naming each decision, for logs and tests.
  std::string describe() const;
};

KernelPlan planKernel(const KernelSpec &Spec, const TargetFacts &Target = {});

/// The grid positions of a kernel whose threads take \p Spec's output in
/// tiles of \p TileColumns columns (KernelPlan::TileColumns; 0: none): its
/// elements, with the last dimension filled to whole tiles.
inline uint64_t tiledGridElements(const KernelSpec &Spec, uint64_t TileColumns) {
  if (!TileColumns || Spec.Rank == 0 || Spec.Sizes[Spec.Rank - 1] == 0)
    return Spec.elements();
  const uint64_t Columns = Spec.Sizes[Spec.Rank - 1];
  const uint64_t Filled = (Columns + TileColumns - 1) / TileColumns * TileColumns;
  return Spec.elements() / Columns * Filled;
}

/// A staged-strip plan's strips (KernelPlan::StagedStripColumns): each
/// outer position's columns in tiles of \p Columns.
inline uint64_t stagedStrips(const KernelSpec &Spec, uint64_t Columns) {
  const uint64_t C = Spec.Sizes[Spec.Rank - 1], R = Spec.Sizes[Spec.Rank - 2];
  return Spec.elements() / (R * C) * ((C + Columns - 1) / Columns);
}

/// The blocks of a grid of \p Threads-thread blocks for \p Elements
/// threads' work (one each), at most \p MaxBlocks: a specialized kernel's
/// plan, or a family kernel's launch for one shape.
inline uint64_t gridBlocks(uint64_t Elements, uint64_t Threads, uint64_t MaxBlocks) {
  return std::clamp<uint64_t>((Elements + Threads - 1) / Threads, 1, MaxBlocks);
}

} // namespace gatherjit

#endif
