/* A C program running kernels that `gatherjit aot` compiled for CUDA
 * devices (see CMakeLists.txt) through the CUDA driver API alone: the
 * driver (libcuda.so.1, or the library $GATHERJIT_CUDA_DRIVER names) is
 * opened at run time, each PTX module loaded, the operands copied to the
 * device, the kernel launched as its header says, and the output checked
 * against a plain loop: an embedding lookup, and where gatherjit was built
 * with epilogues the same lookup from a FLOAT16 table with an epilogue
 * fused in. Exits 0 if they match, 1 if not, 77 where there is no driver
 * or device (a skip). */
#include "kernels.h"
#ifdef FUSED_PTX
#include "fused.h"
#endif

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

/* Loads the PTX module at PATH and its kernel ENTRY into *FN. */
static int load(const char *path, const char *entry, void **fn) {
  char *ptx = slurp(path);
  if (!ptx) {
    fprintf(stderr, "cannot read %s\n", path);
    return 1;
  }
  void *module;
  CHECK(cuModuleLoadDataEx(&module, ptx, 0, NULL, NULL));
  free(ptx);
  CHECK(cuModuleGetFunction(fn, module, entry));
  return 0;
}

/* Runs FN (a header's NAME_ENTRY, launched on GRID blocks of BLOCK
 * threads) on the operands, copied to the device, and copies its output
 * back into OUT; fails if it reports an index out of range. */
static int launch(void *fn, unsigned grid, unsigned block, const void *in, size_t in_bytes,
                  const void *ids, size_t ids_bytes, void *out, size_t out_bytes) {
  CUdeviceptr d_in, d_ids, d_out, d_status;
  const uint64_t none = UINT64_MAX;
  uint64_t key = 0;
  CHECK(cuMemAlloc(&d_in, in_bytes));
  CHECK(cuMemAlloc(&d_ids, ids_bytes));
  CHECK(cuMemAlloc(&d_out, out_bytes));
  CHECK(cuMemAlloc(&d_status, sizeof none));
  CHECK(cuMemcpyHtoD(d_in, in, in_bytes));
  CHECK(cuMemcpyHtoD(d_ids, ids, ids_bytes));
  CHECK(cuMemcpyHtoD(d_status, &none, sizeof none));
  void *args[] = {&d_in, &d_ids, &d_out, &d_status}; /* NAME_PARAMS, in order */
  CHECK(cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, NULL, args, NULL));
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(out, d_out, out_bytes));
  CHECK(cuMemcpyDtoH(&key, d_status, sizeof key));
  if (key != UINT64_MAX) {
    printf("an index is out of range: key %llu\n", (unsigned long long)key);
    return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  /* The PTX beside the program's build, or the files named: kernels.ptx,
   * then fused.ptx. */
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
  int dev, rc;
  void *ctx, *fn;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));

  /* 4096 rows of a 1000 x 64 table, some ids negative (from the end). */
  static float table[1000 * 64], rows[4096 * 64], want[4096 * 64];
  static int64_t ids[4096];
  for (int i = 0; i < 1000 * 64; ++i)
    table[i] = (float)(i % 997) * 0.5f;
  for (int i = 0; i < 4096; ++i)
    ids[i] = (i * 379 + 11) % 1000 - (i % 3 == 0 ? 1000 : 0);
  for (int i = 0; i < 4096; ++i)
    memcpy(&want[i * 64], &table[(ids[i] < 0 ? ids[i] + 1000 : ids[i]) * 64], 64 * sizeof(float));
  if ((rc = load(ptx_path, embedding_ENTRY, &fn)) ||
      (rc = launch(fn, embedding_GRID, embedding_BLOCK, table, embedding_INPUT_BYTES, ids,
                   embedding_INDICES_BYTES, rows, embedding_OUTPUT_BYTES)))
    return rc;
  int same = memcmp(rows, want, sizeof want) == 0;
  printf("embedding on the device: %s\n", same ? "matches" : "DIFFERS");
  if (!same)
    return 1;

#ifdef FUSED_PTX
  /* The same lookup from a FLOAT16 table (its values exact in both
   * formats), each element scaled by a quarter in the kernel. */
  static _Float16 halves[1000 * 64];
  for (int i = 0; i < 1000 * 64; ++i)
    halves[i] = (_Float16)table[i];
  for (int i = 0; i < 4096 * 64; ++i)
    want[i] *= 0.25f;
  memset(rows, 0, sizeof rows);
  if ((rc = load(argc > 2 ? argv[2] : FUSED_PTX, dequantized_ENTRY, &fn)) ||
      (rc = launch(fn, dequantized_GRID, dequantized_BLOCK, halves, dequantized_INPUT_BYTES, ids,
                   dequantized_INDICES_BYTES, rows, dequantized_OUTPUT_BYTES)))
    return rc;
  same = memcmp(rows, want, sizeof want) == 0;
  printf("dequantized embedding (an epilogue fused) on the device: %s\n",
         same ? "matches" : "DIFFERS");
#endif
  return same ? 0 : 1;
}
