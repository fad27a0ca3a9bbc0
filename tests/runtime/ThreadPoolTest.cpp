//===- tests/runtime/ThreadPoolTest.cpp - Splitting rows, background jobs ===//

#include "runtime/ThreadPool.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <new>
#include <set>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace gatherjit;

namespace {

TEST(ThreadPool, ChunksCoverEveryRowOnce) {
  ThreadPool Pool(4);
  for (uint64_t Rows : {uint64_t(1), uint64_t(3), uint64_t(1000), uint64_t(100003)}) {
    std::vector<std::atomic<int>> Seen(Rows);
    EXPECT_EQ(Pool.parallelMin(Rows,
                               [&](uint64_t Begin, uint64_t End) {
                                 EXPECT_LT(Begin, End);
                                 for (uint64_t R = Begin; R < End; ++R)
                                   ++Seen[R];
                                 return int64_t(0);
                               }),
              0);
    for (uint64_t R = 0; R < Rows; ++R)
      ASSERT_EQ(Seen[R].load(), 1) << "row " << R << " of " << Rows;
  }
}

TEST(ThreadPool, TheSmallestNonZeroResultWins) {
  ThreadPool Pool(4);
  // Each chunk reports 1 + the first "bad" row in it; rows 70,000 and
  // 90,000 are bad, so 70,001 is the answer whatever the chunking.
  const int64_t R = Pool.parallelMin(100000, [](uint64_t Begin, uint64_t End) -> int64_t {
    for (uint64_t Row : {uint64_t(70000), uint64_t(90000)})
      if (Row >= Begin && Row < End)
        return static_cast<int64_t>(Row) + 1;
    return 0;
  });
  EXPECT_EQ(R, 70001);
}

TEST(ThreadPool, OnlyLargeOutputsOrManyReadsFromLargeInputsAreSplit) {
  EXPECT_FALSE(ThreadPool(1).worthSplitting(1u << 30));
  EXPECT_FALSE(ThreadPool(4).worthSplitting((1u << 20) - 1));
  EXPECT_TRUE(ThreadPool(4).worthSplitting(1u << 20));
  // 24576 reads from 2 MiB or more, whatever the output.
  EXPECT_TRUE(ThreadPool(4).worthSplitting(4, 24576, 2u << 20));
  EXPECT_FALSE(ThreadPool(4).worthSplitting(4, 24575, 2u << 20));
  EXPECT_FALSE(ThreadPool(4).worthSplitting(4, 24576, (2u << 20) - 1));
  EXPECT_FALSE(ThreadPool(1).worthSplitting(4, 1u << 30, 1u << 30));
}

TEST(BackgroundQueue, RunsJobsInOrderOffTheCallersThread) {
  BackgroundQueue Q;
  std::mutex M;
  std::vector<int> Order;
  std::set<std::thread::id> Threads;
  std::promise<void> Done;
  for (int I = 0; I < 5; ++I)
    Q.push([&, I] {
      std::lock_guard<std::mutex> Lock(M);
      Order.push_back(I);
      Threads.insert(std::this_thread::get_id());
      if (I == 4)
        Done.set_value();
    });
  Done.get_future().wait();
  Q.stop();
  EXPECT_EQ(Order, (std::vector<int>{0, 1, 2, 3, 4}));
  ASSERT_EQ(Threads.size(), 1u);
  EXPECT_NE(*Threads.begin(), std::this_thread::get_id());
}

TEST(BackgroundQueue, AJobOutOfMemoryEndsAndTheNextRuns) {
  BackgroundQueue Q;
  std::promise<std::thread::id> Next;
  std::thread::id Failed;
  Q.push([&] {
    Failed = std::this_thread::get_id();
    throw std::bad_alloc();
  });
  Q.push([&] { Next.set_value(std::this_thread::get_id()); });
  // Without the queue's catch the process ends at the throw.
  EXPECT_EQ(Next.get_future().get(), Failed);
  Q.drain();
  Q.stop();
}

/// The threads of this process now.
size_t threadCount() {
  size_t N = 0;
  for ([[maybe_unused]] const auto &Entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++N;
  return N;
}

TEST(BackgroundQueue, StartMakesTheWorkerBeforeTheFirstJob) {
  const size_t Before = threadCount();
  BackgroundQueue Q;
  EXPECT_EQ(threadCount(), Before); // Lazily, by default.
  Q.start();
  EXPECT_EQ(threadCount(), Before + 1);
  std::thread::id Ran;
  std::promise<void> Done;
  Q.push([&] {
    Ran = std::this_thread::get_id();
    Done.set_value();
  });
  Done.get_future().wait();
  EXPECT_EQ(threadCount(), Before + 1); // The job ran on that worker.
  EXPECT_NE(Ran, std::this_thread::get_id());
  Q.stop();
  EXPECT_EQ(threadCount(), Before);
}

TEST(BackgroundQueue, StopDropsWhatHasNotStartedAndRefusesMore) {
  std::atomic<int> Ran{0};
  {
    BackgroundQueue Q;
    std::promise<void> Release;
    std::shared_future<void> Gate = Release.get_future().share();
    std::promise<void> Started;
    Q.push([&] {
      Started.set_value();
      Gate.wait();
      ++Ran;
    });
    Started.get_future().wait();
    for (int I = 0; I < 10; ++I)
      Q.push([&] { ++Ran; });
    // stop() drops the ten queued jobs at once, then waits for the running
    // one, released a while later.
    std::thread Stopper([&] { Q.stop(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    Release.set_value();
    Stopper.join();
    EXPECT_EQ(Ran.load(), 1);
    Q.push([&] { ++Ran; }); // After stop: never runs.
    EXPECT_EQ(Ran.load(), 1);
  }
}

TEST(ThreadPool, AForkedChildRunsItsRowsOnItsOwnThreadAndNeverWaits) {
  // Forks while another thread's rows run split: a child that used its
  // parent's oneTBB waited for a worker it does not have.
  ThreadPool Pool(2);
  auto Mark = [](std::vector<int> &Seen) {
    return [&Seen](uint64_t Begin, uint64_t End) {
      for (uint64_t R = Begin; R < End; ++R)
        Seen[R] = 1;
      return Begin <= 7000 && 7000 < End ? int64_t(7001) : int64_t(0);
    };
  };
  std::vector<int> Warm(100000);
  ASSERT_EQ(Pool.parallelMin(Warm.size(), Mark(Warm)), 7001);
  std::atomic<bool> Stop{false};
  std::thread Spinner([&] {
    std::vector<int> Seen(100000);
    while (!Stop)
      (void)Pool.parallelMin(Seen.size(), Mark(Seen));
  });
  int Failed = 0;
  for (int Trial = 0; Trial < 100; ++Trial) {
    const pid_t Child = fork();
    ASSERT_GE(Child, 0);
    if (Child == 0) {
      alarm(10); // A hang ends the child by SIGALRM.
      std::vector<int> Seen(100000), Fresh(100000);
      ThreadPool Own(2);
      const bool Right = Pool.parallelMin(Seen.size(), Mark(Seen)) == 7001 &&
                         Own.parallelMin(Fresh.size(), Mark(Fresh)) == 7001 &&
                         std::count(Seen.begin(), Seen.end(), 1) == 100000 &&
                         std::count(Fresh.begin(), Fresh.end(), 1) == 100000;
      _exit(Right ? 0 : 3);
    }
    int Status = 0;
    ASSERT_EQ(waitpid(Child, &Status, 0), Child);
    Failed += !(WIFEXITED(Status) && WEXITSTATUS(Status) == 0);
  }
  Stop = true;
  Spinner.join();
  EXPECT_EQ(Failed, 0) << "children hung or lost rows";
}

TEST(ThreadPool, WhereNoThreadCanBeMadeRowsRunOnTheCallerAndJobsAreDropped) {
#ifdef GATHERJIT_SANITIZED_HEAP
  GTEST_SKIP() << "an address-space limit starves the sanitizer's own allocator";
#else
  // A child whose address space has room for small allocations but not a
  // thread's stack: the queue neither throws nor leaves drain() waiting.
  const pid_t Child = fork();
  ASSERT_GE(Child, 0);
  if (Child == 0) {
    long Pages = 0;
    if (FILE *F = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(F, "%ld", &Pages) != 1)
        Pages = 0;
      std::fclose(F);
    }
    const rlim_t Limit = static_cast<rlim_t>(Pages) * sysconf(_SC_PAGESIZE) + (2 << 20);
    const rlimit AddressSpace = {Limit, Limit};
    // Stacks larger than any the process has cached, so that each thread
    // needs a new mapping.
    pthread_attr_t Large;
    pthread_attr_init(&Large);
    pthread_attr_setstacksize(&Large, 256u << 20);
    if (Pages <= 0 || pthread_setattr_default_np(&Large) != 0 ||
        setrlimit(RLIMIT_AS, &AddressSpace) != 0)
      _exit(77);
    pthread_t Probe;
    if (pthread_create(
            &Probe, nullptr, [](void *) -> void * { return nullptr; }, nullptr) == 0)
      _exit(77);
    try {
      // Split rows still all run, on this thread.
      ThreadPool Pool(2);
      std::vector<int> Seen(100000);
      const int64_t First = Pool.parallelMin(Seen.size(), [&](uint64_t Begin, uint64_t End) {
        for (uint64_t R = Begin; R < End; ++R)
          Seen[R] = 1;
        return Begin <= 70000 && 70000 < End ? int64_t(70001) : int64_t(0);
      });
      if (First != 70001 || std::count(Seen.begin(), Seen.end(), 1) != 100000)
        _exit(3);
      BackgroundQueue Q;
      std::atomic<int> Ran{0};
      Q.push([&] { ++Ran; });
      Q.drain();
      Q.push([&] { ++Ran; });
      Q.drain();
      _exit(Ran.load() == 0 ? 0 : 1);
    } catch (...) {
      _exit(2);
    }
  }
  int Status = 0;
  ASSERT_EQ(waitpid(Child, &Status, 0), Child);
  ASSERT_TRUE(WIFEXITED(Status)) << "the child ended by signal " << WTERMSIG(Status);
  if (WEXITSTATUS(Status) == 77)
    GTEST_SKIP() << "threads could still be made under the limit";
  EXPECT_NE(WEXITSTATUS(Status), 3) << "split rows went missing";
  EXPECT_NE(WEXITSTATUS(Status), 2) << "the pool or the queue threw";
  EXPECT_NE(WEXITSTATUS(Status), 1) << "a job ran without a thread to run it";
  EXPECT_EQ(WEXITSTATUS(Status), 0);
#endif
}

} // namespace
