//===- runtime/DiskCache.cpp - Compiled kernels kept across processes ----===//

#include "runtime/DiskCache.h"

#include "runtime/AtomicFile.h"
#include "runtime/System.h"

#include "gatherjit/CompilerId.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gatherjit {
namespace {

constexpr char Magic[8] = {'G', 'J', 'K', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t Version = 2;
constexpr size_t HeaderBytes = 8 + 4 + 4 + 8 + 8;

template <typename T> void put(std::string &Out, T Value) {
  char Bytes[sizeof(T)];
  std::memcpy(Bytes, &Value, sizeof(T));
  Out.append(Bytes, sizeof(T));
}

template <typename T> T get(std::string_view In, size_t At) {
  T Value;
  std::memcpy(&Value, In.data() + At, sizeof(T));
  return Value;
}

uint64_t checksum(std::string_view KeyAndObject) { return hash64(KeyAndObject); }

} // namespace

std::string cacheEnvironment(OptLevel RuntimeLevel, const std::string &DeviceTarget) {
  return std::string("gatherjit kernel cache\ncompiler " GATHERJIT_COMPILER_ID "\nhost ") +
         hostCpuId() + "\nopt " + optLevelName(RuntimeLevel) + "\n" +
         (DeviceTarget.empty() ? "" : "device " + DeviceTarget + "\n");
}

std::string DiskCache::key(const KernelSpec &Spec, OptLevel Level) const {
  return Environment + "spec " + Spec.describe() + "\nlevel " + optLevelName(Level) + "\n";
}

std::string DiskCache::path(const std::string &Key) const {
  char Name[32];
  std::snprintf(Name, sizeof(Name), "%016llx.gjk", static_cast<unsigned long long>(hash64(Key)));
  return Dir + "/" + Name;
}

std::string DiskCache::encode(const std::string &Key, const std::vector<char> &Object) {
  std::string Body = Key;
  Body.append(Object.data(), Object.size());
  std::string File(Magic, sizeof(Magic));
  put<uint32_t>(File, Version);
  put<uint32_t>(File, static_cast<uint32_t>(Key.size()));
  put<uint64_t>(File, Object.size());
  put<uint64_t>(File, checksum(Body));
  return File + Body;
}

std::optional<std::vector<char>> DiskCache::decode(std::string_view File, const std::string &Key) {
  if (File.size() < HeaderBytes || std::memcmp(File.data(), Magic, sizeof(Magic)) != 0 ||
      get<uint32_t>(File, 8) != Version)
    return std::nullopt;
  const uint64_t KeyBytes = get<uint32_t>(File, 12);
  const uint64_t ObjectBytes = get<uint64_t>(File, 16);
  if (KeyBytes != Key.size() || ObjectBytes > File.size() ||
      File.size() - HeaderBytes != KeyBytes + ObjectBytes)
    return std::nullopt;
  std::string_view Body = File.substr(HeaderBytes);
  if (Body.substr(0, KeyBytes) != Key || checksum(Body) != get<uint64_t>(File, 24))
    return std::nullopt;
  std::string_view Object = Body.substr(KeyBytes);
  return std::vector<char>(Object.begin(), Object.end());
}

namespace {

/// Why \p St may not be trusted as the current user's, or nullptr.
const char *untrusted(const struct stat &St) {
  if (St.st_uid != geteuid())
    return "is owned by another user";
  if (St.st_mode & (S_IWGRP | S_IWOTH))
    return "is writable by group or others";
  return nullptr;
}

} // namespace

std::optional<DiskCache> DiskCache::open(std::string Dir, std::string Environment, uint64_t Limit,
                                         bool Quiet) {
  DiskCache Cache(std::move(Dir), std::move(Environment), Limit);
  Cache.Warned = Quiet;
  auto Refuse = [&](const std::string &Why) -> std::optional<DiskCache> {
    Cache.warnOnce("not using the kernel cache " + quote(Cache.Dir) + ": it " + Why +
                   "; kernels are compiled in memory");
    return std::nullopt;
  };
  if (std::string Error = makeDirectories(Cache.Dir, 0700); !Error.empty())
    return Refuse("cannot be created (" + Error + ")");
  struct stat St;
  if (::stat(Cache.Dir.c_str(), &St) != 0)
    return Refuse(std::string("cannot be read (") + std::strerror(errno) + ")");
  if (!S_ISDIR(St.st_mode))
    return Refuse("is not a directory");
  if (const char *Why = untrusted(St))
    return Refuse(Why);
  return Cache;
}

void DiskCache::warnOnce(const std::string &Message) const {
  if (Warned)
    return;
  Warned = true;
  std::fprintf(stderr, "warning: gatherjit: %s\n", Message.c_str());
}

std::optional<std::vector<char>> DiskCache::load(const std::string &Key) const {
  const std::string Path = path(Key);
  // No links, no devices, no FIFOs (O_NONBLOCK: opening one never waits).
  const int Fd = ::open(Path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (Fd < 0) {
    if (errno != ENOENT)
      warnOnce("ignoring the kernel cache entry " + quote(Path) + ": " + std::strerror(errno));
    return std::nullopt;
  }
  struct stat St;
  std::string Contents;
  const char *Why = nullptr;
  if (::fstat(Fd, &St) != 0 || !S_ISREG(St.st_mode))
    Why = "is not a regular file";
  else if (const char *Untrusted = untrusted(St))
    Why = Untrusted;
  else if (static_cast<uint64_t>(St.st_size) > MaxEntryBytes)
    Why = "is larger than any kernel";
  if (!Why) {
    ::futimens(Fd, nullptr); // Used now: trim() keeps it longer.
    Contents.resize(static_cast<size_t>(St.st_size));
    uint64_t Done = 0;
    if (!readUpTo(Fd, Contents.data(), Contents.size(), Done, Path))
      Done = 0;
    Contents.resize(Done); // A short or failed read fails decoding.
  }
  ::close(Fd);
  if (Why) {
    warnOnce("ignoring the kernel cache entry " + quote(Path) + ": it " + Why);
    return std::nullopt;
  }
  return decode(Contents, Key);
}

Status DiskCache::store(const std::string &Key, const std::vector<char> &Object) const {
  // 0600 whatever the umask; no sync: a torn entry fails its checksum.
  Expected<AtomicFile> File = AtomicFile::replace(path(Key), 0600);
  const auto Entry = encode(Key, Object);
  Status S = File ? File->append(Entry) : File.status();
  if (S)
    S = File->commit();
  if (!S) {
    warnOnce("cannot store a kernel in the cache: " + S.message());
    return S;
  }
  account(Entry.size());
  return S;
}

void DiskCache::account(uint64_t StoredBytes) const {
  // The stamp holds "TOTAL TIME": the entries' bytes as the last trim
  // counted them plus every store since, and when that trim ran. A store
  // past the limit trims at once, so the directory never stays above it; a
  // scan (which costs more than a compile in a full cache) runs only then,
  // or hourly to sweep up what killed processes left. The stamp is locked
  // while it is read and rewritten, so concurrent stores count each other.
  const std::string Stamp = Dir + "/" + LastTrimName;
  const int Fd = ::open(Stamp.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (Fd < 0) {
    trim();
    return;
  }
  ::flock(Fd, LOCK_EX);
  char Text[64] = {};
  unsigned long long Total = 0;
  long long Trimmed = 0;
  const ssize_t N = ::pread(Fd, Text, sizeof(Text) - 1, 0);
  const bool Known = N > 0 && std::sscanf(Text, "%llu %lld", &Total, &Trimmed) == 2;
  const time_t Now = ::time(nullptr);
  Total += StoredBytes;
  if (!Known || Now - Trimmed > 3600 || (Limit != 0 && Total > Limit)) {
    Total = trim();
    Trimmed = Now;
  }
  const int Len =
      std::snprintf(Text, sizeof(Text), "%llu %lld\n", Total, static_cast<long long>(Trimmed));
  if (::ftruncate(Fd, 0) == 0 && ::pwrite(Fd, Text, static_cast<size_t>(Len), 0) != Len)
    (void)::ftruncate(Fd, 0); // A torn stamp is read as none: the next store scans.
  ::close(Fd);                // Releases the lock.
}

uint64_t DiskCache::trim() const {
  DIR *D = ::opendir(Dir.c_str());
  if (!D)
    return 0;
  struct Entry {
    struct timespec Used;
    std::string Path;
    uint64_t Bytes;
  };
  std::vector<Entry> Entries;
  uint64_t Total = 0;
  const time_t Now = ::time(nullptr);
  while (const struct dirent *E = ::readdir(D)) {
    const std::string Name = E->d_name;
    const bool IsEntry = Name.size() > 4 && Name.compare(Name.size() - 4, 4, ".gjk") == 0;
    const bool IsTemp = Name.rfind(".gatherjit-", 0) == 0;
    struct stat St;
    if ((!IsEntry && !IsTemp) || ::fstatat(::dirfd(D), E->d_name, &St, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (IsTemp) {
      if (Now - St.st_mtime > 3600)
        ::unlinkat(::dirfd(D), E->d_name, 0);
      continue;
    }
    Entries.push_back({St.st_mtim, Dir + "/" + Name, static_cast<uint64_t>(St.st_size)});
    Total += static_cast<uint64_t>(St.st_size);
  }
  ::closedir(D);
  if (Limit == 0 || Total <= Limit)
    return Total;
  std::sort(Entries.begin(), Entries.end(), [](const Entry &A, const Entry &B) {
    return A.Used.tv_sec != B.Used.tv_sec ? A.Used.tv_sec < B.Used.tv_sec
                                          : A.Used.tv_nsec < B.Used.tv_nsec;
  });
  // Down to 90%, so that the next stores do not trim again at once.
  for (const Entry &E : Entries) {
    if (Total <= Limit / 10 * 9)
      break;
    if (::unlink(E.Path.c_str()) == 0)
      Total -= E.Bytes;
  }
  return Total;
}

} // namespace gatherjit
