//===- runtime/System.h - What gatherjit asks of the operating system ----===//
/// \file
/// The few system facts and calls every reader of user files shares, so
/// that each one treats hostile input the same way: a file is read only if
/// it is a regular file or a FIFO, never more than its caller's limit; a
/// size computed from user input is checked against the machine's memory
/// before anything is allocated; a failing system call becomes a Status
/// naming the path and the system's message, InvalidArgument where the
/// user named something that is not there (exit 2), IoError where the
/// system refused (exit 1).
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_RUNTIME_SYSTEM_H
#define GATHERJIT_RUNTIME_SYSTEM_H

#include "gatherjit/Status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace gatherjit {

/// \p What ("cannot open", "cannot write") + the quoted path + strerror.
/// ENOENT, ENOTDIR, EISDIR, ELOOP and ENAMETOOLONG are the user's
/// (InvalidArgument); anything else is the system's (IoError).
Status fileError(const std::string &What, const std::string &Path, int Errno);

/// Reads up to \p Max bytes from \p Fd into \p Out, retrying interrupted
/// and short reads until the end of the file; \p Done is how many. Errors
/// name \p Path.
Status readUpTo(int Fd, void *Out, uint64_t Max, uint64_t &Done, const std::string &Path);

/// A file opened for reading: regular files and FIFOs only (a device such
/// as /dev/zero would never end). Closes on destruction.
class InputFile {
public:
  static Expected<InputFile> open(const std::string &Path);
  InputFile(InputFile &&Other) noexcept
      : Fd(Other.Fd), Size(Other.Size), Path(std::move(Other.Path)) {
    Other.Fd = -1;
  }
  InputFile &operator=(InputFile &&) = delete;
  ~InputFile();

  /// Reads exactly \p Bytes, or fails naming how many the file had.
  Status readExactly(void *Out, uint64_t Bytes);
  /// Reads at most \p Max bytes; \p Done is how many.
  Status readSome(void *Out, uint64_t Max, uint64_t &Done);
  /// True if the file has nothing more (reads one byte to learn it).
  Expected<bool> atEnd();
  /// The size of a regular file; std::nullopt for a FIFO.
  std::optional<uint64_t> size() const { return Size; }
  const std::string &path() const { return Path; }

private:
  InputFile(int Fd, std::optional<uint64_t> Size, std::string Path)
      : Fd(Fd), Size(Size), Path(std::move(Path)) {}
  int Fd;
  std::optional<uint64_t> Size;
  std::string Path;
};

/// Reads a whole text file of at most \p MaxBytes; a larger one is refused
/// before it is read further.
Expected<std::string> readTextFile(const std::string &Path, uint64_t MaxBytes);

/// The machine's physical memory in bytes.
uint64_t physicalMemoryBytes();

/// Checks that \p Bytes (of \p What, e.g. "the output") can be allocated:
/// InvalidArgument naming both sizes if it exceeds the machine's memory.
Status checkAllocation(uint64_t Bytes, const std::string &What);

/// An uninitialized byte buffer: gatherjit's buffers are written whole by a
/// file read or a kernel, so zero-filling them would touch every page twice.
class ByteBuffer {
public:
  ByteBuffer() = default;
  /// checkAllocation, then the allocation itself; Internal if it fails.
  static Expected<ByteBuffer> allocate(uint64_t Bytes, const std::string &What);
  char *data() { return Bytes.get(); }
  const char *data() const { return Bytes.get(); }
  uint64_t size() const { return Size; }

private:
  std::unique_ptr<char[]> Bytes;
  uint64_t Size = 0;
};

/// A boolean environment variable: unset, empty, "0", "false", "off" and
/// "no" (any case) are off; anything else is on.
bool envFlag(const char *Name);

/// A 64-bit FNV-1a hash: names and checksums of kernel cache entries.
uint64_t hash64(std::string_view Bytes);

/// Creates \p Dir and its missing parents (new ones with \p Mode); an
/// existing directory is success. The error's text, or empty.
std::string makeDirectories(const std::string &Dir, mode_t Mode);

/// Identifies this machine's CPU as code generation sees it (x86-64: the
/// CPUID leaves of vendor, model and features, and the register state the
/// OS enables; AArch64: the hardware capabilities): kernels compiled for
/// the host are reused only on a host with the same identity.
std::string hostCpuId();

} // namespace gatherjit

#endif
