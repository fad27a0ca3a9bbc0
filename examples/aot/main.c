/* A plain C program running kernels that `gatherjit aot` compiled ahead of
 * time (see CMakeLists.txt): no LLVM and no gatherjit library at run time.
 *
 * It prints each kernel's return value and output, one line each, for the
 * data below; tests/examples check these lines against the interpreter. */
#include "kernels.h"

#include <stdio.h>
#include <string.h>

static void print_floats(const char *name, int64_t status, const float *values, size_t n) {
  printf("%s: %lld |", name, (long long)status);
  for (size_t i = 0; i < n; ++i)
    printf(" %.9g", values[i]);
  printf("\n");
}

int main(void) {
  /* ONNX GatherElements, the operator page's first example (axis = 1). */
  const float seed_data[4] = {1, 2, 3, 4};
  int64_t seed_indices[4] = {0, 0, 1, 0};
  float seed_out[4];
  print_floats("onnx_seed", onnx_seed(seed_data, seed_indices, seed_out), seed_out, 4);

  /* Under Check, a bad index returns 1 + its position: here position 2. */
  seed_indices[2] = 2;
  printf("onnx_seed_bad_index: %lld\n", (long long)onnx_seed(seed_data, seed_indices, seed_out));

  /* An embedding lookup: 16 rows of a 1000 x 64 table. */
  static float table[1000 * 64];
  int32_t ids[16];
  static float rows[16 * 64], halves[16 * 64];
  for (int i = 0; i < 1000 * 64; ++i)
    table[i] = (float)(i % 997) * 0.5f;
  for (int i = 0; i < 16; ++i)
    ids[i] = (i * 379 + 11) % 1000 - (i % 3 == 0 ? 1000 : 0); /* some negative */
  print_floats("embedding", embedding(table, ids, rows), rows, 16 * 64);

  /* The same work split at a row boundary, as a thread pool would. */
  const int64_t mid = embedding_rows / 2;
  int64_t r = embedding_range(table, ids, halves, 0, mid);
  if (r == 0)
    r = embedding_range(table, ids, halves, mid, embedding_rows);
  printf("embedding_split: %lld %s\n", (long long)r,
         memcmp(rows, halves, sizeof rows) == 0 ? "same" : "different");
  return 0;
}
