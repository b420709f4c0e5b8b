/* ptxdsl's C ABI: layer norm and RMS norm, forward and backward, on raw device pointers.
 *
 * Plain C (C99 and C++), in libptxdsl.so (CMake target ptxdsl::c), which exports only the
 * ptxdsl_* symbols below and needs no CUDA toolkit: the driver is loaded at run time. Every
 * function returns a ptxdsl_status and never throws or aborts; on an error,
 * ptxdsl_last_error() gives this thread's message, which names the argument, the value and what
 * is allowed. Scalars are fixed-width integers, floats and pointers, and enums are passed as
 * int32_t, so that a foreign-function caller (Python's ctypes) declares them as plain c_int32,
 * c_int64, c_float and c_void_p. docs/runtime.md, "C ABI", is the full description. */
#ifndef PTXDSL_PTXDSL_H
#define PTXDSL_PTXDSL_H

#include <stddef.h>
#include <stdint.h>

#if defined(PTXDSL_C_BUILDING)
#define PTXDSL_C_API __attribute__((visibility("default")))
#else
#define PTXDSL_C_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; ptxdsl_version() gives the library's, in the same encoding. */
#define PTXDSL_VERSION_MAJOR 0
#define PTXDSL_VERSION_MINOR 1
#define PTXDSL_VERSION_PATCH 0
#define PTXDSL_VERSION \
  (PTXDSL_VERSION_MAJOR * 10000 + PTXDSL_VERSION_MINOR * 100 + PTXDSL_VERSION_PATCH)

/* The widest row the norms take, in elements. */
#define PTXDSL_MAX_WIDTH 262144

/* What a call returned. */
typedef enum ptxdsl_status {
  PTXDSL_SUCCESS = 0,
  PTXDSL_ERROR_INVALID_ARGUMENT = 1, /* a null, misaligned, short or host pointer, a bad enum... */
  PTXDSL_ERROR_UNSUPPORTED = 2,      /* valid, but not supported yet */
  PTXDSL_ERROR_NO_DRIVER = 3,        /* libcuda.so.1 did not load, or cuInit failed */
  PTXDSL_ERROR_DRIVER = 4,           /* a CUDA driver call failed (the message has its CUresult) */
  PTXDSL_ERROR_OUT_OF_MEMORY = 5,    /* device or host memory ran out */
  PTXDSL_ERROR_INTERNAL = 6          /* a bug in ptxdsl: please report the message */
} ptxdsl_status;

/* Element types of rows (x, y, dy, dx) and of weights (w, b, dw, db). */
typedef enum ptxdsl_dtype { PTXDSL_F32 = 0, PTXDSL_F16 = 1, PTXDSL_BF16 = 2 } ptxdsl_dtype;

/* Which norm a query is about. */
typedef enum ptxdsl_norm { PTXDSL_LAYER_NORM = 0, PTXDSL_RMS_NORM = 1 } ptxdsl_norm;

/* A CUDA stream: a CUstream (or cudaStream_t) passes as is, NULL is the legacy default stream.
 * Declared as cuda.h declares it, so that this header needs no CUDA toolkit. */
typedef struct CUstream_st* ptxdsl_stream;

/* PTXDSL_VERSION of the library (major * 10000 + minor * 100 + patch). */
PTXDSL_C_API int32_t ptxdsl_version(void);
/* "PTXDSL_ERROR_INVALID_ARGUMENT" for its code; "unknown status" for a value not in the enum. */
PTXDSL_C_API const char* ptxdsl_status_name(int32_t status);
/* This thread's message of its last call that failed; "" when its last call succeeded. Valid
 * until this thread's next call into the library; a message longer than 4095 bytes (a long JIT
 * log) is cut there, ending in " [... truncated]". */
PTXDSL_C_API const char* ptxdsl_last_error(void);
/* Loads the CUDA driver: PTXDSL_SUCCESS, or PTXDSL_ERROR_NO_DRIVER with the reason. The other
 * calls load it themselves; this one asks without doing anything else. */
PTXDSL_C_API int32_t ptxdsl_init(void);
/* How many CUDA devices the driver sees. */
PTXDSL_C_API int32_t ptxdsl_device_count(int32_t* count);

/* Every norm call takes:
 *   device        the CUDA device ordinal the pointers and the stream belong to (its primary
 *                 context is used, as the CUDA runtime and frameworks built on it do)
 *   dtype         ptxdsl_dtype of x, y, dy, dx
 *   weight_dtype  ptxdsl_dtype of w, b, dw, db: the dtype, or PTXDSL_F32 with 16-bit rows
 *   batch         rows, in [0, 2147483647]; 0 returns at once (after checking the enums, the
 *                 ranges and that the pointers left NULL choose a variant)
 *   width         elements a row, in [1, PTXDSL_MAX_WIDTH]
 *   stride        elements from one row's start to the next (x, y, dy, dx), at least width; 0
 *                 means width
 *   stream        where the launches are enqueued; nothing waits for the device, so calls may be
 *                 captured into a CUDA graph (ptxdsl_norm_prepare first keeps the JIT out of it)
 * Pointers are device memory the driver knows (cudaMalloc, cuMemAlloc, pools, managed or pinned);
 * each aligned to its element. Rows and weights 16-byte aligned, with a stride of a multiple of 16
 * bytes, are read in 16-byte vectors; others in the widest vectors they allow. mean and rstd are
 * float, one per row. Outputs may not overlap any other argument (no in-place calls).
 * Every argument is checked before the driver is loaded, except what only the driver knows: that
 * the device exists and that the pointers are memory it can address.
 * The objects behind the calls are built (and their kernels JIT-compiled) on the first call per
 * (device, norm, dtype, weight dtype, width) and kept until the process exits; calls from any
 * thread are safe, and calls for one such object are serialized while they enqueue. */

/* y = (x - mean) * rstd * w + b per row; writes mean and rstd. eps, added to the variance, is a
 * finite number >= 0 (NaN, infinities and negative numbers are refused).
 * w NULL: no affine (y is the normalized row; b must be NULL too); b NULL with a w: w alone.
 * residual, residual_out: the fused residual add, both or neither (NULL): h = x + residual, in
 * the dtype, is written to residual_out and normalized (in f32, before h is rounded); the
 * backward then takes residual_out as its x, and its dx is the residual's gradient too (add the
 * gradient residual_out has from its other uses). residual_out may not overlap residual or x. */
PTXDSL_C_API int32_t ptxdsl_layer_norm_forward(int32_t device, int32_t dtype, int32_t weight_dtype,
                                               int64_t batch, int64_t width, int64_t stride,
                                               const void* x, const void* w, const void* b,
                                               const void* residual, void* residual_out, void* y,
                                               float* mean, float* rstd, float eps,
                                               ptxdsl_stream stream);

/* dx, and dw, db summed over the batch, from dy, x, w and the forward's mean and rstd.
 * w NULL (a forward without w): dw and db must be NULL. dw and db NULL: dx alone; db NULL with a
 * dw: dx and dw (a forward without b).
 * dh: NULL, or after a forward with the residual add, h's gradient from its other uses (the
 * dtype, rows `stride` apart), added into dx in the same pass; x is then the forward's h.
 * workspace: NULL, or device memory of at least workspace_bytes (ptxdsl_norm_workspace_bytes),
 * 16-byte aligned, used only by this call's launches (the caller orders reuse). NULL takes it
 * from the library's stream-ordered pool on the call's stream, for this call alone. */
PTXDSL_C_API int32_t ptxdsl_layer_norm_backward(int32_t device, int32_t dtype, int32_t weight_dtype,
                                                int64_t batch, int64_t width, int64_t stride,
                                                const void* dy, const void* dh, const void* x,
                                                const void* w, const float* mean, const float* rstd,
                                                void* dx, void* dw, void* db, void* workspace,
                                                uint64_t workspace_bytes, ptxdsl_stream stream);

/* y = x * rstd * w per row; writes rstd. eps (added to the mean square), residual and
 * residual_out as for the layer norm. */
PTXDSL_C_API int32_t ptxdsl_rms_norm_forward(int32_t device, int32_t dtype, int32_t weight_dtype,
                                             int64_t batch, int64_t width, int64_t stride,
                                             const void* x, const void* w, const void* residual,
                                             void* residual_out, void* y, float* rstd, float eps,
                                             ptxdsl_stream stream);

/* dx, and dw summed over the batch, from dy, x, w and the forward's rstd. w NULL: dw must be
 * NULL; dw NULL: dx alone. dh as for the layer norm. */
PTXDSL_C_API int32_t ptxdsl_rms_norm_backward(int32_t device, int32_t dtype, int32_t weight_dtype,
                                              int64_t batch, int64_t width, int64_t stride,
                                              const void* dy, const void* dh, const void* x,
                                              const void* w, const float* rstd, void* dx, void* dw,
                                              void* workspace, uint64_t workspace_bytes,
                                              ptxdsl_stream stream);

/* Bytes of workspace a backward of `batch` rows needs with 16-byte-aligned rows and weights, in
 * *bytes; builds the object for (device, norm, dtype, weight dtype, width) if it is new. Rows or
 * weights that are not aligned select narrower vectors, whose plan may need more: such a call
 * with a smaller workspace is refused with the size it needs (a NULL workspace always fits). */
PTXDSL_C_API int32_t ptxdsl_norm_workspace_bytes(int32_t device, int32_t norm, int32_t dtype,
                                                 int32_t weight_dtype, int64_t width, int64_t batch,
                                                 uint64_t* bytes);

/* Builds and JIT-compiles the forward and backward kernels of (device, norm, dtype, weight dtype,
 * width) for 16-byte-aligned arguments now, so that the first call (or a graph capture) does
 * not. */
PTXDSL_C_API int32_t ptxdsl_norm_prepare(int32_t device, int32_t norm, int32_t dtype,
                                         int32_t weight_dtype, int64_t width);

/* ---- The model options: what a model's norm asks for beyond the plain norm ----
 * docs/runtime.md, "Model options", says what each computes. A zero-initialized struct with its
 * size set is the plain norm:
 *     ptxdsl_norm_options o = {sizeof(ptxdsl_norm_options)};
 *     o.weight_offset = 1.0f;  (Gemma)
 * A later ptxdsl.h appends fields: `size` says how many bytes of them the caller's header has, and
 * fields past it keep their defaults; a library older than the caller's header refuses fields it
 * does not know that are not zero (PTXDSL_ERROR_UNSUPPORTED). Names are those of ptxdsl's command
 * line; a name the library does not know is refused with the list of those it does. Each set of
 * options is its own kernels, built (JIT-compiled) at its first call and kept. */
typedef struct ptxdsl_norm_options {
  uint32_t size; /* sizeof(ptxdsl_norm_options) in the caller's header; at least 36 */
  /* y = x^ * (weight_offset + w) (+ b), the sum in f32 (Gemma: 1); needs w. The backward's dx
   * uses weight_offset + w too; dw is unchanged. */
  float weight_offset;
  /* Where the forward rounds to the row dtype: NULL or "none" (once, y from f32), "llama" (x^
   * rounded to the dtype before * w, as Hugging Face's Llama), "gemma" (once, from f32, as
   * Hugging Face's Gemma). "llama" and "gemma" normalize the residual add's h as stored. */
  const char* casting;
  /* The forward's y in a quantized format: NULL or "none" (y in the dtype), "fp8-e4m3",
   * "fp8-e5m2" (sm_90 and newer), "int8"; "mxfp8", "nvfp4" (sm_100a GPUs; refused elsewhere with
   * the target they need). y then holds one byte an element (nvfp4: two a byte, the first in the
   * low nibble), rows `stride` elements apart as x's: y = q * scale, q = y / scale rounded to
   * nearest even and saturated. With quant_scale per-token, y_scale holds one float a row,
   * max|y| / the format's largest value (448, 57344, 127), 0 for a row of zeros (quant_scale
   * says the other modes). residual_out stays in the dtype. */
  const char* quant;
  /* Per-head rows (a fused QKV buffer without a copy): row r of the row tensors starts at
   * (r / row_groups) * stride + (r % row_groups) * group_stride elements; 0 or 1: none (rows
   * `stride` apart). group_stride: at least width; stride: at least
   * (row_groups - 1) * group_stride + width. mean, rstd and y_scale stay one a row. */
  uint32_t row_groups;
  uint32_t group_stride;
  /* The forward's residual and residual_out hold float (else the dtype); needs them. The
   * backward takes the forward's h in the dtype. */
  int32_t residual_in_f32;
  /* The backward's dw and db bits (a field past PTXDSL_NORM_OPTIONS_MIN_SIZE): NULL or "1" (the
   * same every run on one GPU), "portable" (the same on every GPU: partial rows grouped by the
   * batch alone and summed in a fixed order; docs/kernels.md) or "0" (rows by ticket where
   * faster; the bits vary within f32 rounding). The forward does not read it. */
  const char* deterministic;
  /* The quantized forward's scales (fields past PTXDSL_NORM_OPTIONS_SCALE_OFFSET; the backward
   * does not read them). quant_scale, with fp8-e4m3, fp8-e5m2 and int8: NULL or "per-token"
   * (y_scale one float a row), "static" (quant_scale_in's one float scales every element; no
   * y_scale, NULL) or "group128" (y_scale float [rows][width / 128], row-major, each the max|y|
   * of its 128 elements / the largest value: DeepGEMM's 1x128 activation scales; width a
   * multiple of 128). mxfp8 and nvfp4 take per-token (their own block scales): y_scale holds
   * mxfp8's ue8m0 bytes [rows][width / 32], nvfp4's e4m3 bytes [rows][width / 16].
   * quant_scale_layout, of those block scales: NULL or "row-major", or "cublas" (cuBLAS's
   * block-scaled layout: 512-byte tiles of 128 rows x 4 blocks, whole tiles; docs/kernels.md).
   * quant_scale_in: device memory of one float, read by the forward: the static scale, or nvfp4's
   * global scale (y = q * block scale * global); NULL otherwise. A device address, not a value,
   * so that a CUDA graph replays with the scale the memory holds then, and one set of options
   * (like cuBLASLt's scale pointers on its matmul descriptor) serves every call; it is not part
   * of the kernels' identity. */
  const char* quant_scale;
  const char* quant_scale_layout;
  const float* quant_scale_in;
} ptxdsl_norm_options;

/* The fields every caller's struct has (ptxdsl 0.1): `size` must be at least this. */
#define PTXDSL_NORM_OPTIONS_MIN_SIZE 36
/* Where the quantized forward's scale fields (quant_scale, quant_scale_layout, quant_scale_in)
 * begin: a struct of a header without them has `size` at most this, and they keep their
 * defaults (per-token, row-major, NULL). */
#define PTXDSL_NORM_OPTIONS_SCALE_OFFSET offsetof(ptxdsl_norm_options, quant_scale)

/* Either norm's forward with model options (options NULL: the plain norm, as
 * ptxdsl_layer_norm_forward and ptxdsl_rms_norm_forward compute). norm is ptxdsl_norm; an RMS
 * norm takes no b and no mean (NULL). y_scale: NULL, or with options->quant the scales as
 * options->quant_scale says (float; mxfp8's and nvfp4's one-byte block scales through the same
 * pointer); NULL with a static scale, which options->quant_scale_in gives. Every other argument
 * as ptxdsl_layer_norm_forward's. */
PTXDSL_C_API int32_t ptxdsl_norm_forward_ex(int32_t device, int32_t norm, int32_t dtype,
                                            int32_t weight_dtype, int64_t batch, int64_t width,
                                            int64_t stride, const ptxdsl_norm_options* options,
                                            const void* x, const void* w, const void* b,
                                            const void* residual, void* residual_out, void* y,
                                            float* y_scale, float* mean, float* rstd, float eps,
                                            ptxdsl_stream stream);

/* Either norm's backward with model options: its forward's (quant, its scale fields and
 * residual_in_f32, which say what the forward wrote, are not read). An RMS norm takes no mean and
 * no db (NULL). Every other argument as ptxdsl_layer_norm_backward's. */
PTXDSL_C_API int32_t ptxdsl_norm_backward_ex(int32_t device, int32_t norm, int32_t dtype,
                                             int32_t weight_dtype, int64_t batch, int64_t width,
                                             int64_t stride, const ptxdsl_norm_options* options,
                                             const void* dy, const void* dh, const void* x,
                                             const void* w, const float* mean, const float* rstd,
                                             void* dx, void* dw, void* db, void* workspace,
                                             uint64_t workspace_bytes, ptxdsl_stream stream);

/* ptxdsl_norm_workspace_bytes and ptxdsl_norm_prepare for the object of these model options. */
PTXDSL_C_API int32_t ptxdsl_norm_workspace_bytes_ex(int32_t device, int32_t norm, int32_t dtype,
                                                    int32_t weight_dtype, int64_t width,
                                                    int64_t batch,
                                                    const ptxdsl_norm_options* options,
                                                    uint64_t* bytes);
PTXDSL_C_API int32_t ptxdsl_norm_prepare_ex(int32_t device, int32_t norm, int32_t dtype,
                                            int32_t weight_dtype, int64_t width,
                                            const ptxdsl_norm_options* options);

#ifdef __cplusplus
}
#endif

#endif /* PTXDSL_PTXDSL_H */
