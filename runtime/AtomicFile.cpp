//===- runtime/AtomicFile.cpp - Files that appear whole or not at all ----===//

#include "runtime/AtomicFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace gatherjit {

Expected<AtomicFile> AtomicFile::write(const std::string &Path,
                                       std::string_view Contents) {
  std::string Temp = Path + ".tmpXXXXXX";
  int Fd = mkstemp(Temp.data());
  if (Fd < 0)
    return Status::invalidArgument("cannot create a file beside '" + Path +
                                   "': " + std::strerror(errno));
  AtomicFile File(Path, Temp); // Removes the temporary file on any failure.
  size_t Done = 0;
  while (Done < Contents.size()) {
    ssize_t N = ::write(Fd, Contents.data() + Done, Contents.size() - Done);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0) {
      int Err = errno;
      ::close(Fd);
      return Status::invalidArgument("cannot write '" + Path + "': " +
                                     std::strerror(N == 0 ? EIO : Err));
    }
    Done += static_cast<size_t>(N);
  }
  // mkstemp creates 0600; give the file the usual permissions.
  mode_t Mask = umask(0);
  umask(Mask);
  fchmod(Fd, 0666 & ~Mask);
  if (::close(Fd) != 0)
    return Status::invalidArgument("cannot write '" + Path + "': " + std::strerror(errno));
  return File;
}

AtomicFile::AtomicFile(AtomicFile &&Other) noexcept
    : Path(std::move(Other.Path)), Temp(std::move(Other.Temp)) {
  Other.Temp.clear();
}

AtomicFile::~AtomicFile() {
  if (!Temp.empty())
    ::unlink(Temp.c_str());
}

Status AtomicFile::commit() {
  if (std::rename(Temp.c_str(), Path.c_str()) != 0)
    return Status::invalidArgument("cannot write '" + Path + "': " + std::strerror(errno));
  Temp.clear();
  return Status::ok();
}

Status writeFileAtomic(const std::string &Path, std::string_view Contents) {
  Expected<AtomicFile> File = AtomicFile::write(Path, Contents);
  if (!File)
    return File.status();
  return File->commit();
}

} // namespace gatherjit
