/* Embedding gatherjit's runtime from C: an embedding lookup (ONNX Gather)
 * compiled once and run, a bad index reported with its position, a bad
 * descriptor rejected with a message. */
#include "gatherjit/gatherjit.h"

#include <stdio.h>

int main(void) {
  gj_runtime_options options;
  gj_runtime_options_init(&options);
  options.threads = 1;
  gj_runtime *rt;
  if (gj_runtime_create(&options, &rt) != GJ_OK) {
    fprintf(stderr, "error: %s\n", gj_last_error());
    return 1;
  }

  /* A 5 x 3 table, 4 row ids: output 4 x 3. */
  const uint64_t table_shape[2] = {5, 3}, ids_shape[1] = {4};
  gj_tensor_desc table = gj_tensor(GJ_FLOAT32, 2, table_shape);
  gj_tensor_desc ids = gj_tensor(GJ_INT64, 1, ids_shape);
  gj_descriptor desc;
  gj_kernel *kernel;
  if (gj_onnx_gather(&table, &ids, 0, &desc) != GJ_OK || gj_compile(rt, &desc, &kernel) != GJ_OK) {
    fprintf(stderr, "error: %s\n", gj_last_error());
    return 1;
  }
  float data[15], out[12];
  for (int i = 0; i < 15; ++i)
    data[i] = (float)i;
  int64_t rows[4] = {4, 0, -1, 2};
  if (gj_kernel_run(kernel, data, rows, out) != GJ_OK)
    return 1;
  printf("kernel %s:", gj_kernel_symbol(kernel));
  int wrong = 0;
  for (int i = 0; i < 12; ++i) {
    const int64_t row = rows[i / 3] < 0 ? rows[i / 3] + 5 : rows[i / 3];
    wrong += out[i] != data[row * 3 + i % 3];
    printf(" %g", out[i]);
  }
  printf("%s\n", wrong ? " (wrong)" : "");

  rows[1] = 7;
  gj_status s = gj_kernel_run(kernel, data, rows, out);
  const uint64_t bad_position = gj_last_error_position();
  printf("bad index: %s at position %llu: %s\n", gj_status_name(s),
         (unsigned long long)bad_position, gj_last_error());

  desc.axis = 3;
  gj_kernel *rejected = NULL;
  gj_status r = gj_compile(rt, &desc, &rejected);
  printf("bad descriptor: %s: %s\n", gj_status_name(r), gj_last_error());

  gj_cache_stats stats;
  gj_runtime_stats(rt, &stats);
  printf("cache: %llu misses, %.3f ms compiling\n", (unsigned long long)stats.misses,
         stats.compile_ms);
  gj_kernel_release(kernel);
  gj_runtime_destroy(rt);
  return !wrong && s == GJ_INDEX_OUT_OF_RANGE && bad_position == 1 && r == GJ_INVALID_ARGUMENT &&
                 rejected == NULL
             ? 0
             : 1;
}
