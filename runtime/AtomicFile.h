//===- runtime/AtomicFile.h - Files that appear whole or not at all ------===//
/// \file
/// Every file gatherjit writes (command-line outputs, AOT objects and
/// headers, persistent-cache entries) is written to a temporary file beside
/// its destination and renamed into place, so a reader never sees a partial
/// file and a failure leaves an existing file untouched.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_ATOMICFILE_H
#define GATHERJIT_RUNTIME_ATOMICFILE_H

#include "gatherjit/Status.h"

#include <string>
#include <string_view>

namespace gatherjit {

/// A file written beside \p Path, moved into place by commit(). Destroyed
/// uncommitted, it leaves nothing behind.
class AtomicFile {
public:
  static Expected<AtomicFile> write(const std::string &Path, std::string_view Contents);
  AtomicFile(AtomicFile &&Other) noexcept;
  AtomicFile &operator=(AtomicFile &&) = delete;
  ~AtomicFile();

  /// Renames the temporary file to its destination.
  Status commit();

private:
  AtomicFile(std::string Path, std::string Temp)
      : Path(std::move(Path)), Temp(std::move(Temp)) {}
  std::string Path, Temp; ///< Temp is empty once committed or moved from.
};

/// Writes \p Contents to \p Path atomically.
Status writeFileAtomic(const std::string &Path, std::string_view Contents);

} // namespace gatherjit

#endif
