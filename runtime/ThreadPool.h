//===- runtime/ThreadPool.h - Splitting a kernel's rows across cores -----===//
/// \file
/// A thin layer over oneTBB: a task arena limited to the runtime's thread
/// count, and a parallel loop over [0, rows) that reduces the chunks'
/// results to the smallest non-zero one (a kernel's first bad position).
/// Also one background thread for jobs nobody waits for (tier-up compiles).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_THREADPOOL_H
#define GATHERJIT_RUNTIME_THREADPOOL_H

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace gatherjit {

class ThreadPool {
public:
  /// \p Threads == 0 means all cores.
  explicit ThreadPool(unsigned Threads);
  ~ThreadPool();

  unsigned threads() const { return Threads; }
  /// Small problems run on the caller's thread: waking workers costs more
  /// than they save below about a megabyte of output, unless the kernel
  /// makes at least SplitReads reads at random (output elements, or rows
  /// copied whole) from an input of SplitInputBytes or more, beyond a
  /// core's L2, each of which waits on a miss. On a 2-core Xeon (`gatherjit
  /// gather --specialize compile`, medians of 301, three runs, FLOAT32 by
  /// INT64, the caller's thread against two): a take of 375 columns (24000
  /// reads) of [64, 16000] 15-16 -> 6 us, of [64, 100000] 30-34 -> 16-18,
  /// of 500 columns 55-59 -> 7-8 and 45-46 -> 20; 24K rows of 16 bytes from
  /// a 16 MiB table 53-57 -> 26; GatherElements along [512, 1024] by [512,
  /// 64] 20 -> 7, along 16 rows of 1 MiB by 2048 ids each 81-85 -> 12-15.
  /// 250 columns (16000 reads) lost (13-15 -> 15 and 20-21 -> 23), as did
  /// 500 columns of a [64, 4000] the core's L2 holds (6.8 -> 5.5-7.8).
  /// On a 2-core Zen 4 (from Python, two runs, one thread against two): 1000
  /// columns of [64, 100000] 77-81 -> 42 us, the 16 rows of 1 MiB 46-47 ->
  /// 21, the 24K rows of 16 bytes 98-103 -> 59-60, 375 columns 20-21 -> 19.
  static constexpr uint64_t SplitReads = 24576;
  static constexpr uint64_t SplitInputBytes = 2u << 20;
  bool worthSplitting(uint64_t OutputBytes, uint64_t Reads = 0, uint64_t InputBytes = 0) const {
    return Threads > 1 &&
           (OutputBytes >= (1u << 20) || (Reads >= SplitReads && InputBytes >= SplitInputBytes));
  }
  /// Runs \p Fn over chunks of [0, Rows) and returns the smallest non-zero
  /// result, or 0. In a process forked from one that had started oneTBB,
  /// on the caller's thread alone.
  int64_t parallelMin(uint64_t Rows, const std::function<int64_t(uint64_t, uint64_t)> &Fn);

private:
  unsigned Threads;
  struct Arena; ///< Hides oneTBB's headers from the runtime's users.
  /// Made by the first split run: a process whose kernels are all small
  /// never starts oneTBB (which also probes for an OpenMP runtime).
  std::unique_ptr<Arena> TaskArena;
  std::once_flag ArenaOnce;
};

/// Runs jobs one after another on a thread of its own, started by start()
/// or the first job. stop() (or destruction) finishes the running job,
/// drops the queued ones and joins; later jobs are ignored.
///
/// A process that forks (Python's multiprocessing, a data loader's
/// workers) waits for every queue's running job to finish first, so that
/// no compile is halfway through LLVM or holds a lock; the child, which
/// has none of its parent's threads, starts its own worker at its first
/// job (or drain()) and runs the jobs its parent had queued.
///
/// Where no thread can be made (no address space left for its stack), the
/// jobs are dropped: every job here is an upgrade the runtime can do
/// without, and nothing waits for what it would have made. A job that runs
/// out of memory (std::bad_alloc) ends so; the next job runs.
class BackgroundQueue {
public:
  BackgroundQueue();
  BackgroundQueue(const BackgroundQueue &) = delete;
  BackgroundQueue &operator=(const BackgroundQueue &) = delete;
  ~BackgroundQueue();

  void push(std::function<void()> Job);
  /// Starts the worker now rather than at the first job (whose caller
  /// would otherwise wait for the thread's creation).
  void start();
  void stop();
  /// Waits until no job is queued or running (or the queue stops).
  void drain();

private:
  void loop();
  /// Starts the worker if it has not started (under Mutex); where no
  /// thread can be made, drops the queued jobs and returns false.
  bool startWorker();
  /// pthread_atfork's handlers, over every queue of the process.
  static void beforeFork();
  static void afterForkInParent();
  static void afterForkInChild();
  std::mutex Mutex;
  std::condition_variable Wake, Idle;
  std::deque<std::function<void()>> Jobs;
  bool Stopping = false;
  bool Running = false;
  std::thread Worker;
};

} // namespace gatherjit

#endif
