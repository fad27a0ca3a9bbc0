//===- runtime/TieredCode.h - Code that moves up tiers while it runs -----===//
/// \file
/// The code every handle of one spec runs. It starts at one tier (the
/// generic loop for a new shape, or compiled code: the quick tier for a
/// small kernel) and moves up, on the runtime's background thread, while
/// handles run it: calls already in the older code finish there, later
/// ones take the new code. Older code stays loaded while this object lives.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_TIEREDCODE_H
#define GATHERJIT_RUNTIME_TIEREDCODE_H

#include "compiler/backend/Executable.h"
#include "gatherjit/OptLevel.h"
#include "gatherjit/Runtime.h"
#include "runtime/ThreadPool.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace gatherjit {

class TieredCode : public std::enable_shared_from_this<TieredCode> {
public:
  /// Compiles the next tier and calls upgrade() (on the background queue);
  /// on failure the current code keeps running.
  using Upgrader = std::function<void(TieredCode &)>;

  /// \p UpgradeAfter: runs before the next tier is due; 0 for never.
  TieredCode(std::shared_ptr<const Executable> First, KernelTier Tier, OptLevel Level,
             uint64_t UpgradeAfter, Upgrader Upgrade, std::weak_ptr<BackgroundQueue> Queue)
      : Current(First.get()), Tier(Tier), Level(Level), UpgradeAfter(UpgradeAfter),
        Upgrade(std::move(Upgrade)), Queue(std::move(Queue)) {
    Codes.push_back(std::move(First));
  }

  const Executable &current() const { return *Current.load(std::memory_order_acquire); }
  KernelTier tier() const { return Tier.load(std::memory_order_acquire); }
  OptLevel level() const { return Level.load(std::memory_order_acquire); }

  /// Counts one run; queues the upgrade on the run that makes it due.
  void countRun() {
    const uint64_t After = UpgradeAfter.load(std::memory_order_relaxed);
    if (After == 0)
      return;
    // Racing runs may lose counts: this only decides when to upgrade.
    const uint64_t N = Runs.load(std::memory_order_relaxed) + 1;
    Runs.store(N, std::memory_order_relaxed);
    if (N >= After && !Due.load(std::memory_order_relaxed) &&
        !Due.exchange(true, std::memory_order_relaxed))
      requestUpgrade();
  }

  /// Switches every handle to \p Code, of \p NewTier at \p NewLevel; the
  /// tier after it is due after \p NextAfter runs (0: none). Called by the
  /// upgrader alone, one at a time.
  void upgrade(std::shared_ptr<const Executable> Code, KernelTier NewTier, OptLevel NewLevel,
               uint64_t NextAfter) {
    {
      std::lock_guard<std::mutex> Lock(CodesMutex);
      Codes.push_back(Code);
    }
    Current.store(Code.get(), std::memory_order_release);
    Tier.store(NewTier, std::memory_order_release);
    Level.store(NewLevel, std::memory_order_release);
    Runs.store(0, std::memory_order_relaxed);
    UpgradeAfter.store(NextAfter, std::memory_order_relaxed);
    Due.store(false, std::memory_order_release);
  }

  /// Executable::finishLaunches over every code this object has run, the
  /// oldest first: launches made before an upgrade wait in the code they
  /// were launched by. The first bad index found is the one returned.
  int64_t finishLaunches(const void **Indices) const {
    std::lock_guard<std::mutex> Lock(CodesMutex);
    int64_t First = 0;
    for (const std::shared_ptr<const Executable> &Code : Codes) {
      const void *Found = nullptr;
      const int64_t R = Code->finishLaunches(&Found);
      if (R && !First) {
        First = R;
        *Indices = Found;
      }
    }
    return First;
  }

private:
  void requestUpgrade();

  /// Every code this object has run; the last is current.
  mutable std::mutex CodesMutex;
  std::vector<std::shared_ptr<const Executable>> Codes;
  std::atomic<const Executable *> Current;
  std::atomic<KernelTier> Tier;
  std::atomic<OptLevel> Level;
  std::atomic<uint64_t> UpgradeAfter;
  std::atomic<uint64_t> Runs{0};
  std::atomic<bool> Due{false};
  /// Run only by the queue's jobs, which the runtime stops before it goes.
  const Upgrader Upgrade;
  const std::weak_ptr<BackgroundQueue> Queue;
};

inline void TieredCode::requestUpgrade() {
  if (std::shared_ptr<BackgroundQueue> Q = Queue.lock())
    Q->push([Weak = weak_from_this()] {
      if (std::shared_ptr<TieredCode> Code = Weak.lock())
        Code->Upgrade(*Code);
    });
}

} // namespace gatherjit

#endif
