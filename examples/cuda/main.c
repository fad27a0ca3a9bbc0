/* A C program running a kernel that `gatherjit aot` compiled for CUDA
 * devices (see CMakeLists.txt) through the CUDA driver API alone: the
 * driver (libcuda.so.1, or the library $GATHERJIT_CUDA_DRIVER names) is
 * opened at run time, the PTX module loaded, the operands copied to the
 * device, the kernel launched as kernels.h says, and the output checked
 * against a plain loop. Exits 0 if it matches, 1 if not, 77 where there is
 * no driver or device (a skip). */
#include "kernels.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The driver API's few declarations this program needs (cuda.h). */
typedef int CUresult;
typedef unsigned long long CUdeviceptr;
static CUresult (*cuInit)(unsigned);
static CUresult (*cuDeviceGet)(int *, int);
static CUresult (*cuDevicePrimaryCtxRetain)(void **, int);
static CUresult (*cuCtxSetCurrent)(void *);
static CUresult (*cuModuleLoadDataEx)(void **, const void *, unsigned, int *, void **);
static CUresult (*cuModuleGetFunction)(void **, void *, const char *);
static CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
static CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
static CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
static CUresult (*cuLaunchKernel)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  unsigned, unsigned, void *, void **, void **);
static CUresult (*cuCtxSynchronize)(void);

#define CHECK(call)                                                                                \
  do {                                                                                             \
    CUresult r_ = (call);                                                                          \
    if (r_ != 0) {                                                                                 \
      fprintf(stderr, "%s failed: %d\n", #call, r_);                                               \
      return r_ == 100 || r_ == 34 ? 77 : 1;                                                       \
    }                                                                                              \
  } while (0)

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) == (size_t)n)
    text[n] = '\0';
  fclose(f);
  return text;
}

int main(int argc, char **argv) {
  /* The PTX beside the program's build, or the file named first. */
  const char *ptx_path = argc > 1 ? argv[1] : KERNELS_PTX;
  const char *named = getenv("GATHERJIT_CUDA_DRIVER");
  void *lib = dlopen(named && *named ? named : "libcuda.so.1", RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "no CUDA driver: skipped\n");
    return 77;
  }
#define LOAD(fn, sym) *(void **)(&fn) = dlsym(lib, sym)
  LOAD(cuInit, "cuInit");
  LOAD(cuDeviceGet, "cuDeviceGet");
  LOAD(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  LOAD(cuCtxSetCurrent, "cuCtxSetCurrent");
  LOAD(cuModuleLoadDataEx, "cuModuleLoadDataEx");
  LOAD(cuModuleGetFunction, "cuModuleGetFunction");
  LOAD(cuMemAlloc, "cuMemAlloc_v2");
  LOAD(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
  LOAD(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
  LOAD(cuLaunchKernel, "cuLaunchKernel");
  LOAD(cuCtxSynchronize, "cuCtxSynchronize");
  if (!cuInit || !cuModuleLoadDataEx || !cuLaunchKernel) {
    fprintf(stderr, "not a CUDA driver\n");
    return 1;
  }
  int dev;
  void *ctx, *module, *fn;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  char *ptx = slurp(ptx_path);
  if (!ptx) {
    fprintf(stderr, "cannot read %s\n", ptx_path);
    return 1;
  }
  CHECK(cuModuleLoadDataEx(&module, ptx, 0, NULL, NULL));
  CHECK(cuModuleGetFunction(&fn, module, embedding_ENTRY));

  /* 4096 rows of a 1000 x 64 table, some ids negative (from the end). */
  static float table[1000 * 64], rows[4096 * 64], want[4096 * 64];
  static int64_t ids[4096];
  for (int i = 0; i < 1000 * 64; ++i)
    table[i] = (float)(i % 997) * 0.5f;
  for (int i = 0; i < 4096; ++i)
    ids[i] = (i * 379 + 11) % 1000 - (i % 3 == 0 ? 1000 : 0);
  for (int i = 0; i < 4096; ++i)
    memcpy(&want[i * 64], &table[(ids[i] < 0 ? ids[i] + 1000 : ids[i]) * 64], 64 * sizeof(float));

  CUdeviceptr in, idx, out, status;
  const uint64_t none = UINT64_MAX;
  uint64_t key = 0;
  CHECK(cuMemAlloc(&in, embedding_INPUT_BYTES));
  CHECK(cuMemAlloc(&idx, embedding_INDICES_BYTES));
  CHECK(cuMemAlloc(&out, embedding_OUTPUT_BYTES));
  CHECK(cuMemAlloc(&status, sizeof none));
  CHECK(cuMemcpyHtoD(in, table, embedding_INPUT_BYTES));
  CHECK(cuMemcpyHtoD(idx, ids, embedding_INDICES_BYTES));
  CHECK(cuMemcpyHtoD(status, &none, sizeof none));
  void *args[] = {&in, &idx, &out, &status}; /* embedding_PARAMS, in order */
  CHECK(cuLaunchKernel(fn, embedding_GRID, 1, 1, embedding_BLOCK, 1, 1, 0, NULL, args, NULL));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(rows, out, embedding_OUTPUT_BYTES));
  CHECK(cuMemcpyDtoH(&key, status, sizeof key));
  if (key != UINT64_MAX) {
    printf("an index is out of range: key %llu\n", (unsigned long long)key);
    return 1;
  }
  const int same = memcmp(rows, want, sizeof want) == 0;
  printf("embedding on the device: %s\n", same ? "matches" : "DIFFERS");
  return same ? 0 : 1;
}
