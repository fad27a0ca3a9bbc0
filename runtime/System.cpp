//===- runtime/System.cpp - What gatherjit asks of the operating system --===//

#include "runtime/System.h"
#include "gatherjit/Runtime.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace gatherjit {
namespace {

std::string sizeText(uint64_t Bytes) {
  static const char *Units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double V = static_cast<double>(Bytes);
  int U = 0;
  while (V >= 1024 && U < 6) {
    V /= 1024;
    ++U;
  }
  char Text[48];
  if (U == 0)
    std::snprintf(Text, sizeof(Text), "%llu bytes", static_cast<unsigned long long>(Bytes));
  else
    std::snprintf(Text, sizeof(Text), "%llu bytes (%.1f %s)",
                  static_cast<unsigned long long>(Bytes), V, Units[U]);
  return Text;
}

const char *fileKind(mode_t Mode) {
  if (S_ISDIR(Mode))
    return "a directory";
  if (S_ISCHR(Mode))
    return "a character device";
  if (S_ISBLK(Mode))
    return "a block device";
  if (S_ISSOCK(Mode))
    return "a socket";
  return "not a regular file";
}

} // namespace

Status fileError(const std::string &What, const std::string &Path, int Errno) {
  std::string Msg = What + " " + quote(Path) + ": " + std::strerror(Errno);
  switch (Errno) {
  case ENOENT:
  case ENOTDIR:
  case EISDIR:
  case ELOOP:
  case ENAMETOOLONG:
    return Status::invalidArgument(std::move(Msg));
  default:
    return Status::ioError(std::move(Msg));
  }
}

Expected<InputFile> InputFile::open(const std::string &Path) {
  int Fd = ::open(Path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (Fd < 0)
    return fileError("cannot open", Path, errno);
  struct stat St;
  if (fstat(Fd, &St) != 0) {
    const int Err = errno;
    ::close(Fd);
    return fileError("cannot open", Path, Err);
  }
  if (!S_ISREG(St.st_mode) && !S_ISFIFO(St.st_mode)) {
    ::close(Fd);
    return Status::invalidArgument(quote(Path) + " is " + fileKind(St.st_mode) +
                                   "; only regular files and FIFOs are read");
  }
  std::optional<uint64_t> Size;
  if (S_ISREG(St.st_mode))
    Size = static_cast<uint64_t>(St.st_size);
  return InputFile(Fd, Size, Path);
}

InputFile::~InputFile() {
  if (Fd >= 0)
    ::close(Fd);
}

Status readUpTo(int Fd, void *Out, uint64_t Max, uint64_t &Done, const std::string &Path) {
  Done = 0;
  char *P = static_cast<char *>(Out);
  while (Done < Max) {
    const size_t Chunk = static_cast<size_t>(std::min<uint64_t>(Max - Done, 1u << 30));
    const ssize_t N = ::read(Fd, P + Done, Chunk);
    if (N < 0 && errno == EINTR)
      continue;
    if (N < 0)
      return fileError("cannot read", Path, errno);
    if (N == 0)
      break;
    Done += static_cast<uint64_t>(N);
  }
  return Status::ok();
}

Status InputFile::readSome(void *Out, uint64_t Max, uint64_t &Done) {
  return readUpTo(Fd, Out, Max, Done, Path);
}

Status InputFile::readExactly(void *Out, uint64_t Bytes) {
  uint64_t Done;
  if (Status S = readSome(Out, Bytes, Done); !S)
    return S;
  if (Done != Bytes)
    return Status::invalidArgument(quote(Path) + " is truncated: " + std::to_string(Bytes) +
                                   " bytes needed, " + std::to_string(Done) + " present");
  return Status::ok();
}

Expected<bool> InputFile::atEnd() {
  char Byte;
  uint64_t Done;
  if (Status S = readSome(&Byte, 1, Done); !S)
    return S;
  return Done == 0;
}

Expected<std::string> readTextFile(const std::string &Path, uint64_t MaxBytes) {
  Expected<InputFile> File = InputFile::open(Path);
  if (!File)
    return File.status();
  auto TooLarge = [&] {
    return Status::invalidArgument(quote(Path) + " is larger than " + sizeText(MaxBytes) +
                                   "; refused without reading it");
  };
  if (File->size() && *File->size() > MaxBytes)
    return TooLarge();
  std::string Text(File->size().value_or(MaxBytes), '\0');
  uint64_t Done;
  if (Status S = File->readSome(Text.data(), Text.size(), Done); !S)
    return S;
  Text.resize(Done);
  Expected<bool> End = File->atEnd(); // A FIFO, or a file that grew.
  if (!End)
    return End.status();
  if (!*End) // Its size was not known ahead: read up to the cap.
    return Status::invalidArgument(quote(Path) + " goes on past " + sizeText(MaxBytes) +
                                   " (a FIFO or a file that grew); refused after reading that "
                                   "much");
  return Text;
}

uint64_t physicalMemoryBytes() {
  const long Pages = sysconf(_SC_PHYS_PAGES), PageSize = sysconf(_SC_PAGESIZE);
  if (Pages <= 0 || PageSize <= 0)
    return UINT64_MAX;
  return static_cast<uint64_t>(Pages) * static_cast<uint64_t>(PageSize);
}

Status checkAllocation(uint64_t Bytes, const std::string &What) {
  const uint64_t Memory = physicalMemoryBytes();
  if (Bytes <= Memory)
    return Status::ok();
  return Status::invalidArgument(What + " needs " + sizeText(Bytes) +
                                 ", more than this machine's memory of " + sizeText(Memory));
}

Expected<ByteBuffer> ByteBuffer::allocate(uint64_t Bytes, const std::string &What) {
  if (Status S = checkAllocation(Bytes, What); !S)
    return S;
  ByteBuffer B;
  if (Bytes == 0)
    return B;
  B.Bytes.reset(new (std::nothrow) char[Bytes]);
  if (!B.Bytes)
    return Status::internal("out of memory: " + What + " needs " + sizeText(Bytes));
  B.Size = Bytes;
  return B;
}

bool envFlag(const char *Name) {
  const char *V = std::getenv(Name);
  if (!V || !*V)
    return false;
  for (const char *Off : {"0", "false", "off", "no"})
    if (strcasecmp(V, Off) == 0)
      return false;
  return true;
}

std::string defaultCacheDir() {
  if (envFlag("GATHERJIT_NO_CACHE"))
    return "";
  if (const char *Dir = std::getenv("GATHERJIT_CACHE_DIR"); Dir && *Dir)
    return Dir;
  // The XDG base directory rules: a relative XDG_CACHE_HOME is ignored.
  if (const char *Xdg = std::getenv("XDG_CACHE_HOME"); Xdg && *Xdg == '/')
    return std::string(Xdg) + "/gatherjit";
  if (const char *Home = std::getenv("HOME"); Home && *Home)
    return std::string(Home) + "/.cache/gatherjit";
  return "";
}

Expected<uint64_t> defaultCacheLimit(uint64_t Default) {
  const char *Text = std::getenv("GATHERJIT_CACHE_LIMIT_MIB");
  if (!Text || !*Text)
    return Default;
  constexpr uint64_t MaxMiB = uint64_t(1) << 40;
  const char *End = Text + std::strlen(Text);
  uint64_t MiB = 0;
  // from_chars takes no sign, space or exponent: "-1", " 5" and "1e3" are
  // refused, as the command line's integers are.
  auto [Ptr, Err] = std::from_chars(Text, End, MiB);
  if (Err != std::errc() || Ptr != End || MiB > MaxMiB)
    return Status::invalidArgument("GATHERJIT_CACHE_LIMIT_MIB: " + quote(Text, 40) +
                                   " is not an integer in 0.." + std::to_string(MaxMiB));
  return MiB << 20;
}

uint64_t hash64(std::string_view Bytes) {
  uint64_t H = 0xcbf29ce484222325ull;
  for (unsigned char C : Bytes) {
    H ^= C;
    H *= 0x100000001b3ull;
  }
  return H;
}

std::string makeDirectories(const std::string &Dir, mode_t Mode) {
  for (size_t At = Dir.find('/', 1);; At = Dir.find('/', At + 1)) {
    const std::string Prefix = Dir.substr(0, At);
    if (!Prefix.empty() && ::mkdir(Prefix.c_str(), Mode) != 0 && errno != EEXIST)
      return std::strerror(errno);
    if (At == std::string::npos)
      return "";
  }
}

std::string hostCpuId() {
  std::string Id;
  auto Add = [&](uint64_t Word) {
    char Hex[20];
    std::snprintf(Hex, sizeof(Hex), "%llx ", static_cast<unsigned long long>(Word));
    Id += Hex;
  };
#if defined(__x86_64__) || defined(__i386__)
  unsigned A, B, C, D;
  Id = "x86 ";
  const unsigned MaxLeaf = __get_cpuid_max(0, nullptr);
  // The caches' sizes too (Intel's leaf 4, AMD's 0x8000001d, and
  // 0x80000006): the plans depend on the last level's
  // (TargetFacts::LastLevelCacheBytes).
  const std::pair<unsigned, unsigned> Leaves[] = {
      {0, 0}, {1, 0},   {4, 2},           {4, 3},           {7, 0},
      {7, 1}, {0xd, 0}, {0x80000001u, 0}, {0x80000006u, 0}, {0x8000001du, 3}};
  for (auto [Leaf, Sub] : Leaves) {
    if ((Leaf < 0x80000000u && Leaf > MaxLeaf) || !__get_cpuid_count(Leaf, Sub, &A, &B, &C, &D))
      continue;
    if (Leaf == 1)
      B &= 0xffff; // Bits 16-31: the APIC ID of whichever core runs this.
    for (unsigned W : {A, B, C, D})
      Add(W);
  }
  if (__get_cpuid(1, &A, &B, &C, &D) && (C & bit_OSXSAVE)) {
    unsigned Lo, Hi;
    __asm__("xgetbv" : "=a"(Lo), "=d"(Hi) : "c"(0));
    Add(Lo);
    Add(Hi);
  }
#elif defined(__aarch64__)
  Id = "aarch64 ";
  Add(getauxval(AT_HWCAP));
  Add(getauxval(AT_HWCAP2));
  if (Expected<std::string> Midr =
          readTextFile("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", 64))
    Id += *Midr;
#else
  Id = "other";
#endif
  return Id;
}

} // namespace gatherjit
