//===- runtime/DiskCache.h - Compiled kernels kept across processes ------===//
/// \file
/// An opt-in directory of compiled kernel objects, so a new process links a
/// kernel without running the optimizer or the code generator. Each entry
/// is one file named after the hash of its key:
///
///   "GJKCACHE" | u32 version | u32 key bytes | u64 object bytes |
///   u64 hash64(key ++ object) | key | object
///
/// The key holds everything the machine code depends on: the compiler's
/// build (a hash of compiler/'s sources and LLVM's version, so a changed
/// emitter or pipeline never reuses a stale object), the host CPU, the
/// optimization levels, and the kernel's spec. None of it needs LLVM: the
/// command line finds and runs a cached kernel without loading the compiler
/// (runtime/CachedKernels.h). An entry whose header, key, length or checksum
/// does not match is ignored and rewritten, never linked. Entries are
/// written to a temporary file and renamed, so concurrent writers leave
/// one whole entry.
///
/// The checksum catches accidents, not intent: whoever can write the
/// directory runs code in every process that uses it. So, as ssh and ccache
/// treat their files, the directory (created 0700) and every entry must be
/// owned by the current user and not writable by group or others, and only
/// regular files of a sane size are read. Anything else is refused with one
/// warning line on stderr, and kernels are compiled in memory.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_DISKCACHE_H
#define GATHERJIT_RUNTIME_DISKCACHE_H

#include "compiler/pipeline/Pipeline.h"
#include "gatherjit/Status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatherjit {

/// The key lines every kernel of a runtime at \p RuntimeLevel shares; for
/// a device runtime, whose kernels are PTX, also \p DeviceTarget, the
/// target they are generated for ("nvptx64-nvidia-cuda sm_90 +ptx78").
std::string cacheEnvironment(OptLevel RuntimeLevel, const std::string &DeviceTarget = "");

class DiskCache : public ObjectCache {
public:
  /// Opens (creating it 0700 if needed) the cache in \p Dir. \p
  /// Environment: the key lines shared by every kernel of one runtime.
  /// std::nullopt, after one warning line, if the directory cannot be
  /// created or is not safely the current user's.
  /// \p Limit: bytes of entries kept (0: no limit); see trim().
  /// \p Quiet: warn about nothing (the caller hands a failure to a program
  /// that opens the cache again and warns).
  static std::optional<DiskCache> open(std::string Dir, std::string Environment, uint64_t Limit = 0,
                                       bool Quiet = false);
  DiskCache(DiskCache &&) = default;
  DiskCache &operator=(DiskCache &&) = default;

  /// The full key of one kernel: the environment plus its spec and level.
  std::string key(const KernelSpec &Spec, OptLevel Level) const override;
  /// The entry's path for \p Key.
  std::string path(const std::string &Key) const;

  /// The object stored under \p Key, or std::nullopt if there is no valid
  /// entry (missing, truncated, corrupted, written for another key, or not
  /// a regular file of the current user's).
  std::optional<std::vector<char>> load(const std::string &Key) const override;
  /// Stores \p Object under \p Key (mode 0600), then trims the directory
  /// if the entries' bytes, as the stamp file LastTrimName counts them,
  /// pass the limit, or if no process has trimmed in the last hour. A
  /// failure is warned about once; the kernel runs all the same.
  Status store(const std::string &Key, const std::vector<char> &Object) const override;
  /// Past the limit, removes the least recently used entries (a load marks
  /// an entry used) down to 90% of it; also removes temporary files that a
  /// killed process left over an hour ago. Returns the entries' bytes left.
  uint64_t trim() const;
  static constexpr const char *LastTrimName = "last-trim";

private:
  /// Adds \p StoredBytes to the stamp's count and trims if it is due.
  void account(uint64_t StoredBytes) const;

public:
  /// The largest entry read.
  static constexpr uint64_t MaxEntryBytes = 64u << 20;

  /// Encodes or decodes one entry file (exposed for tests).
  static std::string encode(const std::string &Key, const std::vector<char> &Object);
  static std::optional<std::vector<char>> decode(std::string_view File, const std::string &Key);

private:
  DiskCache(std::string Dir, std::string Environment, uint64_t Limit)
      : Dir(std::move(Dir)), Environment(std::move(Environment)), Limit(Limit) {}
  /// Prints "warning: ..." the first time only.
  void warnOnce(const std::string &Message) const;

  std::string Dir, Environment;
  uint64_t Limit;
  mutable bool Warned = false; ///< The runtime serializes loads and stores.
};

} // namespace gatherjit

#endif
