//===- runtime/AtomicFile.cpp - Files that appear whole or not at all ----===//

#include "runtime/AtomicFile.h"

#include "runtime/System.h"

#include <atomic>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

namespace gatherjit {
namespace {

//===----------------------------------------------------------------------===//
// Temporary files removed on a signal
//===----------------------------------------------------------------------===//

// Each live temporary file's path, for the signal handler: fixed slots of
// lock-free pointers, since a handler may neither lock nor allocate.
constexpr int MaxLiveTemps = 64;
std::atomic<char *> LiveTemps[MaxLiveTemps];

void rememberTemp(const std::string &Path) {
  char *Copy = strdup(Path.c_str());
  for (std::atomic<char *> &Slot : LiveTemps) {
    char *Empty = nullptr;
    if (Slot.compare_exchange_strong(Empty, Copy))
      return;
  }
  std::free(Copy); // More than 64 at once: a signal may leave this one.
}

void forgetTemp(const std::string &Path) {
  for (std::atomic<char *> &Slot : LiveTemps) {
    char *P = Slot.load();
    if (P && Path == P && Slot.compare_exchange_strong(P, nullptr)) {
      std::free(P);
      return;
    }
  }
}

extern "C" void removeTempsAndDie(int Signal) {
  for (std::atomic<char *> &Slot : LiveTemps)
    if (char *P = Slot.load())
      ::unlink(P);
  std::signal(Signal, SIG_DFL);
  std::raise(Signal);
}

//===----------------------------------------------------------------------===//
// Resolving the destination
//===----------------------------------------------------------------------===//

std::string dirName(const std::string &Path) {
  const size_t Slash = Path.find_last_of('/');
  if (Slash == std::string::npos)
    return ".";
  return Slash == 0 ? "/" : Path.substr(0, Slash);
}

std::string baseName(const std::string &Path) {
  const size_t Slash = Path.find_last_of('/');
  return Slash == std::string::npos ? Path : Path.substr(Slash + 1);
}

std::string inodeKey(const struct stat &St) {
  return "inode " + std::to_string(St.st_dev) + ":" + std::to_string(St.st_ino);
}

/// Where symbolic links from Path finally lead.
struct Destination {
  std::string Target;
  bool Exists = false;
  struct stat St {};
  /// A link into /proc (/dev/stdout, /dev/fd/N): the kernel resolves it to
  /// an open file, which may be a pipe or a deleted file with no path.
  bool ThroughProc = false;
};

Expected<Destination> resolve(const std::string &Path) {
  Destination D;
  D.Target = Path;
  for (int Hops = 0;; ++Hops) {
    if (::lstat(D.Target.c_str(), &D.St) != 0) {
      if (errno == ENOENT && Hops > 0)
        return Status::invalidArgument(quote(Path) + " is a dangling symbolic link to " +
                                       quote(D.Target));
      if (errno == ENOENT)
        return D;
      return fileError("cannot write", Path, errno);
    }
    if (!S_ISLNK(D.St.st_mode)) {
      D.Exists = true;
      return D;
    }
    if (Hops == 40)
      return Status::invalidArgument(quote(Path) + ": too many levels of symbolic links (a loop)");
    char Link[PATH_MAX];
    const ssize_t N = ::readlink(D.Target.c_str(), Link, sizeof(Link));
    if (N < 0 || N == sizeof(Link))
      return fileError("cannot follow the symbolic link", D.Target, N < 0 ? errno : ENAMETOOLONG);
    const std::string Next(Link, static_cast<size_t>(N));
    if (Next.rfind("/proc/", 0) == 0) {
      D.ThroughProc = true;
      return D;
    }
    const bool Relative = Next[0] != '/' && D.Target.find('/') != std::string::npos;
    D.Target = Relative ? dirName(D.Target) + "/" + Next : Next;
  }
}

std::string canonicalNew(const std::string &Target) {
  char Dir[PATH_MAX];
  if (!::realpath(dirName(Target).c_str(), Dir))
    return "path " + Target;
  return std::string("path ") + Dir + "/" + baseName(Target);
}

/// Creates a new file named like Dir/.gatherjit-XXXXXX.tmp; mode \p Mode
/// less the umask.
int createTemp(const std::string &Dir, mode_t Mode, std::string &Name) {
  static std::atomic<uint64_t> Counter{0};
  static const uint64_t Seed =
      std::random_device{}() ^ static_cast<uint64_t>(getpid()) << 32 ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  static constexpr char Digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
  for (int Try = 0; Try < 100; ++Try) {
    uint64_t R = Seed + 0x9e3779b97f4a7c15ull * ++Counter;
    R ^= R >> 31;
    R *= 0xbf58476d1ce4e5b9ull;
    R ^= R >> 29;
    std::string Suffix;
    for (int I = 0; I < 6; ++I, R /= 36)
      Suffix += Digits[R % 36];
    Name = Dir + "/.gatherjit-" + Suffix + ".tmp";
    const int Fd = ::open(Name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, Mode);
    if (Fd >= 0 || errno != EEXIST)
      return Fd;
  }
  errno = EEXIST;
  return -1;
}

} // namespace

Expected<AtomicFile> AtomicFile::create(const std::string &Path) {
  if (Path.empty())
    return Status::invalidArgument("an empty output path");
  // Standard output by name: dup it, whatever it is (a socket too).
  if (Path == "-" || Path == "/dev/stdout") {
    const int Fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 0);
    struct stat St;
    if (Fd < 0 || ::fstat(Fd, &St) != 0)
      return fileError("cannot write", Path, errno);
    return AtomicFile(Kind::Direct, Fd, Path, inodeKey(St));
  }
  Expected<Destination> D = resolve(Path);
  if (!D)
    return D.status();
  if (D->ThroughProc || (D->Exists && !S_ISREG(D->St.st_mode) && !S_ISDIR(D->St.st_mode))) {
    // Written into, never replaced. A regular file behind /proc is what a
    // shell redirected: append, as the shell's own offset would.
    const int Flags = O_WRONLY | O_NOCTTY | O_CLOEXEC | (D->ThroughProc ? O_APPEND : 0);
    const int Fd = ::open(D->ThroughProc ? Path.c_str() : D->Target.c_str(), Flags);
    struct stat St;
    if (Fd < 0 || ::fstat(Fd, &St) != 0)
      return fileError("cannot write", Path, errno);
    if (S_ISDIR(St.st_mode)) {
      ::close(Fd);
      return Status::invalidArgument(quote(Path) + " is a directory");
    }
    return AtomicFile(Kind::Direct, Fd, Path, inodeKey(St));
  }
  if (D->Exists && S_ISDIR(D->St.st_mode))
    return Status::invalidArgument(quote(Path) + " is a directory");
  if (D->Exists && D->St.st_nlink > 1) {
    // Replacing one name would split it from its other links.
    const int Fd = ::open(D->Target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (Fd < 0)
      return fileError("cannot write", Path, errno);
    return AtomicFile(Kind::InPlace, Fd, Path, inodeKey(D->St));
  }
  // A new file gets 0666 less the umask; a replaced one keeps its mode.
  return replaceWithTemp(Path, D->Target, D->Exists ? inodeKey(D->St) : canonicalNew(D->Target),
                         D->Exists ? D->St.st_mode & 07777 : 0666, D->Exists, /*Sync=*/true);
}

Expected<AtomicFile> AtomicFile::replace(const std::string &Path, unsigned Mode) {
  return replaceWithTemp(Path, Path, canonicalNew(Path), Mode, /*ExactMode=*/true,
                         /*Sync=*/false);
}

Expected<AtomicFile> AtomicFile::replaceWithTemp(const std::string &Path, const std::string &Target,
                                                 const std::string &Canonical, unsigned Mode,
                                                 bool ExactMode, bool Sync) {
  std::string Temp;
  const int Fd = createTemp(dirName(Target), static_cast<mode_t>(Mode), Temp);
  if (Fd < 0)
    return fileError("cannot create a file in", dirName(Target), errno);
  AtomicFile File(Kind::Replace, Fd, Path, Canonical);
  File.Target = Target;
  File.Temp = Temp;
  File.Sync = Sync;
  rememberTemp(Temp);
  // open() applied the umask; an exact mode is set past it.
  if (ExactMode && ::fchmod(Fd, static_cast<mode_t>(Mode)) != 0)
    return fileError("cannot set the mode of", Temp, errno);
  return File;
}

Expected<AtomicFile> AtomicFile::write(const std::string &Path, std::string_view Contents) {
  Expected<AtomicFile> File = create(Path);
  if (!File)
    return File;
  if (Status S = File->append(Contents); !S)
    return S;
  return File;
}

AtomicFile::AtomicFile(AtomicFile &&Other) noexcept
    : K(Other.K), Fd(Other.Fd), Path(std::move(Other.Path)), Target(std::move(Other.Target)),
      Temp(std::move(Other.Temp)), Canonical(std::move(Other.Canonical)), Written(Other.Written),
      Sync(Other.Sync) {
  Other.Fd = -1;
  Other.Temp.clear();
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (Fd >= 0)
    ::close(Fd);
  Fd = -1;
  if (!Temp.empty()) {
    ::unlink(Temp.c_str());
    forgetTemp(Temp);
    Temp.clear();
  }
}

Status AtomicFile::append(std::string_view Bytes) {
  assert(Fd >= 0 && "append after commit");
  size_t Done = 0;
  while (Done < Bytes.size()) {
    const ssize_t N = ::write(Fd, Bytes.data() + Done, Bytes.size() - Done);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0) {
      const int Err = N == 0 ? EIO : errno;
      discard();
      return fileError("cannot write", Path, Err);
    }
    Done += static_cast<size_t>(N);
  }
  Written += Bytes.size();
  return Status::ok();
}

Status AtomicFile::commit() {
  assert(Fd >= 0 && "commit twice");
  auto Fail = [&](const char *What, const std::string &Name) {
    const int Err = errno;
    discard();
    return fileError(What, Name, Err);
  };
  if (K == Kind::InPlace && ::ftruncate(Fd, static_cast<off_t>(Written)) != 0)
    return Fail("cannot write", Path);
  // Data reaches the disk before the name does: a crash leaves the old
  // file or the new one, never an empty one.
  if (K != Kind::Direct && Sync && ::fsync(Fd) != 0)
    return Fail("cannot write", Path);
  const int Closing = Fd;
  Fd = -1;
  if (::close(Closing) != 0)
    return Fail("cannot write", Path);
  if (K != Kind::Replace)
    return Status::ok();
  if (::rename(Temp.c_str(), Target.c_str()) != 0)
    return Fail("cannot write", Path);
  forgetTemp(Temp);
  Temp.clear();
  if (!Sync)
    return Status::ok();
  // Make the rename itself durable (best effort: some file systems refuse).
  const int Dir = ::open(dirName(Target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (Dir >= 0) {
    (void)::fsync(Dir);
    ::close(Dir);
  }
  return Status::ok();
}

bool AtomicFile::sameDestination(const AtomicFile &Other) const {
  return Canonical == Other.Canonical;
}

Status writeFileAtomic(const std::string &Path, std::string_view Contents) {
  Expected<AtomicFile> File = AtomicFile::write(Path, Contents);
  if (!File)
    return File.status();
  return File->commit();
}

void removeTemporariesOnSignals() {
  for (int Signal : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction Old;
    // A signal the caller ignores (nohup) stays ignored.
    if (::sigaction(Signal, nullptr, &Old) == 0 && Old.sa_handler == SIG_IGN)
      continue;
    struct sigaction New {};
    New.sa_handler = removeTempsAndDie;
    sigemptyset(&New.sa_mask);
    ::sigaction(Signal, &New, nullptr);
  }
}

} // namespace gatherjit
