//===- tests/runtime/ChurnTest.cpp - Memory under a stream of new kernels ===//
//
// A server that keeps seeing new shapes must not grow without bound: 5,000
// distinct kernels through the C API with a cache of 16, from 4 threads
// that also run and drop their handles, each one compiled, and again in
// the default mode (most of them on their family's kernel). Heap in use is
// sampled after 1,000, 3,000 and 5,000 kernels (resident memory is printed
// beside it); what is left between the last two samples must stay under 1%
// of the heap.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/gatherjit.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <malloc.h>
#include <thread>
#include <vector>

namespace {

#ifdef GATHERJIT_SANITIZED_HEAP
extern "C" size_t __sanitizer_get_current_allocated_bytes();
#endif

/// Bytes the program has allocated and not freed. A sanitizer's allocator
/// keeps its own count (mallinfo2 reports nothing there).
uint64_t heapInUse() {
#ifdef GATHERJIT_SANITIZED_HEAP
  return __sanitizer_get_current_allocated_bytes();
#else
  struct mallinfo2 M = mallinfo2();
  return M.uordblks + M.hblkhd;
#endif
}

uint64_t residentBytes() {
  std::ifstream Statm("/proc/self/statm");
  uint64_t Pages = 0, Resident = 0;
  Statm >> Pages >> Resident;
  return Resident * 4096;
}

/// Kernel number \p N: a GatherElements of a shape no other N has, run on
/// its own data and checked by hand (output[r][c] = data[r][idx[r][c]]).
/// Each has a row width of its own, so that no two share a row family
/// (whose kernels the runtime keeps apart from its cache, see
/// rowFamilyOf): what stays is what the cache bounds.
bool compileRunAndCheck(gj_runtime *RT, uint64_t N) {
  const uint64_t Rows = 1 + N % 3, Cols = 1 + N;
  const uint64_t Sizes[2] = {Rows, Cols};
  gj_tensor_desc Data = gj_tensor(GJ_FLOAT32, 2, Sizes);
  gj_tensor_desc Idx = gj_tensor(GJ_INT32, 2, Sizes);
  gj_descriptor Desc;
  if (gj_onnx_gather_elements(&Data, &Idx, 1, &Desc) != GJ_OK)
    return false;
  gj_kernel *K = nullptr;
  if (gj_compile(RT, &Desc, &K) != GJ_OK)
    return false;
  std::vector<float> In(Rows * Cols), Out(Rows * Cols, -1);
  std::vector<int32_t> Ix(Rows * Cols);
  for (uint64_t I = 0; I < In.size(); ++I) {
    In[I] = static_cast<float>(I);
    Ix[I] = static_cast<int32_t>((I * 7 + N) % Cols);
  }
  const bool Ran = gj_kernel_run(K, In.data(), Ix.data(), Out.data()) == GJ_OK;
  gj_kernel_release(K);
  if (!Ran)
    return false;
  for (uint64_t I = 0; I < Out.size(); ++I)
    if (Out[I] != In[(I / Cols) * Cols + static_cast<uint64_t>(Ix[I])])
      return false;
  return true;
}

void churn(gj_specialize Mode) {
  gj_runtime_options Options;
  gj_runtime_options_init(&Options);
  Options.specialize = Mode;
  Options.cache_capacity = 16;
  Options.threads = 1;
  gj_runtime *RT = nullptr;
  ASSERT_EQ(gj_runtime_create(&Options, &RT), GJ_OK) << gj_last_error();

  constexpr uint64_t Total = 5000, Threads = 4;
  const uint64_t Checkpoints[] = {1000, 3000, 5000};
  uint64_t Heap[3] = {}, Resident[3] = {};
  std::atomic<uint64_t> Wrong{0};
  uint64_t Done = 0;
  for (int Phase = 0; Phase < 3; ++Phase) {
    const uint64_t Begin = Done, End = Checkpoints[Phase];
    std::atomic<uint64_t> Next{Begin};
    std::vector<std::thread> Workers;
    for (uint64_t T = 0; T < Threads; ++T)
      Workers.emplace_back([&] {
        for (uint64_t N; (N = Next.fetch_add(1)) < End;)
          if (!compileRunAndCheck(RT, N))
            ++Wrong;
      });
    for (std::thread &W : Workers)
      W.join();
    Done = End;
    // A family kernel still compiling on the background thread is memory
    // of its own, made once: it is sampled once it is linked.
    gj_runtime_wait_background(RT);
    malloc_trim(0);
    Heap[Phase] = heapInUse();
    Resident[Phase] = residentBytes();
    std::printf("after %llu kernels: heap in use %.2f MiB, resident %.2f MiB\n",
                static_cast<unsigned long long>(Done), Heap[Phase] / 1048576.0,
                Resident[Phase] / 1048576.0);
  }
  gj_cache_stats Stats;
  gj_runtime_stats(RT, &Stats);
  gj_runtime_destroy(RT);

  EXPECT_EQ(Wrong.load(), 0u);
  EXPECT_EQ(Stats.misses, Total);
  EXPECT_LE(Stats.entries, 16u);
  EXPECT_LE(Stats.live_kernels, 16u) << "released and evicted kernels must free their code";
  ASSERT_GT(Heap[1], 0u) << "the heap counter reads nothing here";
  const double Growth = static_cast<double>(Heap[2]) - static_cast<double>(Heap[1]);
  EXPECT_LT(Growth, 0.01 * static_cast<double>(Heap[1]))
      << "heap grew by " << Growth << " bytes over the last 2,000 kernels";
}

TEST(Churn, FiveThousandDistinctKernelsFromFourThreadsStayBounded) { churn(GJ_SPECIALIZE_COMPILE); }

TEST(Churn, FiveThousandNewShapesInTheDefaultModeStayBounded) { churn(GJ_SPECIALIZE_ADAPTIVE); }

} // namespace
