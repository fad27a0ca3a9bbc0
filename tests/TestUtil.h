//===- tests/TestUtil.h - Helpers shared by the tests --------------------===//
#ifndef GATHERJIT_TESTS_TESTUTIL_H
#define GATHERJIT_TESTS_TESTUTIL_H

#include "gatherjit/Validate.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

/// Defined where a sanitizer's allocator serves the heap (its own counts,
/// its own reservations of address space).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GATHERJIT_SANITIZED_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GATHERJIT_SANITIZED_HEAP 1
#endif
#endif

namespace gatherjit::test {

/// What code run on a kernel's rows (generated, generic or a simulated
/// grid) reports where the interpreter reports \p Interpreted: the same,
/// except that an empty output reads no index there (Kernel::run checks an
/// empty output's indices apart from its code).
inline Status rowsStatus(const ValidDesc &Desc, Status Interpreted) {
  return Desc.outputElements() == 0 ? Status::ok() : std::move(Interpreted);
}

/// A scratch directory removed when the test ends.
class ScratchDir {
public:
  ScratchDir() {
    std::string Template =
        (std::filesystem::temp_directory_path() / "gatherjit-test-XXXXXX").string();
    Path = mkdtemp(Template.data());
  }
  ~ScratchDir() { std::filesystem::remove_all(Path); }
  std::string operator/(const std::string &Name) const { return (Path / Name).string(); }
  std::filesystem::path Path;
};

inline std::string slurp(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  std::stringstream SS;
  SS << In.rdbuf();
  return SS.str();
}

inline void spit(const std::string &Path, const std::string &Contents) {
  std::ofstream(Path, std::ios::binary) << Contents;
}

inline TensorDesc tensor(DataType Type, std::vector<uint64_t> Sizes,
                         std::optional<std::vector<uint64_t>> Strides = std::nullopt) {
  TensorDesc D;
  D.Type = Type;
  D.Sizes = std::move(Sizes);
  D.Strides = std::move(Strides);
  return D;
}

/// Encodes integer index values in an index type.
inline std::vector<char> encodeIndices(DataType Type, const std::vector<int64_t> &Values) {
  const unsigned Size = dataTypeSize(Type);
  std::vector<char> Bytes(Values.size() * Size);
  for (size_t I = 0; I < Values.size(); ++I) {
    if (Size == 8) {
      std::memcpy(&Bytes[I * 8], &Values[I], 8);
    } else {
      uint32_t V = static_cast<uint32_t>(Values[I]);
      std::memcpy(&Bytes[I * 4], &V, 4);
    }
  }
  return Bytes;
}

/// A buffer of \p Count elements of \p ElemBytes where element E holds the
/// byte pattern E*31+7, E*31+8, ... so that any misplaced byte shows.
inline std::vector<char> patternBuffer(uint64_t Count, unsigned ElemBytes) {
  std::vector<char> B(Count * ElemBytes);
  for (uint64_t E = 0; E < Count; ++E)
    for (unsigned I = 0; I < ElemBytes; ++I)
      B[E * ElemBytes + I] = static_cast<char>(E * 31 + 7 + I);
  return B;
}

/// The elements of \p Buffer at the given element positions, concatenated.
inline std::vector<char> pick(const std::vector<char> &Buffer, unsigned ElemBytes,
                              const std::vector<uint64_t> &Positions) {
  std::vector<char> Out;
  for (uint64_t P : Positions)
    Out.insert(Out.end(), Buffer.begin() + P * ElemBytes, Buffer.begin() + (P + 1) * ElemBytes);
  return Out;
}

/// \p Bytes placed against an inaccessible page: ending right before one,
/// or starting right after one.
class GuardedBuffer {
public:
  GuardedBuffer(uint64_t Bytes, bool AgainstEnd) {
    const uint64_t Page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t Span = (Bytes + Page - 1) / Page * Page;
    MapBytes = Span + 2 * Page;
    void *Map = mmap(nullptr, MapBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (Map == MAP_FAILED)
      std::abort();
    Base = static_cast<char *>(Map);
    if (mprotect(Base, Page, PROT_NONE) != 0 || mprotect(Base + Page + Span, Page, PROT_NONE) != 0)
      std::abort();
    Data = AgainstEnd ? Base + Page + Span - Bytes : Base + Page;
    Size = Bytes;
  }
  GuardedBuffer(const GuardedBuffer &) = delete;
  GuardedBuffer &operator=(const GuardedBuffer &) = delete;
  ~GuardedBuffer() { munmap(Base, MapBytes); }

  char *data() { return Data; }
  void fill(const std::vector<char> &Bytes) {
    if (Size) // An empty vector's data() may be null.
      std::memcpy(Data, Bytes.data(), Size);
  }
  std::vector<char> bytes() const { return std::vector<char>(Data, Data + Size); }

private:
  char *Base = nullptr, *Data = nullptr;
  uint64_t MapBytes = 0, Size = 0;
};

} // namespace gatherjit::test

#endif
