//===- runtime/DiskCache.h - Compiled kernels kept across processes ------===//
/// \file
/// An opt-in directory of compiled kernel objects, so a new process links a
/// kernel without running the optimizer or the code generator. Each entry
/// is one file named after the hash of its key:
///
///   "GJKCACHE" | u32 version | u32 key bytes | u64 object bytes |
///   u64 xxh3(key ++ object) | key | object
///
/// The key holds everything the machine code depends on: the LLVM version,
/// target triple, CPU and features, optimization level and pass pipeline,
/// and a hash of the kernel's unoptimized IR (so a changed emitter never
/// reuses a stale object). An entry whose header, key, length or checksum
/// does not match is ignored and rewritten, never linked. Entries are
/// written to a temporary file and renamed, so concurrent writers leave
/// one whole entry.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_DISKCACHE_H
#define GATHERJIT_RUNTIME_DISKCACHE_H

#include "gatherjit/Status.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gatherjit {

class DiskCache {
public:
  /// \p Environment: the key lines shared by every kernel of one runtime.
  DiskCache(std::string Dir, std::string Environment)
      : Dir(std::move(Dir)), Environment(std::move(Environment)) {}

  /// The full key of one kernel: the environment plus its own lines.
  std::string key(std::string_view KernelLines) const;
  /// The entry's path for \p Key.
  std::string path(const std::string &Key) const;

  /// The object stored under \p Key, or std::nullopt if there is no valid
  /// entry (missing, truncated, corrupted or written for another key).
  std::optional<std::vector<char>> load(const std::string &Key) const;
  /// Stores \p Object under \p Key, creating the directory if needed.
  Status store(const std::string &Key, const std::vector<char> &Object) const;

  /// Encodes or decodes one entry file (exposed for tests).
  static std::string encode(const std::string &Key, const std::vector<char> &Object);
  static std::optional<std::vector<char>> decode(std::string_view File,
                                                 const std::string &Key);

private:
  std::string Dir, Environment;
};

} // namespace gatherjit

#endif
