//===- runtime/DiskCache.cpp - Compiled kernels kept across processes ----===//

#include "runtime/DiskCache.h"

#include "runtime/AtomicFile.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/xxhash.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace gatherjit {
namespace {

constexpr char Magic[8] = {'G', 'J', 'K', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t Version = 1;
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

uint64_t checksum(std::string_view KeyAndObject) {
  return llvm::xxh3_64bits(llvm::StringRef(KeyAndObject.data(), KeyAndObject.size()));
}

} // namespace

std::string DiskCache::key(std::string_view KernelLines) const {
  return Environment + std::string(KernelLines);
}

std::string DiskCache::path(const std::string &Key) const {
  char Name[32];
  std::snprintf(Name, sizeof(Name), "%016llx.gjk",
                static_cast<unsigned long long>(llvm::xxh3_64bits(Key)));
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

std::optional<std::vector<char>> DiskCache::decode(std::string_view File,
                                                   const std::string &Key) {
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

std::optional<std::vector<char>> DiskCache::load(const std::string &Key) const {
  std::ifstream In(path(Key), std::ios::binary);
  if (!In)
    return std::nullopt;
  std::ostringstream Contents;
  Contents << In.rdbuf();
  return decode(Contents.str(), Key);
}

Status DiskCache::store(const std::string &Key, const std::vector<char> &Object) const {
  if (std::error_code EC = llvm::sys::fs::create_directories(Dir))
    return Status::invalidArgument("cannot create the kernel cache directory '" + Dir +
                                   "': " + EC.message());
  return writeFileAtomic(path(Key), encode(Key, Object));
}

} // namespace gatherjit
