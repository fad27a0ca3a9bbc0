//===- runtime/System.cpp - What gatherjit asks of the operating system --===//

#include "runtime/System.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

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
  if (!*End)
    return TooLarge();
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

} // namespace gatherjit
