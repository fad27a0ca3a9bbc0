/*===- gatherjit/gatherjit.h - The C embedding API ------------------------===*/
/** \file
 * A stable C interface to gatherjit's runtime: describe a gather, compile
 * it to a specialized native kernel (cached by its canonical form), run it.
 * It wraps the C++ API (gatherjit/Runtime.h); no C++ type crosses it.
 *
 *   gj_runtime *rt;
 *   gj_runtime_create(NULL, &rt);
 *   gj_descriptor desc;
 *   gj_onnx_gather_elements(&data, &indices, 1, &desc);
 *   gj_kernel *k;
 *   if (gj_compile(rt, &desc, &k) != GJ_OK) puts(gj_last_error());
 *   gj_kernel_run(k, input, idx, output);
 *   gj_kernel_release(k);
 *   gj_runtime_destroy(rt);
 *
 * Every function returning gj_status sets a message for the calling thread,
 * read with gj_last_error(). Handles are safe to use from many threads; a
 * kernel stays valid after its runtime is destroyed.
 *===----------------------------------------------------------------------===*/
#ifndef GATHERJIT_GATHERJIT_H
#define GATHERJIT_GATHERJIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GJ_MAX_RANK 8

typedef enum gj_status {
  GJ_OK = 0,
  GJ_INVALID_ARGUMENT = 1,   /* the descriptor or an argument is malformed */
  GJ_UNSUPPORTED = 2,        /* well formed but not supported */
  GJ_INDEX_OUT_OF_RANGE = 3, /* an index failed the Check policy */
  GJ_INTERNAL = 4,           /* a bug or an environment failure */
  GJ_IO_ERROR = 5            /* the system refused a read or write */
} gj_status;

/* DirectML's element types, then ONNX's others. */
typedef enum gj_data_type {
  GJ_FLOAT64,
  GJ_FLOAT32,
  GJ_FLOAT16,
  GJ_INT64,
  GJ_INT32,
  GJ_INT16,
  GJ_INT8,
  GJ_UINT64,
  GJ_UINT32,
  GJ_UINT16,
  GJ_UINT8,
  GJ_BFLOAT16,
  GJ_BOOL,
  GJ_COMPLEX64,
  GJ_COMPLEX128,
  GJ_OPAQUE /* opaque_bytes per element */
} gj_data_type;

/* GJ_GATHER_ND is DML_GATHER_ND_OPERATOR_DESC, and DML_GATHER_ND1 with
 * batch_dimension_count > 0. */
typedef enum gj_operator { GJ_GATHER_ELEMENTS = 0, GJ_GATHER = 1, GJ_GATHER_ND = 2 } gj_operator;

/* Out-of-range indices (after negative wrap-around): an error naming the
 * first one (ONNX), or clamped into range (DirectML); or numpy's "clip",
 * which does not wrap negative indices (they read element 0). */
typedef enum gj_oob_policy { GJ_OOB_CHECK = 0, GJ_OOB_CLAMP = 1, GJ_OOB_CLIP = 2 } gj_oob_policy;

typedef enum gj_opt_level { GJ_O0 = 0, GJ_O1 = 1, GJ_O2 = 2, GJ_O3 = 3 } gj_opt_level;

/* Like DML_TENSOR_DESC. Strides are in elements; has_strides = 0 means
 * packed row-major. total_bytes = 0 means the buffer size is not known. */
typedef struct gj_tensor_desc {
  gj_data_type data_type;
  uint32_t rank;
  uint64_t sizes[GJ_MAX_RANK];
  uint64_t strides[GJ_MAX_RANK];
  int has_strides;
  uint64_t total_bytes;
  uint32_t opaque_bytes;
} gj_tensor_desc;

/* DML_GATHER_ELEMENTS_OPERATOR_DESC, DML_GATHER_OPERATOR_DESC or
 * DML_GATHER_ND(1)_OPERATOR_DESC, plus how to validate it. */
typedef struct gj_descriptor {
  gj_operator op;
  gj_tensor_desc input, indices, output;
  uint32_t axis;
  uint32_t index_dimensions; /* GJ_GATHER only */
  gj_oob_policy policy;
  /* ONNX GatherElements: indices may be smaller than the input on the
   * dimensions other than axis (DirectML requires equality). */
  int allow_smaller_indices;
  /* GJ_GATHER_ND only: the meaningful (last) dimensions of the input and
   * indices, and the batch dimensions among them. */
  uint32_t input_dimension_count;
  uint32_t indices_dimension_count;
  uint32_t batch_dimension_count;
} gj_descriptor;

/* When a descriptor's specialized kernel (every size a constant) is
 * compiled; see RuntimeOptions::Specialization in gatherjit/Runtime.h. */
typedef enum gj_specialize {
  GJ_SPECIALIZE_ADAPTIVE = 0, /* default: a new shape runs at once (its
                                 family's kernel or the generic loop); hot
                                 shapes are specialized on a background
                                 thread, very large ones by gj_compile */
  GJ_SPECIALIZE_COMPILE = 1,  /* gj_compile specializes before it returns */
  GJ_SPECIALIZE_NEVER = 2     /* the generic loop only (epilogues compile;
                                 on a device, family kernels only) */
} gj_specialize;

/* The tier of the code a kernel runs now. */
typedef enum gj_kernel_tier {
  GJ_TIER_GENERIC = 0,
  GJ_TIER_FAMILY = 1,
  GJ_TIER_SPECIALIZED = 2
} gj_kernel_tier;

typedef struct gj_runtime_options {
  gj_opt_level opt_level;   /* default GJ_O2 */
  uint64_t cache_capacity;  /* kernels kept in memory; default 1048576 */
  uint32_t threads;         /* 0 (default): all cores; 1: caller's thread */
  const char *cache_dir;    /* persistent kernel cache, or NULL */
  uint32_t no_quick_tier;   /* nonzero: compile small kernels at O2 from the
                               start (RuntimeOptions::QuickTier = false) */
  uint64_t cache_dir_limit; /* bytes cache_dir keeps, least recently used
                               removed past it; default 256 MiB, 0: no limit */
  gj_specialize specialize; /* default GJ_SPECIALIZE_ADAPTIVE */
  uint64_t cache_bytes;     /* bytes of code and state kept in memory, least
                               recently used evicted past it; default 64 MiB */
  /* An epilogue is compiled by clang in a helper process (gatherjit-epilogue),
   * so that a source that crashes clang or exhausts it fails that compile
   * with GJ_INVALID_ARGUMENT and the host goes on. */
  double epilogue_seconds;      /* wall time of one epilogue compile; default 30 */
  uint64_t epilogue_memory;     /* the helper's address space; default 2 GiB */
  uint32_t epilogue_in_process; /* nonzero: compile in this process, no limits */
  uint32_t epilogue_checked;    /* nonzero: every epilogue compiled checked (see
                                   gj_epilogue.checked) */
  /* Where kernels run: NULL or "cpu", or "cuda" / "cuda:N", a CUDA device
   * through its driver, loaded at run time (RuntimeOptions::Device):
   * gj_runtime_create answers GJ_UNSUPPORTED without one. Its kernels take
   * device pointers (gj_kernel_run_stream picks the stream). */
  const char *device;
} gj_runtime_options;

typedef struct gj_cache_stats {
  uint64_t hits, misses, evictions, entries, live_kernels;
  uint64_t disk_loads, disk_stores;
  double compile_ms;
  uint64_t upgrades;               /* quick-tier kernels recompiled at the runtime's level */
  uint64_t specializations;        /* kernels specialized in the background */
  uint64_t specialized_at_compile; /* misses specialized before gj_compile returned */
  uint64_t generic_entries;        /* cached kernels running the generic loop now */
  uint64_t cache_bytes;            /* bytes the memory cache charges now */
  uint64_t family_kernels;         /* family kernels compiled (sizes as arguments) */
  uint64_t family_entries;         /* cached kernels running a family kernel now */
} gj_cache_stats;

typedef struct gj_runtime gj_runtime;
typedef struct gj_kernel gj_kernel;

/* The message of the last call on this thread that did not return GJ_OK
 * ("" if none); valid until the next gatherjit call on this thread. */
const char *gj_last_error(void);
/* After GJ_INDEX_OUT_OF_RANGE: the row-major position in the indices
 * tensor of the first out-of-range index. */
uint64_t gj_last_error_position(void);
const char *gj_status_name(gj_status status);
/* "FLOAT32", ...; NULL for a value outside the enumeration. */
const char *gj_data_type_name(gj_data_type type);

/* A packed tensor of \p rank dimensions (rank <= GJ_MAX_RANK). */
gj_tensor_desc gj_tensor(gj_data_type type, uint32_t rank, const uint64_t *sizes);
/* Bytes a buffer for \p tensor must hold (its sizes and strides). */
uint64_t gj_tensor_bytes(const gj_tensor_desc *tensor);

/* Descriptors from an ONNX node's shapes: GatherElements-11/13 and
 * Gather-13 (data and indices packed; axis may be negative). The output
 * is filled in; policy is GJ_OOB_CHECK. */
gj_status gj_onnx_gather_elements(const gj_tensor_desc *data, const gj_tensor_desc *indices,
                                  int64_t axis, gj_descriptor *out);
gj_status gj_onnx_gather(const gj_tensor_desc *data, const gj_tensor_desc *indices, int64_t axis,
                         gj_descriptor *out);
/* ONNX GatherND-11/12/13 with batch_dims (0 for GatherND-11). */
gj_status gj_onnx_gather_nd(const gj_tensor_desc *data, const gj_tensor_desc *indices,
                            int64_t batch_dims, gj_descriptor *out);

void gj_runtime_options_init(gj_runtime_options *options);
/* \p options may be NULL for the defaults. */
gj_status gj_runtime_create(const gj_runtime_options *options, gj_runtime **out);
void gj_runtime_destroy(gj_runtime *runtime);
void gj_runtime_stats(const gj_runtime *runtime, gj_cache_stats *out);
/* Waits until the runtime's background thread has compiled every
 * specialization and upgrade asked for so far. */
void gj_runtime_wait_background(gj_runtime *runtime);

/* Validates and compiles (or finds in the cache). */
gj_status gj_compile(gj_runtime *runtime, const gj_descriptor *desc, gj_kernel **out);
/* A fused epilogue (see Epilogue in gatherjit/Descriptor.h): C source that
 * clang compiles (in a helper process, see epilogue_seconds) and the kernel inlines, applied to
 * every gathered element (OUT f(IN x)) or row (void f(const IN *row, OUT *out)), optionally with a
 * last const P *params. The descriptor's output has the epilogue's OUT type and, for a row
 * epilogue, its own row length. */
typedef struct gj_epilogue {
  const char *source;    /* NUL-terminated C source */
  const char *function;  /* the function's name */
  const char *file_name; /* named in diagnostics; NULL: "epilogue.c" */
  const void *params;    /* params_size bytes params points at, copied */
  size_t params_size;
  /* Nonzero: checked mode (Epilogue::Checked). Every memory access of the
   * epilogue is checked at run time; one outside its row, output row,
   * parameters and own variables (or an integer division by zero) makes
   * gj_kernel_run answer GJ_INVALID_ARGUMENT, with the output incomplete.
   * Integer-to-pointer casts, calls through function pointers and
   * recursion are refused by gj_compile_epilogue. */
  uint32_t checked;
} gj_epilogue;
/* gj_compile with \p epilogue fused into the kernel. A bad epilogue is
 * GJ_INVALID_ARGUMENT with one line "FILE:LINE:COL: error: ..."; a build
 * without clang's libraries answers GJ_UNSUPPORTED. */
gj_status gj_compile_epilogue(gj_runtime *runtime, const gj_descriptor *desc,
                              const gj_epilogue *epilogue, gj_kernel **out);
/* Runs on buffers holding the descriptor's tensors; large kernels are split
 * across the runtime's threads. Aliasing: an output whose bytes overlap the
 * input's or the indices' (the same buffer or any part of it, as the
 * descriptors' sizes and strides span them) is computed through a
 * temporary and copied back, so the result equals that of disjoint buffers
 * (gj_kernel_run_rows answers GJ_INVALID_ARGUMENT for such buffers). */
gj_status gj_kernel_run(const gj_kernel *kernel, const void *input, const void *indices,
                        void *output);
/* gj_kernel_run on \p stream (a CUstream; NULL: the default stream) for a
 * device runtime's kernel, which waits for the stream; a CPU kernel ignores
 * the stream. */
gj_status gj_kernel_run_stream(const gj_kernel *kernel, const void *input, const void *indices,
                               void *output, void *stream);
/* Starts a device runtime's kernel on \p stream (a CUstream; NULL: the
 * default stream) and returns without waiting (Kernel::launchOnStream): the
 * buffers must stay as they are until gj_kernel_finish_stream. A CPU kernel
 * runs at once, as gj_kernel_run. */
gj_status gj_kernel_launch_stream(const gj_kernel *kernel, const void *input, const void *indices,
                                  void *output, void *stream);
/* Waits for \p stream: GJ_INDEX_OUT_OF_RANGE names the first bad index of
 * the first of the kernel's launches on it since the last finish, in launch
 * order, that found one (Check); GJ_OK otherwise, and for a CPU kernel. */
gj_status gj_kernel_finish_stream(const gj_kernel *kernel, void *stream);
/* Rows [begin, end) of the outermost loop, on the calling thread. */
gj_status gj_kernel_run_rows(const gj_kernel *kernel, const void *input, const void *indices,
                             void *output, uint64_t begin, uint64_t end);
uint64_t gj_kernel_rows(const gj_kernel *kernel);
/* The native symbol's name, as profilers and debuggers show it. */
const char *gj_kernel_symbol(const gj_kernel *kernel);
/* The tier of the code the kernel runs now (it moves up by itself). */
gj_kernel_tier gj_kernel_tier_of(const gj_kernel *kernel);
void gj_kernel_release(gj_kernel *kernel);

#ifdef __cplusplus
}
#endif

#endif
