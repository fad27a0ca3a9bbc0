//===- tests/tools/AotCommandTest.cpp - gatherjit aot --------------------===//

#include "CliTestUtil.h"
#include "compiler/epilogue/Epilogue.h"

#include <gmock/gmock.h>

#include <cctype>
#include <cstring>
#include <sstream>

using namespace gatherjit::test;
using ::testing::HasSubstr;

namespace {

const char *GeFlags = "--data-shape 4096,4096 --data-type FLOAT32 --indices-shape 4096,4096 "
                      "--indices-type INT64 --axis 1";

std::string symbols(const ScratchDir &Dir, const std::string &Object) {
  const std::string Out = Dir / "nm.txt";
  const std::string Cmd = "nm -g --defined-only " + Object + " > " + Out;
  EXPECT_EQ(std::system(Cmd.c_str()), 0);
  return slurp(Out);
}

} // namespace

TEST(AotCommand, FlagsAndDescriptorsMakeOneObjectAndOneHeader) {
  ScratchDir Dir;
  spit(Dir / "emb.json", R"({"operator": "GATHER", "axis": 0, "index_dimensions": 1,
    "input": {"data_type": "FLOAT16", "sizes": [50000, 768]},
    "indices": {"data_type": "INT32", "sizes": [1, 8192]},
    "output": {"data_type": "FLOAT16", "sizes": [8192, 768]}})");
  CliResult R =
      runCli(Dir, std::string("aot ") + GeFlags + " --name ge1 --desc " + (Dir / "emb.json") +
                      " --name emb -o " + (Dir / "k.o") + " --header " + (Dir / "k.h"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  const std::string Syms = symbols(Dir, Dir / "k.o");
  for (const char *S :
       {" ge1\n", " ge1_range\n", " ge1_rows\n", " emb\n", " emb_range\n", " emb_rows\n"})
    EXPECT_THAT(Syms, HasSubstr(S));
  const std::string H = slurp(Dir / "k.h");
  EXPECT_THAT(H, HasSubstr("int64_t ge1(const void *input, const void *indices, void *output);"));
  EXPECT_THAT(H,
              HasSubstr("int64_t emb_range(const void *input, const void *indices, void *output,\n"
                        "    int64_t begin, int64_t end);"));
  EXPECT_THAT(H, HasSubstr("extern const int64_t emb_rows;"));
  // Each declaration carries the descriptor it was built for.
  EXPECT_THAT(H,
              HasSubstr("ge1: GatherElements input=FLOAT32{4096,4096} indices=INT64{4096,4096}"));
  EXPECT_THAT(H, HasSubstr("emb: Gather input=FLOAT16{50000,768}"));
  // The header is valid C.
  spit(Dir / "use.c", "#include \"k.h\"\nint main(void) { return (int)sizeof(&ge1); }\n");
  const std::string Cc =
      "cc -std=c99 -Wall -Werror -fsyntax-only -I" + Dir.Path.string() + " " + (Dir / "use.c");
  EXPECT_EQ(std::system(Cc.c_str()), 0);
}

TEST(AotCommand, CrossCompilesForAarch64) {
  ScratchDir Dir;
  CliResult R = runCli(Dir, std::string("aot gather --data-shape 1000,64 --indices-shape 16 "
                                        "--indices-type INT32 --name emb --target "
                                        "aarch64-linux-gnu --cpu cortex-a72 -o ") +
                                (Dir / "a.o") + " --header " + (Dir / "a.h"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  const std::string Head = slurp(Dir / "a.o").substr(0, 20);
  ASSERT_EQ(Head.substr(0, 4), "\x7f"
                               "ELF");
  EXPECT_EQ(Head[4], 2);                                // 64-bit
  EXPECT_EQ(static_cast<unsigned char>(Head[18]), 183); // EM_AARCH64
  EXPECT_EQ(Head[16], 1);                               // ET_REL
  EXPECT_THAT(slurp(Dir / "a.h"), HasSubstr("aarch64"));
}

TEST(AotCommand, TargetTriplesAreNormalizedAsClangDoes) {
  // "x86_64-windows-msvc" read in place has no OS: it made an ELF object.
  ScratchDir Dir;
  CliResult R = runCli(Dir, "aot gather --data-shape 8,4 --indices-shape 2 --name emb --target "
                            "x86_64-windows-msvc -o " +
                                (Dir / "w.o") + " --header " + (Dir / "w.h"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  const std::string Head = slurp(Dir / "w.o").substr(0, 2);
  EXPECT_EQ(Head, std::string("\x64\x86", 2)); // COFF, IMAGE_FILE_MACHINE_AMD64
  // The header names the triple its code was made for, and the CPU LLVM
  // uses where none was named.
  EXPECT_THAT(slurp(Dir / "w.h"), HasSubstr("for x86_64-unknown-windows-msvc, CPU generic, O2."));
}

TEST(AotCommand, GatherNDFromShapeFlags) {
  ScratchDir Dir;
  CliResult R = runCli(Dir, "aot gather-nd --data-shape 8,4096,64 --data-type FLOAT16 "
                            "--indices-shape 8,16,1 --indices-type INT32 --batch-dims 1 "
                            "--name pages -o " +
                                (Dir / "p.o") + " --header " + (Dir / "p.h"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  const std::string Header = slurp(Dir / "p.h");
  EXPECT_THAT(Header, HasSubstr("GatherND input=FLOAT16{8,4096,64}"));
  EXPECT_THAT(Header, HasSubstr("batch_dimension_count=1"));
  EXPECT_THAT(Header, HasSubstr("#define pages_OUTPUT_BYTES 16384u")); // 8*16*64*2
  R = runCli(Dir, "aot gather-nd --data-shape 4,4 --indices-shape 2,1 --axis 1 --name x -o " +
                      (Dir / "x.o") + " --header " + (Dir / "x.h"));
  expectOneErrorLine(R, 2, "--axis does not apply to gather-nd; use --batch-dims");
  R = runCli(Dir, "aot gather --data-shape 4,4 --indices-shape 2 --batch-dims 1 --name x -o " +
                      (Dir / "x.o") + " --header " + (Dir / "x.h"));
  expectOneErrorLine(R, 2, "--batch-dims applies to gather-nd only");
}

TEST(AotCommand, BadInputExitsTwoAndWritesNothing) {
  ScratchDir Dir;
  spit(Dir / "keep.o", "old object");
  const std::string Outs = " -o " + (Dir / "keep.o") + " --header " + (Dir / "new.h");
  struct Case {
    std::string Args, Message;
  } Cases[] = {
      {std::string(GeFlags) + " --name 2fast", "'2fast' is not a C identifier"},
      {std::string(GeFlags) + " --name a --name b",
       "1 kernels (1 from shape flags, 0 from --desc) but 2 --name"},
      {"--data-shape 4,x --indices-shape 4", "--data-shape = '4,x'"},
      {"--data-shape 4,4 --indices-shape 4,4 --data-type FLOAT33", "--data-type = 'FLOAT33'"},
      {"--data-shape 4,4 --indices-shape 4,4 --indices-type FLOAT32", "index"},
      {"--data-shape 4,4 --indices-shape 4,4 --axis 2", "axis = 2"},
      {"--data-shape 4,4 --indices-shape 4,4 --cpu pentium9", "unknown CPU 'pentium9'"},
      {"--data-shape 4,4 --indices-shape 4,4 --features +avx2,+avx9",
       "unknown target feature '+avx9'"},
      {"--data-shape 4,4 --indices-shape 4,4 --target aarch64-linux-gnu --features -avx2",
       "unknown target feature '-avx2' for target 'aarch64"},
      {"--data-shape 4,4 --indices-shape 4,4 --target nosucharch-linux-gnu",
       "nosucharch-linux-gnu"},
      // A target LLVM knows but cannot generate code for here.
      {"--data-shape 4,4 --indices-shape 4,4 --target wasm32-unknown-unknown",
       "cannot generate code for target 'wasm32-unknown-unknown'"},
      // Targets whose pointers are narrower than the kernels' 64-bit
      // offsets and ABI assume.
      {"--data-shape 4,4 --indices-shape 4,4 --target i686-linux-gnu",
       "cannot generate code for target 'i686-linux-gnu': its pointers are 32 bits"},
      {"--data-shape 4,4 --indices-shape 4,4 --target x86_64-linux-gnux32", "32 bits"},
      {"--data-shape 4,4 --indices-shape 4,4 --target arm64_32-apple-watchos", "32 bits"},
      {"--data-shape 4,4 --indices-shape 4,4 --target nvptx-nvidia-cuda", "32 bits"},
      // An architecture older than the runtime runs kernels on.
      {"--data-shape 4,4 --indices-shape 4,4 --target nvptx64-nvidia-cuda --cpu sm_60",
       "cannot generate code for sm_60: gatherjit's GPU kernels need sm_70 or later"},
      {"--desc " + (Dir / "missing.json"), "missing.json"},
      {"--name lonely", "no kernel given"},
  };
  for (const Case &C : Cases) {
    SCOPED_TRACE(C.Args);
    CliResult R = runCli(Dir, "aot " + C.Args + Outs);
    // One line: no warning of LLVM's before it (an unknown feature).
    expectOneErrorLine(R, 2, C.Message);
    EXPECT_EQ(slurp(Dir / "keep.o"), "old object");
    EXPECT_FALSE(std::filesystem::exists(Dir / "new.h"));
  }
  // Nothing but the files named (and the stdout/stderr captures) is left.
  size_t Files = 0;
  for (auto &E : std::filesystem::directory_iterator(Dir.Path))
    Files += E.path().filename() != "stdout.txt" && E.path().filename() != "stderr.txt";
  EXPECT_EQ(Files, 1u);
}

TEST(AotCommand, DescriptorsAsPositionalOperandsLikeRun) {
  ScratchDir Dir;
  spit(Dir / "ge.json", R"({"operator": "GATHER_ELEMENTS", "axis": 0,
    "input": {"data_type": "INT8", "sizes": [3, 2]},
    "indices": {"data_type": "INT32", "sizes": [3, 2]},
    "output": {"data_type": "INT8", "sizes": [3, 2]}})");
  for (const std::string &Form : {"run " + (Dir / "ge.json"), Dir / "ge.json"}) {
    SCOPED_TRACE(Form);
    std::filesystem::remove(Dir / "k.o");
    CliResult R = runCli(Dir, "aot " + Form + " --name dml_ge -o " + (Dir / "k.o"));
    ASSERT_EQ(R.Exit, 0) << R.Err;
    EXPECT_THAT(symbols(Dir, Dir / "k.o"), HasSubstr(" dml_ge_range\n"));
  }
}

/// The lines of \p Ptx that load or store through a generic address:
/// ld.u32, st.v4.u32 and the like, which name no state space.
std::string genericAccesses(const std::string &Ptx) {
  std::istringstream Lines(Ptx);
  std::string Found;
  for (std::string Line; std::getline(Lines, Line);) {
    const size_t At = Line.find_first_not_of(" \t");
    if (At == std::string::npos || (Line.compare(At, 3, "ld.") && Line.compare(At, 3, "st.")))
      continue;
    size_t Type = At + 3;
    if (Line[Type] == 'v' && Line.size() > Type + 2 && Line[Type + 2] == '.')
      Type += 3; // v2., v4., v8.
    if (Line.size() > Type + 1 && std::strchr("bsuf", Line[Type]) && std::isdigit(Line[Type + 1]))
      Found += Line + "\n";
  }
  return Found;
}

// At every level: O0 and O1 generate code without NVPTX's optimizations,
// which would leave generic loads and stores where the kernel pipeline did
// not infer the buffers' global address space.
TEST(AotCommand, PtxReadsAndWritesGlobalMemoryAtEveryLevel) {
  ScratchDir Dir;
  // A row family's rows staged in shared memory, and single elements.
  for (const std::string &Shape :
       {std::string(GeFlags), std::string("--data-shape 7,5 --data-type INT16 --indices-shape 7,3 "
                                          "--indices-type INT64 --axis 0")})
    for (const char *Level : {"O0", "O1", "O2", "O3"}) {
      SCOPED_TRACE(Shape + " " + Level);
      CliResult R =
          runCli(Dir, "aot " + Shape + " --target nvptx64-nvidia-cuda --cpu sm_80 --opt " + Level +
                          " -o " + (Dir / "k.ptx"));
      ASSERT_EQ(R.Exit, 0) << R.Err;
      const std::string Ptx = slurp(Dir / "k.ptx");
      EXPECT_THAT(Ptx, HasSubstr("ld.global.nc."));
      EXPECT_THAT(Ptx, HasSubstr("atom.global.min.u64"));
      EXPECT_EQ(genericAccesses(Ptx), "") << Ptx;
    }
}

TEST(AotCommand, PtxModuleAndLaunchHeaderForNvptx) {
  ScratchDir Dir;
  CliResult R = runCli(Dir, std::string("aot ") + GeFlags +
                                " --name ge1 --target nvptx64-nvidia-cuda --cpu sm_90 -o " +
                                (Dir / "k.ptx") + " --header " + (Dir / "k.h"));
  ASSERT_EQ(R.Exit, 0) << R.Err;
  const std::string Ptx = slurp(Dir / "k.ptx");
  EXPECT_THAT(Ptx, HasSubstr(".target sm_90"));
  EXPECT_THAT(Ptx, HasSubstr(".visible .entry ge1("));
  EXPECT_THAT(Ptx, HasSubstr("atom.global.min.u64")) << "Check's first bad index";
  EXPECT_THAT(Ptx, HasSubstr("ld.global.nc.")) << "operands through the read-only cache";
  const std::string H = slurp(Dir / "k.h");
  // 4096 rows, each reading one input row of 16 KiB: a block a row,
  // staged in shared memory.
  for (const char *Line :
       {"#define ge1_ENTRY \"ge1\"", "#define ge1_PARAMS \"input,indices,output,status\"",
        "#define ge1_GRID 4096u", "#define ge1_BLOCK 256u", "#define ge1_TUPLE 1u",
        "#define ge1_OUTPUT_BYTES 67108864u"})
    EXPECT_THAT(H, HasSubstr(Line));
  spit(Dir / "use.c", "#include \"k.h\"\nint main(void) { return ge1_GRID / ge1_BLOCK > 0; }\n");
  const std::string Cc =
      "cc -std=c99 -Wall -Werror -fsyntax-only -I" + Dir.Path.string() + " " + (Dir / "use.c");
  EXPECT_EQ(std::system(Cc.c_str()), 0);
  // An unknown GPU architecture is the user's error.
  expectOneErrorLine(runCli(Dir, std::string("aot ") + GeFlags +
                                     " --target nvptx64-nvidia-cuda --cpu sm_5 -o " +
                                     (Dir / "x.ptx")),
                     2, "unknown CPU 'sm_5'");
}

TEST(AotCommand, ElementRowAndCheckedEpiloguesFusedIntoPtx) {
  if (!gatherjit::epiloguesSupported())
    GTEST_SKIP() << "built without clang's libraries";
  ScratchDir Dir;
  spit(Dir / "relu.c", "float relu(float x) { return x > 0.0f ? x : 0.0f; }\n");
  spit(Dir / "row.c", "void r(const float *row, float *out) { out[0] = row[0]; }\n");
  const std::string Common = std::string("aot ") + GeFlags +
                             " --target nvptx64-nvidia-cuda --cpu sm_80 --header " + (Dir / "k.h") +
                             " -o " + (Dir / "k.ptx");
  CliResult R = runCli(Dir, Common + " --epilogue " + (Dir / "relu.c") + " --epilogue-fn relu");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(slurp(Dir / "k.ptx"), HasSubstr("max.f32"));
  // A row epilogue's kernel: an entry whose threads each take a row.
  R = runCli(Dir, "aot gather --data-shape 100,8 --indices-shape 16 --target "
                  "nvptx64-nvidia-cuda -o " +
                      (Dir / "r.ptx") + " --header " + (Dir / "r.h") + " --epilogue " +
                      (Dir / "row.c") + " --epilogue-fn r --epilogue-row-out 1 --name rows");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(slurp(Dir / "r.ptx"), HasSubstr(".visible .entry rows("));
  EXPECT_THAT(slurp(Dir / "r.h"), HasSubstr("#define rows_OUTPUT_BYTES 64u"));
  // A checked one: its faults fold into the status word.
  R = runCli(Dir, "aot gather --data-shape 100,8 --indices-shape 16 --target "
                  "nvptx64-nvidia-cuda -o " +
                      (Dir / "c.ptx") + " --epilogue " + (Dir / "relu.c") +
                      " --epilogue-fn relu --epilogue-checked --name checked");
  ASSERT_EQ(R.Exit, 0) << R.Err;
  EXPECT_THAT(slurp(Dir / "c.ptx"), HasSubstr(".visible .entry checked("));
  EXPECT_THAT(slurp(Dir / "c.ptx"), HasSubstr("atom.global.min.u64"));
}
