//===- runtime/TieredCode.h - Code that moves up a tier while it runs ----===//
/// \file
/// The code every handle of one spec runs. It starts at one level (the
/// quick tier for a small kernel) and may be upgraded once, on the
/// runtime's background thread, while handles run it: calls already in
/// the first code finish there, later ones take the new code.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_TIEREDCODE_H
#define GATHERJIT_RUNTIME_TIEREDCODE_H

#include "compiler/backend/Executable.h"
#include "gatherjit/OptLevel.h"
#include "runtime/ThreadPool.h"

#include <atomic>
#include <functional>
#include <memory>

namespace gatherjit {

class TieredCode : public std::enable_shared_from_this<TieredCode> {
public:
  /// Recompiles at the runtime's level and calls upgrade() (on the
  /// background queue); on failure the first code keeps running.
  using Upgrader = std::function<void(TieredCode &)>;

  /// \p UpgradeAfter: runs before an upgrade is due; 0 for never.
  TieredCode(std::shared_ptr<const Executable> First, OptLevel Level, uint64_t UpgradeAfter,
             Upgrader Upgrade, std::weak_ptr<BackgroundQueue> Queue)
      : First(std::move(First)), Current(this->First.get()), Level(Level),
        UpgradeAfter(UpgradeAfter), Upgrade(std::move(Upgrade)), Queue(std::move(Queue)) {}

  const Executable &current() const { return *Current.load(std::memory_order_acquire); }
  OptLevel level() const { return Level.load(std::memory_order_acquire); }

  /// Counts one run; queues the upgrade on the run that makes it due.
  void countRun() {
    if (UpgradeAfter == 0)
      return;
    // Racing runs may lose counts: this only decides when to upgrade.
    const uint64_t N = Runs.load(std::memory_order_relaxed) + 1;
    Runs.store(N, std::memory_order_relaxed);
    if (N >= UpgradeAfter && !Due.load(std::memory_order_relaxed) &&
        !Due.exchange(true, std::memory_order_relaxed))
      requestUpgrade();
  }

  /// Switches every handle to \p Code. The first code stays loaded while
  /// this object lives.
  void upgrade(std::shared_ptr<const Executable> Code, OptLevel NewLevel) {
    Upgraded = std::move(Code);
    Current.store(Upgraded.get(), std::memory_order_release);
    Level.store(NewLevel, std::memory_order_release);
  }

private:
  void requestUpgrade();

  std::shared_ptr<const Executable> First, Upgraded;
  std::atomic<const Executable *> Current;
  std::atomic<OptLevel> Level;
  const uint64_t UpgradeAfter;
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
