/* The C ABI from C (compiled as C99): argument errors come back as a status and a message naming
 * the argument, before any driver is needed; without a driver a valid call says so. Needs no GPU;
 * with a driver, host memory is refused as memory the GPU cannot address. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ptxdsl/ptxdsl.h"

static int failures = 0;

/* `status` must be `want` and the last error contain `needle` ("" after a success). */
static void expect(int line, int32_t status, int32_t want, const char* needle) {
  const char* message = ptxdsl_last_error();
  const int ok = status == want &&
                 (want == PTXDSL_SUCCESS ? message[0] == '\0' : strstr(message, needle) != NULL);
  if (!ok) {
    ++failures;
    fprintf(stderr, "line %d: got %s, want %s containing \"%s\"; message: \"%s\"\n", line,
            ptxdsl_status_name(status), ptxdsl_status_name(want), needle, message);
  }
}
#define EXPECT(call, want, needle) expect(__LINE__, (call), (want), (needle))

/* Addresses no driver knows; aligned for every element type. */
#define FAKE(n) ((void*)(uintptr_t)(0x100000u * (n)))

static int32_t ln_forward(int32_t device, int32_t dtype, int32_t weight_dtype, int64_t batch,
                          int64_t width, int64_t stride, const void* x, const void* w,
                          const void* b, const void* residual, void* y) {
  return ptxdsl_layer_norm_forward(device, dtype, weight_dtype, batch, width, stride, x, w, b,
                                   residual, NULL, y, (float*)FAKE(5), (float*)FAKE(6), 1e-5f,
                                   NULL);
}

/* ptxdsl_norm_forward_ex with f16 rows of 256 and every pointer but w and y_scale fixed: x at
 * FAKE(1), y at FAKE(4), mean (layer norm) at FAKE(5), rstd at FAKE(6). */
static int32_t ex_forward(int32_t norm, const ptxdsl_norm_options* options, int64_t batch,
                          const void* w, float* y_scale) {
  return ptxdsl_norm_forward_ex(0, norm, PTXDSL_F16, PTXDSL_F16, batch, 256, 0, options, FAKE(1), w,
                                NULL, NULL, NULL, FAKE(4), y_scale,
                                norm == PTXDSL_LAYER_NORM ? (float*)FAKE(5) : NULL, (float*)FAKE(6),
                                1e-5f, NULL);
}

int main(void) {
  int32_t status;
  int32_t count = -1;
  uint64_t bytes = 1;
  static uint16_t host_rows[64 * 256], host_out[64 * 256], host_w[256], host_b[256];
  static float host_mean[64], host_rstd[64];

  if (ptxdsl_version() != PTXDSL_VERSION) {
    ++failures;
    fprintf(stderr, "library version %d, header %d\n", (int)ptxdsl_version(), PTXDSL_VERSION);
  }
  if (strcmp(ptxdsl_status_name(PTXDSL_ERROR_UNSUPPORTED), "PTXDSL_ERROR_UNSUPPORTED") != 0 ||
      strcmp(ptxdsl_status_name(99), "unknown status") != 0) {
    ++failures;
    fprintf(stderr, "ptxdsl_status_name: wrong names\n");
  }

  /* Enums, shapes and the device ordinal. */
  EXPECT(ln_forward(0, 7, PTXDSL_F16, 8, 256, 0, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
         PTXDSL_ERROR_INVALID_ARGUMENT,
         "ptxdsl_layer_norm_forward: dtype must be PTXDSL_F32 (0), PTXDSL_F16 (1) or PTXDSL_BF16 "
         "(2), got 7");
  EXPECT(ln_forward(0, PTXDSL_F16, -1, 8, 256, 0, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
         PTXDSL_ERROR_INVALID_ARGUMENT, "weight_dtype must be PTXDSL_F32 (0)");
  EXPECT(ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 0, 0, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
         PTXDSL_ERROR_INVALID_ARGUMENT, "width must be in [1, 262144], got 0");
  EXPECT(
      ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 262145, 0, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
      PTXDSL_ERROR_INVALID_ARGUMENT, "width must be in [1, 262144], got 262145");
  EXPECT(
      ln_forward(0, PTXDSL_F16, PTXDSL_F16, -1, 256, 0, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
      PTXDSL_ERROR_INVALID_ARGUMENT, "batch must be in [0, 2147483647], got -1");
  EXPECT(ln_forward(0, PTXDSL_F16, PTXDSL_F16, INT64_C(2147483648), 256, 0, FAKE(1), FAKE(2),
                    FAKE(3), NULL, FAKE(4)),
         PTXDSL_ERROR_INVALID_ARGUMENT, "batch must be in [0, 2147483647], got 2147483648");
  EXPECT(
      ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, -4, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
      PTXDSL_ERROR_INVALID_ARGUMENT, "stride must be in [0, 4294967295], got -4");
  EXPECT(
      ln_forward(-1, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
      PTXDSL_ERROR_INVALID_ARGUMENT, "device must be in [0, 2147483647], got -1");

  /* Null pointers: refused, or, for weights, biases, the residual add and the weights'
   * gradients, a variant; the pointers that fit no variant are refused by name. */
  EXPECT(ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, NULL, FAKE(2), FAKE(3), NULL, FAKE(4)),
         PTXDSL_ERROR_INVALID_ARGUMENT, "ptxdsl_layer_norm_forward: x is NULL");
  EXPECT(ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), FAKE(2), FAKE(3), NULL, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "y is NULL");
  EXPECT(ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), NULL, FAKE(3), NULL, FAKE(4)),
         PTXDSL_ERROR_INVALID_ARGUMENT, "b is given without w");
  EXPECT(
      ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), FAKE(2), FAKE(3), FAKE(7), FAKE(4)),
      PTXDSL_ERROR_INVALID_ARGUMENT, "residual is given without h");
  EXPECT(ptxdsl_rms_norm_forward(0, PTXDSL_BF16, PTXDSL_BF16, 8, 256, 0, FAKE(1), FAKE(2), NULL,
                                 FAKE(3), FAKE(4), (float*)FAKE(5), 1e-5f, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "h is given without residual");
  EXPECT(ptxdsl_rms_norm_forward(0, PTXDSL_BF16, PTXDSL_F32, 8, 256, 0, FAKE(1), FAKE(2), NULL,
                                 NULL, FAKE(4), NULL, 1e-5f, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "ptxdsl_rms_norm_forward: rstd is NULL");
  EXPECT(ptxdsl_layer_norm_backward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), NULL, FAKE(2),
                                    FAKE(3), (float*)FAKE(4), (float*)FAKE(5), FAKE(6), NULL,
                                    FAKE(7), NULL, 0, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "db is given without dw");
  EXPECT(ptxdsl_rms_norm_backward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), NULL, FAKE(2),
                                  NULL, (float*)FAKE(4), FAKE(5), FAKE(6), NULL, 0, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "dw is given without w");
  EXPECT(ptxdsl_rms_norm_backward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), NULL, FAKE(2),
                                  FAKE(3), (float*)FAKE(4), FAKE(5), FAKE(6), NULL, 64, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "workspace is NULL but workspace_bytes is 64");
  EXPECT(ptxdsl_norm_workspace_bytes(0, 2, PTXDSL_F16, PTXDSL_F16, 256, 8, &bytes),
         PTXDSL_ERROR_INVALID_ARGUMENT,
         "norm must be PTXDSL_LAYER_NORM (0) or PTXDSL_RMS_NORM (1), got 2");
  EXPECT(ptxdsl_norm_workspace_bytes(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 256, 8, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "bytes is NULL");
  EXPECT(ptxdsl_norm_prepare(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 0),
         PTXDSL_ERROR_INVALID_ARGUMENT, "width must be in [1, 262144], got 0");
  EXPECT(ptxdsl_device_count(NULL), PTXDSL_ERROR_INVALID_ARGUMENT, "count is NULL");

  /* What the norms refuse without a device is refused before any driver loads: the dtype pair,
   * a stride below the width, eps, outputs overlapping inputs, a misaligned workspace. */
  EXPECT(
      ln_forward(0, PTXDSL_F16, PTXDSL_BF16, 8, 256, 0, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
      PTXDSL_ERROR_INVALID_ARGUMENT,
      "ptxdsl_layer_norm_forward: weight dtype must be f16 (the input's) or f32, got bf16");
  EXPECT(ptxdsl_norm_prepare(0, PTXDSL_RMS_NORM, PTXDSL_F32, PTXDSL_BF16, 256),
         PTXDSL_ERROR_INVALID_ARGUMENT, "weight dtype must be f32 for f32 inputs, got bf16");
  EXPECT(ptxdsl_norm_workspace_bytes(0, PTXDSL_LAYER_NORM, PTXDSL_BF16, PTXDSL_F16, 256, 8, &bytes),
         PTXDSL_ERROR_INVALID_ARGUMENT, "weight dtype must be bf16 (the input's) or f32, got f16");
  EXPECT(
      ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 255, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
      PTXDSL_ERROR_INVALID_ARGUMENT,
      "LayerNorm(f16, weights f16, width 256).forward: stride must be at least the width 256, "
      "got 255");
  EXPECT(ptxdsl_rms_norm_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), FAKE(2), NULL, NULL,
                                 FAKE(4), (float*)FAKE(5), NAN, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "eps must be a finite number ≥ 0, got nan");
  EXPECT(ptxdsl_rms_norm_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), FAKE(2), NULL, NULL,
                                 FAKE(4), (float*)FAKE(5), INFINITY, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "eps must be a finite number ≥ 0, got inf");
  EXPECT(ptxdsl_rms_norm_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), FAKE(2), NULL, NULL,
                                 FAKE(4), (float*)FAKE(5), -1.0f, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "eps must be a finite number ≥ 0, got -1");
  EXPECT(ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(1)),
         PTXDSL_ERROR_INVALID_ARGUMENT,
         "y overlaps x: in-place calls are not supported; give y a buffer of its own");
  EXPECT(ptxdsl_rms_norm_backward(0, PTXDSL_BF16, PTXDSL_F32, 8, 256, 0, FAKE(1), NULL, FAKE(2),
                                  FAKE(3), (float*)FAKE(4), FAKE(1), FAKE(6), NULL, 0, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT,
         "RmsNorm(bf16, weights f32, width 256).backward: dx overlaps dy");
  EXPECT(ptxdsl_rms_norm_backward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), NULL, FAKE(2),
                                  FAKE(3), (float*)FAKE(4), FAKE(5), FAKE(6),
                                  (void*)(uintptr_t)0x700008, 4096, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "the workspace at 0x700008 is not 16-byte aligned");

  /* A batch of 0 does nothing, whatever the pointers, and leaves no message; the pointers that
   * choose the variant must still fit one. */
  EXPECT(ptxdsl_layer_norm_backward(0, PTXDSL_F16, PTXDSL_F16, 0, 256, 0, NULL, NULL, NULL, NULL,
                                    NULL, NULL, NULL, FAKE(1), NULL, NULL, 0, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "dw is given without w");
  EXPECT(ptxdsl_rms_norm_backward(0, PTXDSL_F16, PTXDSL_F16, 0, 256, 0, NULL, NULL, NULL, NULL,
                                  NULL, NULL, FAKE(1), NULL, 0, NULL),
         PTXDSL_ERROR_INVALID_ARGUMENT, "dw is given without w");
  EXPECT(ln_forward(0, PTXDSL_F16, PTXDSL_F16, 0, 256, 0, NULL, NULL, NULL, NULL, NULL),
         PTXDSL_SUCCESS, "");
  EXPECT(ptxdsl_norm_workspace_bytes(0, PTXDSL_LAYER_NORM, PTXDSL_F16, PTXDSL_F16, 256, 0, &bytes),
         PTXDSL_SUCCESS, "");
  if (bytes != 0) {
    ++failures;
    fprintf(stderr, "workspace bytes for batch 0: %llu, want 0\n", (unsigned long long)bytes);
  }

  /* The model options (ptxdsl_norm_options, the _ex calls): each bad value named with what is
   * allowed, before any driver loads. */
  {
    ptxdsl_norm_options o;
    unsigned char newer[sizeof(ptxdsl_norm_options) + 8];
    memset(&o, 0, sizeof o);
    o.size = sizeof o;
    o.casting = "mistral";
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), FAKE(7)), PTXDSL_ERROR_INVALID_ARGUMENT,
           "ptxdsl_norm_forward_ex: options->casting: casting must be one of none, llama, gemma, "
           "got 'mistral'");
    o.casting = "gemma";
    o.quant = "fp4";
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), FAKE(7)), PTXDSL_ERROR_INVALID_ARGUMENT,
           "options->quant: quant must be one of none, fp8-e4m3");
    o.quant = "int8";
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "y_scale is a null pointer: quant int8 writes its f32 scales there (1 a row)");
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), FAKE(1)), PTXDSL_ERROR_INVALID_ARGUMENT,
           "y_scale overlaps x");
    o.quant = NULL;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), FAKE(7)), PTXDSL_ERROR_INVALID_ARGUMENT,
           "y_scale is given, but the quant is none");
    o.weight_offset = 1.0f;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, NULL, NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "RmsNorm(f16, weights f16, width 256, weight offset 1, casting gemma).forward: a "
           "weight offset of 1 needs w");
    o.weight_offset = NAN;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 0, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "weight offset must be a finite number, got nan");
    o.weight_offset = 0.0f;
    o.row_groups = 4;
    o.group_stride = 200;
    EXPECT(ex_forward(PTXDSL_LAYER_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "group stride must be at least the width (256), got 200");
    EXPECT(ptxdsl_norm_prepare_ex(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 256, &o),
           PTXDSL_ERROR_INVALID_ARGUMENT,
           "ptxdsl_norm_prepare_ex: RmsNorm(f16, weights f16, width 256, casting gemma, row groups "
           "4 × group stride 200).forward: group stride must be at least the width (256), got 200");
    o.group_stride = 256;
    EXPECT(ex_forward(PTXDSL_LAYER_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "stride must be at least the row groups' span (row groups 4 − 1)·group stride 256 + "
           "width 256 = 1024, got 256");
    o.row_groups = 0;
    o.group_stride = 0;
    o.residual_in_f32 = 1;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "residual_in_f32 is set without a residual");
    /* The backward does not read what the forward wrote: quant and residual_in_f32 pass. */
    o.quant = "fp8-e4m3";
    EXPECT(ptxdsl_norm_backward_ex(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, &o,
                                   FAKE(1), NULL, FAKE(2), FAKE(3), (float*)FAKE(8),
                                   (float*)FAKE(4), NULL, FAKE(5), FAKE(6), NULL, 0, NULL),
           PTXDSL_ERROR_INVALID_ARGUMENT, "mean is given to an RMS norm's backward");
    EXPECT(ptxdsl_norm_backward_ex(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 0, 256, 0, &o, NULL,
                                   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL),
           PTXDSL_SUCCESS, "");
    EXPECT(ptxdsl_norm_workspace_bytes_ex(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 256, 0, &o,
                                          &bytes),
           PTXDSL_SUCCESS, "");
    /* The backward's determinism by the command line's names; a portable backward at batch 0. */
    o.deterministic = "sometimes";
    EXPECT(ptxdsl_norm_backward_ex(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 0, 256, 0, &o, NULL,
                                   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL),
           PTXDSL_ERROR_INVALID_ARGUMENT,
           "options->deterministic: deterministic must be 0, 1 or portable, got 'sometimes'");
    o.deterministic = "portable";
    EXPECT(ptxdsl_norm_backward_ex(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 0, 256, 0, &o, NULL,
                                   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL),
           PTXDSL_SUCCESS, "");
    o.deterministic = NULL;
    o.residual_in_f32 = 0;
    /* The quantized forward's scale modes: static reads options->quant_scale_in and writes no
     * y_scale; group128 takes widths of whole groups; each bad value named. */
    o.quant = "fp8-e4m3";
    o.quant_scale = "static";
    o.quant_scale_in = (const float*)FAKE(9);
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 0, FAKE(2), NULL), PTXDSL_SUCCESS, "");
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), FAKE(7)), PTXDSL_ERROR_INVALID_ARGUMENT,
           "y_scale is given, but quant fp8-e4m3 with scale static writes no scales");
    o.quant_scale_in = NULL;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "quant_scale_in is a null pointer: quant fp8-e4m3 with scale static reads its scale "
           "there");
    o.quant_scale_in = (const float*)FAKE(4); /* y's rows */
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "y overlaps quant_scale_in");
    o.quant_scale = "group128";
    o.quant_scale_in = (const float*)FAKE(9);
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), FAKE(7)), PTXDSL_ERROR_INVALID_ARGUMENT,
           "quant_scale_in is given, but quant fp8-e4m3 with scale group128 reads none");
    o.quant_scale_in = NULL;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "y_scale is a null pointer: quant fp8-e4m3 with scale group128 writes its f32 scales "
           "there (2 a row)");
    o.quant_scale = "group64";
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), FAKE(7)), PTXDSL_ERROR_INVALID_ARGUMENT,
           "options->quant_scale: quant scale must be one of per-token, static, group128, got "
           "'group64'");
    o.quant_scale = "per-token";
    o.quant_scale_layout = "cublas";
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), FAKE(7)), PTXDSL_ERROR_INVALID_ARGUMENT,
           "quant scale layout cublas lays out block scales (mxfp8, nvfp4); quant fp8-e4m3 has "
           "none");
    o.quant_scale_layout = "tiled";
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), FAKE(7)), PTXDSL_ERROR_INVALID_ARGUMENT,
           "options->quant_scale_layout: quant scale layout must be one of row-major, cublas, "
           "got 'tiled'");
    o.quant_scale_layout = NULL;
    o.quant = "mxfp8";
    o.quant_scale = "static";
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 0, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "quant mxfp8 has its own scales (one per 32 elements): quant scale must be per-token");
    /* The backward reads none of the forward's scale fields. */
    EXPECT(ptxdsl_norm_backward_ex(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 0, 256, 0, &o, NULL,
                                   NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL),
           PTXDSL_SUCCESS, "");
    /* A struct of a header before the scale fields: what lies past its size is not read, so a
     * static scale left there is not taken (int8 is then per-token, which needs y_scale); with
     * the whole struct it is (and this quant_scale_in lies in y's rows). */
    o.quant = "int8";
    o.quant_scale = "static";
    o.quant_scale_in = (const float*)FAKE(4);
    o.size = (uint32_t)PTXDSL_NORM_OPTIONS_SCALE_OFFSET;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "y_scale is a null pointer: quant int8 writes its f32 scales there (1 a row)");
    o.size = sizeof o;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "y overlaps quant_scale_in");
    o.quant = NULL;
    o.quant_scale = NULL;
    o.quant_scale_in = NULL;
    o.residual_in_f32 = 1;
    o.size = 8;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, &o, 8, FAKE(2), NULL), PTXDSL_ERROR_INVALID_ARGUMENT,
           "options->size must be at least 36 (sizeof(ptxdsl_norm_options)), got 8");
    /* A newer header's struct: its fields this library does not know must be zero. */
    memset(newer, 0, sizeof newer);
    o.size = (uint32_t)sizeof newer;
    o.quant = NULL;
    o.residual_in_f32 = 0;
    memcpy(newer, &o, sizeof o);
    EXPECT(ex_forward(PTXDSL_RMS_NORM, (const ptxdsl_norm_options*)(const void*)newer, 0, FAKE(2),
                      NULL),
           PTXDSL_SUCCESS, "");
    newer[sizeof newer - 1] = 1;
    EXPECT(ex_forward(PTXDSL_RMS_NORM, (const ptxdsl_norm_options*)(const void*)newer, 0, FAKE(2),
                      NULL),
           PTXDSL_ERROR_UNSUPPORTED, "is not zero: a field this library");
    EXPECT(
        ptxdsl_norm_forward_ex(0, 5, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, NULL, FAKE(1), FAKE(2),
                               NULL, NULL, NULL, FAKE(4), NULL, NULL, (float*)FAKE(6), 1e-5f, NULL),
        PTXDSL_ERROR_INVALID_ARGUMENT, "norm must be PTXDSL_LAYER_NORM (0) or PTXDSL_RMS_NORM");
  }

  /* The driver: absent, a valid call says so; present, host memory is refused. */
  status = ptxdsl_init();
  if (status == PTXDSL_ERROR_NO_DRIVER) {
    EXPECT(status, PTXDSL_ERROR_NO_DRIVER, "ptxdsl_init: no CUDA driver found (libcuda.so.1)");
    EXPECT(
        ln_forward(0, PTXDSL_F16, PTXDSL_F16, 8, 256, 0, FAKE(1), FAKE(2), FAKE(3), NULL, FAKE(4)),
        PTXDSL_ERROR_NO_DRIVER, "ptxdsl_layer_norm_forward: no CUDA driver found (libcuda.so.1)");
    EXPECT(ptxdsl_norm_workspace_bytes(0, PTXDSL_RMS_NORM, PTXDSL_F16, PTXDSL_F16, 256, 8, &bytes),
           PTXDSL_ERROR_NO_DRIVER, "no CUDA driver found");
    EXPECT(ptxdsl_device_count(&count), PTXDSL_ERROR_NO_DRIVER, "no CUDA driver found");
    printf("no driver: the calls said so (%s)\n", ptxdsl_last_error());
  } else {
    EXPECT(status, PTXDSL_SUCCESS, "");
    EXPECT(ptxdsl_device_count(&count), PTXDSL_SUCCESS, "");
    EXPECT(
        ptxdsl_layer_norm_forward(0, PTXDSL_F16, PTXDSL_F16, 64, 256, 0, host_rows, host_w, host_b,
                                  NULL, NULL, host_out, host_mean, host_rstd, 1e-5f, NULL),
        PTXDSL_ERROR_INVALID_ARGUMENT, "is not memory the GPU can address");
    EXPECT(
        ptxdsl_layer_norm_forward(count, PTXDSL_F16, PTXDSL_F16, 64, 256, 0, host_rows, host_w,
                                  host_b, NULL, NULL, host_out, host_mean, host_rstd, 1e-5f, NULL),
        PTXDSL_ERROR_INVALID_ARGUMENT, "(the devices the driver sees)");
    printf("driver present, %d device(s): host memory was refused\n", (int)count);
  }

  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("all C ABI argument checks passed\n");
  return 0;
}
