//===- runtime/ThreadPool.cpp - Splitting a kernel's rows across cores ---===//

#include "runtime/ThreadPool.h"

#include <tbb/blocked_range.h>
#include <tbb/info.h>
#include <tbb/parallel_reduce.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <exception>
#include <new>
#include <pthread.h>
#include <sched.h>
#include <set>
#include <system_error>
#include <thread>

namespace gatherjit {

struct ThreadPool::Arena {
  explicit Arena(int Threads) : A(Threads) {}
  tbb::task_arena A;
};

namespace {

/// The CPUs this process may run on, as oneTBB counts them (its default
/// concurrency), without starting oneTBB.
unsigned allowedCpus() {
  cpu_set_t Set;
  if (sched_getaffinity(0, sizeof(Set), &Set) == 0 && CPU_COUNT(&Set) > 0)
    return static_cast<unsigned>(CPU_COUNT(&Set));
  return std::max(1u, std::thread::hardware_concurrency());
}

/// Whether this process is a forked child of one that had started oneTBB.
/// A child's oneTBB is its parent's state without its parent's worker
/// threads, and may hold a lock one of them held at the fork: a child that
/// used it could wait forever for a worker.
std::atomic<bool> TbbInherited{false};

/// Called as this process starts oneTBB: its children will inherit it.
void startingTbb() {
  static std::once_flag Handler;
  std::call_once(Handler,
                 [] { pthread_atfork(nullptr, nullptr, [] { TbbInherited.store(true); }); });
}

} // namespace

ThreadPool::ThreadPool(unsigned Requested)
    // More threads than oneTBB may run only makes it print a warning into
    // the host's stderr: the count is clamped to what the process may use.
    : Threads(std::min(Requested ? Requested : UINT_MAX, allowedCpus())) {}

ThreadPool::~ThreadPool() {
  if (TbbInherited.load())
    (void)TaskArena.release(); // Its parent's: destroying it would wait on its workers.
}

int64_t ThreadPool::parallelMin(uint64_t Rows,
                                const std::function<int64_t(uint64_t, uint64_t)> &Fn) {
  if (Threads <= 1 || TbbInherited.load(std::memory_order_relaxed))
    return Fn(0, Rows); // (A forked child's rows, on its one thread.)
  std::call_once(ArenaOnce, [this] {
    startingTbb();
    TaskArena = std::make_unique<Arena>(static_cast<int>(
        std::min<unsigned>(Threads, std::max(1, tbb::info::default_concurrency()))));
  });
  // A few chunks per thread balance load without much scheduling.
  const uint64_t Grain = std::max<uint64_t>(1, Rows / (4 * Threads));
  auto Combine = [](int64_t A, int64_t B) {
    if (A == 0)
      return B;
    if (B == 0)
      return A;
    return std::min(A, B);
  };
  int64_t Result = 0;
  try {
    TaskArena->A.execute([&] {
      Result = tbb::parallel_reduce(
          tbb::blocked_range<uint64_t>(0, Rows, Grain), int64_t(0),
          [&](const tbb::blocked_range<uint64_t> &R, int64_t Acc) {
            return Combine(Acc, Fn(R.begin(), R.end()));
          },
          Combine);
    });
  } catch (const std::exception &) {
    // oneTBB could not start a worker (no memory for its stack, say): every
    // row on this thread, where the chunks that ran write the same bytes
    // again.
    return Fn(0, Rows);
  }
  return Result;
}

namespace {

/// Every live queue, for the fork handlers; never destroyed (a queue may
/// outlive static destruction).
std::mutex &queuesMutex() {
  static auto *M = new std::mutex;
  return *M;
}
std::set<BackgroundQueue *> &queues() {
  static auto *S = new std::set<BackgroundQueue *>;
  return *S;
}

} // namespace

BackgroundQueue::BackgroundQueue() {
  static std::once_flag Handlers;
  std::call_once(Handlers, [] {
    pthread_atfork(&BackgroundQueue::beforeFork, &BackgroundQueue::afterForkInParent,
                   &BackgroundQueue::afterForkInChild);
  });
  std::lock_guard<std::mutex> Lock(queuesMutex());
  queues().insert(this);
}

BackgroundQueue::~BackgroundQueue() {
  stop();
  std::lock_guard<std::mutex> Lock(queuesMutex());
  queues().erase(this);
}

void BackgroundQueue::beforeFork() {
  // Held through the fork: no queue comes or goes, and no job runs (the
  // running one finishes first; a worker then waits for its next job).
  queuesMutex().lock();
  for (BackgroundQueue *Q : queues()) {
    std::unique_lock<std::mutex> Lock(Q->Mutex);
    Q->Idle.wait(Lock, [Q] { return !Q->Running; });
    Lock.release();
  }
}

void BackgroundQueue::afterForkInParent() {
  for (BackgroundQueue *Q : queues())
    Q->Mutex.unlock();
  queuesMutex().unlock();
}

void BackgroundQueue::afterForkInChild() {
  // The child's only thread is the one that forked: each worker, and any
  // waiter the condition variables counted, is gone. Fresh ones; the
  // stale thread handle is dropped without a join (std::thread's
  // destructor would terminate on a joinable one).
  for (BackgroundQueue *Q : queues()) {
    new (&Q->Worker) std::thread();
    new (&Q->Wake) std::condition_variable();
    new (&Q->Idle) std::condition_variable();
    new (&Q->Mutex) std::mutex();
  }
  new (&queuesMutex()) std::mutex();
}

void BackgroundQueue::push(std::function<void()> Job) {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (Stopping)
    return;
  Jobs.push_back(std::move(Job));
  if (!startWorker())
    return;
  Wake.notify_one();
}

void BackgroundQueue::start() {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (!Stopping)
    startWorker();
}

bool BackgroundQueue::startWorker() {
  if (Worker.joinable())
    return true;
  try {
    Worker = std::thread([this] { loop(); });
    return true;
  } catch (const std::system_error &) {
    Jobs.clear(); // Nothing can run them; nobody waits for them.
    return false;
  }
}

void BackgroundQueue::stop() {
  {
    std::lock_guard<std::mutex> Lock(Mutex);
    Stopping = true;
    Jobs.clear();
  }
  Wake.notify_one();
  Idle.notify_all();
  if (!Worker.joinable())
    return;
  if (Worker.get_id() == std::this_thread::get_id())
    Worker.detach(); // A job stopping its own queue: it returns next.
  else
    Worker.join();
}

void BackgroundQueue::loop() {
  for (;;) {
    std::function<void()> Job;
    {
      std::unique_lock<std::mutex> Lock(Mutex);
      Wake.wait(Lock, [this] { return Stopping || !Jobs.empty(); });
      if (Stopping)
        return;
      Job = std::move(Jobs.front());
      Jobs.pop_front();
      Running = true;
    }
    try {
      Job();
    } catch (const std::bad_alloc &) {
      // Memory ran out in the job (in LLVM, say): what it would have made
      // is dropped, as where no thread can be made, and the queue runs on.
    }
    {
      std::lock_guard<std::mutex> Lock(Mutex);
      Running = false;
    }
    Idle.notify_all();
  }
}

void BackgroundQueue::drain() {
  std::unique_lock<std::mutex> Lock(Mutex);
  if (!Stopping && !Jobs.empty())
    startWorker(); // A forked child's first wait for what its parent queued.
  Idle.wait(Lock, [this] { return Stopping || (Jobs.empty() && !Running); });
}

} // namespace gatherjit
