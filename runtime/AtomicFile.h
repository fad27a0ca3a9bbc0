//===- runtime/AtomicFile.h - Files that appear whole or not at all ------===//
/// \file
/// Every file gatherjit writes (command-line outputs, AOT objects and
/// headers, benchmark results, persistent-cache entries) goes through
/// AtomicFile, which never destroys what the user points at:
///
/// - "-" is standard output.
/// - An existing destination that is not a regular file (a character device
///   such as /dev/null, a FIFO, /dev/stdout) is written straight into; it
///   is never replaced, renamed or removed.
/// - A symbolic link is followed: the file it finally names is replaced, so
///   the link stays a link. A dangling link, a loop or a directory is an
///   error.
/// - A regular file with several hard links is written in place, so every
///   name still sees the same file.
/// - Otherwise the bytes go to a temporary file beside the destination,
///   named ".gatherjit-XXXXXX.tmp" (it fits any legal destination name),
///   synced to disk, given the mode of the file it replaces, and renamed
///   over it by commit(). A failure or an uncommitted destruction removes
///   it, and so does SIGINT, SIGTERM or SIGHUP once
///   removeTemporariesOnSignals() has been called. Only SIGKILL or a crash
///   leaves one behind: `find DIR -name '.gatherjit-*.tmp' -delete`.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_ATOMICFILE_H
#define GATHERJIT_RUNTIME_ATOMICFILE_H

#include "gatherjit/Status.h"

#include <optional>
#include <string>
#include <string_view>

namespace gatherjit {

class AtomicFile {
public:
  /// Opens \p Path, a destination the user named, for writing as
  /// described above. InvalidArgument for a destination that cannot be one
  /// (a directory, a dangling link); IoError when the system refuses.
  static Expected<AtomicFile> create(const std::string &Path);
  /// Opens \p Path, a name in a directory gatherjit owns (a cache entry),
  /// for writing: whatever the name holds (a link, a FIFO) is replaced by a
  /// new file of exactly \p Mode. Not synced: such files are checked when
  /// read.
  static Expected<AtomicFile> replace(const std::string &Path, unsigned Mode);
  /// create() followed by append(Contents).
  static Expected<AtomicFile> write(const std::string &Path, std::string_view Contents);
  AtomicFile(AtomicFile &&Other) noexcept;
  AtomicFile &operator=(AtomicFile &&) = delete;
  ~AtomicFile();

  Status append(std::string_view Bytes);
  /// Makes the bytes the destination's: syncs and renames a temporary file.
  Status commit();

  /// True if both write the same destination (after following links).
  bool sameDestination(const AtomicFile &Other) const;

private:
  enum class Kind {
    Replace, ///< A temporary file renamed over the destination.
    InPlace, ///< A regular file with several links, rewritten.
    Direct,  ///< A device, FIFO or standard output, written into.
  };
  AtomicFile(Kind K, int Fd, std::string Path, std::string Canonical)
      : K(K), Fd(Fd), Path(std::move(Path)), Canonical(std::move(Canonical)) {}
  /// Closes the file and removes a temporary one.
  void discard();
  /// A temporary file beside \p Target, renamed over it by commit().
  static Expected<AtomicFile> replaceWithTemp(const std::string &Path, const std::string &Target,
                                              const std::string &Canonical, unsigned Mode,
                                              bool ExactMode, bool Sync);

  Kind K;
  int Fd;                ///< -1 once committed or discarded.
  std::string Path;      ///< As the user named it, for messages.
  std::string Target;    ///< The file finally written (Replace).
  std::string Temp;      ///< The temporary file (Replace), until committed.
  std::string Canonical; ///< Equal for equal destinations.
  uint64_t Written = 0;
  bool Sync = true;
};

/// Writes \p Contents to \p Path atomically.
Status writeFileAtomic(const std::string &Path, std::string_view Contents);

/// Installs handlers for SIGINT, SIGTERM and SIGHUP that remove the
/// temporary files of unfinished AtomicFiles, then die of the signal as
/// before. For programs (the command line); a library leaves signals alone.
void removeTemporariesOnSignals();

} // namespace gatherjit

#endif
