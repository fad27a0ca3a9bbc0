//===- bench/EpilogueBench.cpp - Fused epilogues against separate passes -===//
//
// gatherjit_epilogue_bench [--reps N]: one JSON object on stdout with the
// medians (ms) of
//  - an embedding lookup from an 8-bit rowwise-quantized table
//    ([1,000,000 x (128 + 8)] bytes, 8192 ids, FBGEMM's layout) into
//    FLOAT32: the fused kernel, and gatherjit's gather of the quantized rows
//    followed by a separate dequantizing pass;
//  - GE1 (4096 x 4096, axis 1) from FLOAT16 into FLOAT32: fused, and the
//    FLOAT16 gather followed by a separate conversion pass;
//  - a cold compile in a warm process, of distinct small kernels, with and
//    without a five-line element epilogue;
//  - the two fused kernels again with their epilogues checked
//    (Epilogue::Checked), the cost of checked mode.
// bench/epilogue_baselines.py measures numpy's (and PyTorch's) unfused
// ways on the same data. Single-threaded throughout.
//
//===----------------------------------------------------------------------===//

#include "gatherjit/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace gatherjit;

namespace {

using Clock = std::chrono::steady_clock;

double medianMs(unsigned Reps, const std::function<void()> &F) {
  std::vector<double> Ms;
  F(); // Warm: pages touched, code upgraded.
  for (unsigned I = 0; I < Reps; ++I) {
    Clock::time_point T0 = Clock::now();
    F();
    Ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - T0).count());
  }
  std::sort(Ms.begin(), Ms.end());
  return Ms[Ms.size() / 2];
}

Kernel must(Expected<Kernel> K) {
  if (!K) {
    std::fprintf(stderr, "error: %s\n", K.status().message().c_str());
    std::exit(1);
  }
  return K.take();
}

void check(Status S) {
  if (!S) {
    std::fprintf(stderr, "error: %s\n", S.message().c_str());
    std::exit(1);
  }
}

constexpr const char *Rowwise = R"(void dequant(const uint8_t *row, float *out) {
  float scale = gj_load_f32(row + GJ_ROW_OUT), bias = gj_load_f32(row + GJ_ROW_OUT + 4);
  for (int j = 0; j < GJ_ROW_OUT; ++j)
    out[j] = row[j] * scale + bias;
})";

// The separate passes, vectorized where the CPU allows (as the fused
// kernels are, for the host CPU).
__attribute__((target_clones("avx2", "default"))) void
dequantPass(const uint8_t *Rows, uint64_t Count, uint64_t Dim, float *Out) {
  const uint64_t Width = Dim + 8;
  for (uint64_t I = 0; I < Count; ++I) {
    const uint8_t *Row = &Rows[I * Width];
    float Scale, Bias;
    std::memcpy(&Scale, Row + Dim, 4);
    std::memcpy(&Bias, Row + Dim + 4, 4);
    for (uint64_t J = 0; J < Dim; ++J)
      Out[I * Dim + J] = Row[J] * Scale + Bias;
  }
}

__attribute__((target_clones("arch=haswell", "default"))) void
widenPass(const _Float16 *In, uint64_t Count, float *Out) {
  for (uint64_t I = 0; I < Count; ++I)
    Out[I] = static_cast<float>(In[I]);
}

constexpr const char *Widen = "float widen(float16_t x) { return (float)x; }";

} // namespace

int main(int Argc, char **Argv) {
  unsigned Reps = 15;
  for (int I = 1; I + 1 < Argc; ++I)
    if (std::string(Argv[I]) == "--reps")
      Reps = static_cast<unsigned>(std::stoul(Argv[I + 1]));
  RuntimeOptions O;
  O.Threads = 1;
  Expected<std::unique_ptr<Runtime>> Made = Runtime::create(O);
  if (!Made)
    return 1;
  Runtime &RT = **Made;
  std::mt19937_64 Rng(1);

  // The quantized table.
  const uint64_t Rows = 1000000, Dim = 128, Width = Dim + 8, Ids = 8192;
  std::vector<uint8_t> Table(Rows * Width);
  for (uint64_t R = 0; R < Rows; ++R) {
    uint8_t *Row = &Table[R * Width];
    for (uint64_t J = 0; J < Dim; ++J)
      Row[J] = static_cast<uint8_t>(Rng());
    const float Scale = 0.01f * (1 + R % 7), Bias = -1.0f + 0.001f * (R % 13);
    std::memcpy(Row + Dim, &Scale, 4);
    std::memcpy(Row + Dim + 4, &Bias, 4);
  }
  std::vector<int64_t> Idx(Ids);
  for (int64_t &I : Idx)
    I = static_cast<int64_t>(Rng() % Rows);
  auto Tensor = [](DataType T, std::vector<uint64_t> S) {
    TensorDesc D;
    D.Type = T;
    D.Sizes = std::move(S);
    return D;
  };
  const GatherDesc Lookup{Tensor(DataType::UInt8, {Rows, Width}), Tensor(DataType::Int64, {1, Ids}),
                          Tensor(DataType::Float32, {Ids, Dim}), 0, 1};
  Epilogue Dequant;
  Dequant.Source = Rowwise;
  Dequant.Function = "dequant";
  Kernel Fused = must(RT.compile(Lookup, {}, Dequant));
  Dequant.Checked = true;
  Kernel FusedChecked = must(RT.compile(Lookup, {}, Dequant));
  GatherDesc Plain = Lookup;
  Plain.Output = Tensor(DataType::UInt8, {Ids, Width});
  Kernel Gather = must(RT.compile(Plain));
  std::vector<float> Out(Ids * Dim), Out2(Ids * Dim);
  std::vector<uint8_t> Rows8(Ids * Width);
  const double FusedMs =
      medianMs(Reps, [&] { check(Fused.run(Table.data(), Idx.data(), Out.data())); });
  const double CheckedMs =
      medianMs(Reps, [&] { check(FusedChecked.run(Table.data(), Idx.data(), Out.data())); });
  const double TwoPassMs = medianMs(Reps, [&] {
    check(Gather.run(Table.data(), Idx.data(), Rows8.data()));
    dequantPass(Rows8.data(), Ids, Dim, Out2.data());
  });
  // (The two may differ in the last bit: a * s + b may be fused into one
  // rounding.)

  // GE1 from FLOAT16 into FLOAT32.
  const uint64_t N = 4096;
  std::vector<uint16_t> Half(N * N);
  for (uint64_t I = 0; I < N * N; ++I)
    Half[I] = static_cast<uint16_t>(0x3c00 + (Rng() % 0x800)); // Finite, in [1, 2).
  std::vector<int64_t> GeIdx(N * N);
  for (int64_t &I : GeIdx)
    I = static_cast<int64_t>(Rng() % N);
  const GatherElementsDesc Ge{Tensor(DataType::Float16, {N, N}), Tensor(DataType::Int64, {N, N}),
                              Tensor(DataType::Float32, {N, N}), 1};
  Epilogue W;
  W.Source = Widen;
  W.Function = "widen";
  Kernel GeFused = must(RT.compile(Ge, {}, W));
  W.Checked = true;
  Kernel GeChecked = must(RT.compile(Ge, {}, W));
  GatherElementsDesc GePlain = Ge;
  GePlain.Output.Type = DataType::Float16;
  Kernel GeGather = must(RT.compile(GePlain));
  std::vector<float> GeOut(N * N);
  std::vector<_Float16> GeHalf(N * N);
  const double GeFusedMs =
      medianMs(Reps, [&] { check(GeFused.run(Half.data(), GeIdx.data(), GeOut.data())); });
  const double GeCheckedMs =
      medianMs(Reps, [&] { check(GeChecked.run(Half.data(), GeIdx.data(), GeOut.data())); });
  const double GeTwoPassMs = medianMs(Reps, [&] {
    check(GeGather.run(Half.data(), GeIdx.data(), GeHalf.data()));
    widenPass(GeHalf.data(), N * N, GeOut.data());
  });

  // Cold compiles in this warm process: distinct shapes, so neither the
  // kernel cache nor the epilogue table has them.
  std::vector<double> PlainMs, EpiMs;
  Epilogue Five;
  Five.Function = "f";
  Five.Source = "float f(float x) {\n"
                "  float y = x * 0.5f + 1.0f;\n"
                "  if (y > 6.0f) y = 6.0f;\n"
                "  return y < 0.0f ? 0.0f : y;\n"
                "}\n";
  for (unsigned I = 0; I < 2 * Reps; ++I) {
    const uint64_t Cols = 17 + I;
    GatherElementsDesc D{Tensor(DataType::Float32, {8, Cols}), Tensor(DataType::Int64, {8, Cols}),
                         Tensor(DataType::Float32, {8, Cols}), 1};
    Clock::time_point T0 = Clock::now();
    must(RT.compile(D));
    PlainMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - T0).count());
    D.Input.Sizes[0] = D.Indices.Sizes[0] = D.Output.Sizes[0] = 9;
    T0 = Clock::now();
    must(RT.compile(D, {}, Five));
    EpiMs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - T0).count());
  }
  std::sort(PlainMs.begin(), PlainMs.end());
  std::sort(EpiMs.begin(), EpiMs.end());
  std::printf("{\"rowwise_fused_ms\": %.4f, \"rowwise_gather_then_dequant_ms\": %.4f, "
              "\"ge1_f16_fused_ms\": %.4f, \"ge1_f16_gather_then_convert_ms\": %.4f, "
              "\"cold_compile_plain_ms\": %.4f, \"cold_compile_epilogue_ms\": %.4f, "
              "\"rowwise_fused_checked_ms\": %.4f, \"ge1_f16_fused_checked_ms\": %.4f}\n",
              FusedMs, TwoPassMs, GeFusedMs, GeTwoPassMs, PlainMs[PlainMs.size() / 2],
              EpiMs[EpiMs.size() / 2], CheckedMs, GeCheckedMs);
  return 0;
}
