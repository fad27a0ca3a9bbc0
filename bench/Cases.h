//===- bench/Cases.h - The benchmark case table --------------------------===//
/// \file
/// One table feeds the benchmarks and their test (tests/bench/CasesTest.cpp),
/// so every benchmarked case is also a tested one.
//===----------------------------------------------------------------------===//
#ifndef GATHERJIT_BENCH_CASES_H
#define GATHERJIT_BENCH_CASES_H

#include "gatherjit/Onnx.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>

namespace gatherjit::bench {

struct BenchCase {
  const char *Name;
  OpKind Op; ///< ONNX GatherElements, Gather or GatherND.
  DataType Data;
  std::vector<uint64_t> DataShape;
  DataType Index;
  std::vector<uint64_t> IndexShape;
  int64_t Axis; ///< GatherND: batch_dims.
  OobPolicy Policy;
};

inline const std::vector<BenchCase> &benchCases() {
  using DT = DataType;
  // One case a line (wider than the format's 100 columns, which would
  // break each into eight).
  // clang-format off
  static const std::vector<BenchCase> Cases = {
      {"GE1", OpKind::GatherElements, DT::Float32, {4096, 4096}, DT::Int64, {4096, 4096}, 1, OobPolicy::Check},
      {"GE1_clamp", OpKind::GatherElements, DT::Float32, {4096, 4096}, DT::Int64, {4096, 4096}, 1, OobPolicy::Clamp},
      {"GE2", OpKind::GatherElements, DT::Float32, {4096, 4096}, DT::Int64, {4096, 4096}, 0, OobPolicy::Check},
      {"GE3", OpKind::GatherElements, DT::Float32, {64, 512, 512}, DT::Int32, {64, 256, 512}, 1, OobPolicy::Check},
      {"GE4", OpKind::GatherElements, DT::Float16, {4096, 4096}, DT::Int32, {4096, 4096}, 1, OobPolicy::Check},
      {"GE5", OpKind::GatherElements, DT::Float32, {3, 3}, DT::Int64, {2, 3}, 0, OobPolicy::Check},
      {"GE6", OpKind::GatherElements, DT::UInt8, {8, 1048576}, DT::Int64, {8, 1048576}, 1, OobPolicy::Check},
      {"G1", OpKind::Gather, DT::Float32, {50000, 768}, DT::Int64, {8192}, 0, OobPolicy::Check},
      {"G1_clamp", OpKind::Gather, DT::Float32, {50000, 768}, DT::Int64, {8192}, 0, OobPolicy::Clamp},
      {"G2", OpKind::Gather, DT::Float32, {1024, 4096}, DT::Int32, {1024}, 1, OobPolicy::Check},
      {"G3", OpKind::Gather, DT::Float32, {256, 1024}, DT::Int64, {64, 32}, 1, OobPolicy::Check},
      {"G4", OpKind::Gather, DT::Float32, {4}, DT::Int64, {5}, 0, OobPolicy::Check},
      // A paged KV-cache read: 256 sequences of 16 block numbers pick 4 KiB
      // blocks of 16 tokens x 128 FLOAT16 from a pool of 4096.
      {"GN1", OpKind::GatherND, DT::Float16, {4096, 16, 128}, DT::Int32, {256, 16, 1}, 0, OobPolicy::Check},
      // Point reads: 1,048,576 (row, column) pairs into a 4 MiB matrix.
      {"GN2", OpKind::GatherND, DT::Float32, {1024, 1024}, DT::Int64, {1048576, 2}, 0, OobPolicy::Check},
  };
  // clang-format on
  return Cases;
}

inline TensorDesc benchTensor(DataType Type, const std::vector<uint64_t> &Shape) {
  TensorDesc T;
  T.Type = Type;
  T.Sizes = Shape;
  return T;
}

/// The validated descriptor of a case.
inline Expected<ValidDesc> benchDesc(const BenchCase &C) {
  return validateOnnx(
      {C.Op, benchTensor(C.Data, C.DataShape), benchTensor(C.Index, C.IndexShape), C.Axis},
      C.Policy);
}

/// Memory as numpy allocates an array's (the peers' operands in
/// bench/python_baselines.py are numpy arrays): from 4 MiB on, its whole
/// pages are marked for transparent huge pages, which the system grants
/// where it can. Operands on 4 KiB pages would pay TLB misses the peers'
/// do not: GE6 from a numpy array 5.96 ms against 8.10 ms from the command
/// line's plain buffers, warm, one thread.
template <class T> struct NumpyLikeAllocator {
  using value_type = T;
  NumpyLikeAllocator() = default;
  template <class U> NumpyLikeAllocator(const NumpyLikeAllocator<U> &) {}
  T *allocate(size_t N) {
    const size_t Bytes = N * sizeof(T);
    void *P = std::malloc(Bytes ? Bytes : 1);
    if (!P)
      throw std::bad_alloc();
    constexpr size_t HugeFrom = size_t(4) << 20, Page = 4096;
    if (Bytes >= HugeFrom) {
      const uintptr_t First = (reinterpret_cast<uintptr_t>(P) + Page - 1) / Page * Page;
      const uintptr_t End = (reinterpret_cast<uintptr_t>(P) + Bytes) / Page * Page;
      (void)::madvise(reinterpret_cast<void *>(First), End - First, MADV_HUGEPAGE);
    }
    return static_cast<T *>(P);
  }
  void deallocate(T *P, size_t) { std::free(P); }
  bool operator==(const NumpyLikeAllocator &) const { return true; }
};
/// A benchmark's operand or output.
using Buffer = std::vector<char, NumpyLikeAllocator<char>>;

/// Input bytes and uniformly random valid indices from a fixed seed.
struct BenchData {
  Buffer Input, Indices;
  uint64_t OutputBytes = 0;
};

inline BenchData benchData(const ValidDesc &V) {
  BenchData B;
  std::mt19937_64 Rng(12345);
  B.Input.resize(requiredElements(V.Input) * V.Input.elementBytes());
  for (size_t I = 0; I < B.Input.size(); I += 8) {
    const uint64_t R = Rng();
    std::memcpy(&B.Input[I], &R, std::min<size_t>(8, B.Input.size() - I));
  }
  const uint64_t Count = requiredElements(V.Indices);
  const unsigned Bytes = V.Indices.elementBytes();
  B.Indices.resize(Count * Bytes);
  for (uint64_t I = 0; I < Count; ++I) {
    // Packed indices: GatherND's tuple components take turns.
    const uint64_t Size = V.Op == OpKind::GatherND
                              ? V.Input.Sizes[V.firstTupleDim() + I % V.tupleSize()]
                              : V.axisSize();
    const uint64_t Index = Rng() % Size;
    std::memcpy(&B.Indices[I * Bytes], &Index, Bytes); // Little-endian.
  }
  B.OutputBytes = V.outputElements() * V.Output.elementBytes();
  return B;
}

} // namespace gatherjit::bench

#endif
