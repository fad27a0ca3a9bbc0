/*===- tests/fakecuda/FakeCuda.c - A CUDA driver for tests -----------------===
 *
 * The entry points runtime/CudaDriver.cpp loads, answering as
 * $GATHERJIT_FAKE_CUDA says (read at every call):
 *   stub      cuInit answers CUDA_ERROR_STUB_LIBRARY (the toolkit's stub)
 *   nodevice  cuInit answers CUDA_ERROR_NO_DEVICE
 *   old       one device of compute capability 6.1
 *   new       as ok, of compute capability 12.6 (newer than LLVM 19 knows)
 *   oldptx    cuModuleLoadDataEx answers CUDA_ERROR_UNSUPPORTED_PTX_VERSION
 *   nojit     cuModuleLoadDataEx answers CUDA_ERROR_JIT_COMPILER_NOT_FOUND
 *   badptx    cuModuleLoadDataEx answers CUDA_ERROR_INVALID_PTX, with a
 *             line in the error log buffer its options give
 *   ok        one sm_86 device whose memory is host memory; a launch runs
 *             nothing, and with $GATHERJIT_FAKE_CUDA_KEY set stores that
 *             number in the status word (a bad index's key)
 * A module loaded took the driver 1.5 ms to compile (CU_JIT_WALL_TIME).
 * Each load and launch is appended to $GATHERJIT_FAKE_CUDA_LOG if set: the
 * PTX's .target line and the entry taken from it ("function NAME"); the
 * launched entry's name, the grid and block, and a family kernel's first
 * two sizes.
 *===----------------------------------------------------------------------===*/

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static const char *mode(void) {
  const char *M = getenv("GATHERJIT_FAKE_CUDA");
  return M ? M : "ok";
}
static int is(const char *M) { return strcmp(mode(), M) == 0; }

static void logLine(const char *Text) {
  const char *Path = getenv("GATHERJIT_FAKE_CUDA_LOG");
  if (!Path)
    return;
  FILE *F = fopen(Path, "a");
  if (F) {
    fputs(Text, F);
    fputc('\n', F);
    fclose(F);
  }
}

CUresult cuInit(unsigned Flags) {
  (void)Flags;
  return is("stub") ? 34 : is("nodevice") ? 100 : 0;
}
CUresult cuDeviceGetCount(int *Count) {
  *Count = 1;
  return 0;
}
CUresult cuDeviceGet(int *Dev, int Ordinal) {
  if (Ordinal != 0)
    return 101;
  *Dev = 0;
  return 0;
}
CUresult cuDeviceGetAttribute(int *Value, int Attr, int Dev) {
  (void)Dev;
  *Value = Attr == 75 ? (is("old") ? 6 : is("new") ? 12 : 8) : Attr == 76 ? (is("old") ? 1 : 6) : 0;
  return 0;
}
static int Context;
CUresult cuDevicePrimaryCtxRetain(void **Ctx, int Dev) {
  (void)Dev;
  *Ctx = &Context;
  return 0;
}
CUresult cuCtxSetCurrent(void *Ctx) { return Ctx == &Context ? 0 : 201; }
static int Module;
CUresult cuModuleLoadDataEx(void **Mod, const void *Image, unsigned N, int *Options,
                            void **Values) {
  if (is("badptx")) {
    char *Log = NULL;
    size_t Size = 0;
    for (unsigned I = 0; I < N; ++I) {
      if (Options[I] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
        Log = (char *)Values[I];
      if (Options[I] == 6) /* CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES */
        Size = (size_t)(uintptr_t)Values[I];
    }
    if (Log && Size)
      snprintf(Log, Size,
               "ptxas application ptx input, line 3; error   : Unknown target\n"
               "ptxas fatal   : Ptx assembly aborted due to errors");
    return 218;
  }
  if (is("oldptx"))
    return 222;
  if (is("nojit"))
    return 221;
  for (unsigned I = 0; I < N; ++I)
    if (Options[I] == 2) { /* CU_JIT_WALL_TIME: a float in the value's slot */
      const float Ms = 1.5f;
      memcpy(&Values[I], &Ms, sizeof Ms);
    }
  const char *Target = strstr((const char *)Image, ".target ");
  char Line[64] = "no .target";
  if (Target)
    sscanf(Target, "%63[^\n]", Line);
  logLine(Line);
  *Mod = &Module;
  return 0;
}
CUresult cuModuleGetFunction(void **Fn, void *Mod, const char *Name) {
  char Line[256];
  (void)Mod;
  snprintf(Line, sizeof Line, "function %s", Name);
  logLine(Line);
  *Fn = strdup(Name); /* The entry's name, for the log; a test's few leak. */
  return *Fn ? 0 : 2;
}
CUresult cuModuleUnload(void *Mod) {
  (void)Mod;
  return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *Ptr, size_t Bytes) {
  void *P = calloc(1, Bytes);
  if (!P)
    return 2;
  *Ptr = (CUdeviceptr)(uintptr_t)P;
  return 0;
}
CUresult cuMemFree_v2(CUdeviceptr Ptr) {
  free((void *)(uintptr_t)Ptr);
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr Dst, const void *Src, size_t Bytes) {
  memcpy((void *)(uintptr_t)Dst, Src, Bytes);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *Dst, CUdeviceptr Src, size_t Bytes) {
  memcpy(Dst, (const void *)(uintptr_t)Src, Bytes);
  return 0;
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr Dst, CUdeviceptr Src, size_t Bytes) {
  memmove((void *)(uintptr_t)Dst, (const void *)(uintptr_t)Src, Bytes);
  return 0;
}
CUresult cuMemHostAlloc(void **Ptr, size_t Bytes, unsigned Flags) {
  (void)Flags;
  *Ptr = calloc(1, Bytes);
  return *Ptr ? 0 : 2;
}
CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *Dev, void *Host, unsigned Flags) {
  (void)Flags;
  *Dev = (CUdeviceptr)(uintptr_t)Host;
  return 0;
}
CUresult cuMemFreeHost(void *Ptr) {
  free(Ptr);
  return 0;
}
CUresult cuLaunchKernel(void *Fn, unsigned Gx, unsigned Gy, unsigned Gz, unsigned Bx, unsigned By,
                        unsigned Bz, unsigned Shared, void *Stream, void **Params, void **Extra) {
  (void)Gy, (void)Gz, (void)By, (void)Bz, (void)Stream, (void)Extra;
  char Line[256];
  int N = snprintf(Line, sizeof Line, "launch %s grid=%u block=%u shared=%u", (const char *)Fn, Gx,
                   Bx, Shared);
  if (strstr((const char *)Fn, "family") && N > 0 && N < (int)sizeof Line) {
    /* A family kernel's shape, passed by value: its first two sizes. */
    const uint64_t *Shape = (const uint64_t *)Params[4];
    snprintf(Line + N, sizeof Line - N, " sizes=%llu,%llu", (unsigned long long)Shape[0],
             (unsigned long long)Shape[1]);
  }
  logLine(Line);
  const char *Key = getenv("GATHERJIT_FAKE_CUDA_KEY");
  if (Key && Params) {
    const CUdeviceptr Status = *(const CUdeviceptr *)Params[3];
    *(uint64_t *)(uintptr_t)Status = strtoull(Key, NULL, 10);
  }
  return 0;
}
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuStreamSynchronize(void *Stream) {
  (void)Stream;
  return 0;
}
static int Event;
CUresult cuEventCreate(void **E, unsigned Flags) {
  (void)Flags;
  *E = &Event;
  return 0;
}
CUresult cuEventRecord(void *E, void *Stream) {
  (void)E, (void)Stream;
  return 0;
}
CUresult cuEventSynchronize(void *E) {
  (void)E;
  return 0;
}
CUresult cuEventElapsedTime(float *Ms, void *A, void *B) {
  (void)A, (void)B;
  *Ms = 0.25f;
  return 0;
}
CUresult cuEventDestroy_v2(void *E) {
  (void)E;
  return 0;
}
CUresult cuGetErrorName(CUresult R, const char **Name) {
  *Name = R == 222   ? "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
          : R == 218 ? "CUDA_ERROR_INVALID_PTX"
                     : "CUDA_ERROR_FAKE";
  return 0;
}
