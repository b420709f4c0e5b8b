#!/usr/bin/env bash
# GPU check: from an existing build folder, run the [gpu] tests, the host examples, the kernel-tool
# examples, and compute-sanitizer memcheck and racecheck over the examples and over `ptxdsl run`
# of the kernels that copy by cp.async or run in one launch. Logs go under $OUT when it is set,
# else under <build>/gpu-check. Exits non-zero if any step failed.
#
#   tools/gpu-check.sh [build-folder]        (default: build)
#
# On a fresh machine it takes about 4-5 minutes on the H200 and 9 on the H100 (test_runtime's two
# sweeps JIT every kernel they build: 190-230 s together on the H200, 280 s on the H100), about
# 3.5 minutes without them (TEST_FILTER='[gpu]~"the norms match*"~"knob variants*"'), two of them
# compute-sanitizer's.
#
# Environment: SANITIZER (path to compute-sanitizer; default: PATH, then /usr/local/cuda/bin),
# SANITIZER_ARGS (arguments for the examples under the sanitizer; default "64 8192": the sanitizer
# slows kernels down by orders of magnitude), TEST_FILTER (Catch2 filter; default "[gpu]").
set -u
build=${1:-build}
if [[ ! -d "$build" ]]; then
  echo "gpu-check: no build folder '$build' (configure and build first)" >&2
  exit 2
fi
logs=${OUT:-$build/gpu-check}
mkdir -p "$logs"
summary="$logs/summary.log"
: >"$summary"
failed=0

note() { echo "$*" | tee -a "$summary"; }

# step NAME LOG COMMAND...: runs the command, appending its output to LOG, and records the result.
step() {
  local name=$1 log=$2
  shift 2
  local start=$SECONDS
  echo "=== $name: $*" >>"$log"
  "$@" >>"$log" 2>&1
  local rc=$?
  if [[ $rc -eq 0 ]]; then
    note "PASS  $name ($((SECONDS - start)) s)"
  elif [[ $rc -eq 77 ]]; then
    # A test binary's code for "every case skipped": on the GPU machine that is a missing driver.
    note "FAIL  $name (every test case skipped: no usable GPU; see $(basename "$log"))"
    failed=1
  else
    note "FAIL  $name (exit $rc, $((SECONDS - start)) s; see $(basename "$log"))"
    failed=1
  fi
  return $rc
}

note "gpu-check on $(hostname) at $(date -u +%FT%TZ), build folder $build"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /' |
    tee -a "$summary"
fi

# 1. The [gpu] tests of every test binary that has them.
filter=${TEST_FILTER:-[gpu]}
for t in test_runtime test_tools; do
  bin="$build/tests/$t"
  [[ -x "$bin" ]] || continue
  step "$t $filter" "$logs/tests.log" "$bin" "$filter" --durations yes
done

# 2. The host examples, at their full size.
examples=()
for e in layer_norm_example rms_norm_example; do
  bin=$(find "$build/" -type f -name "$e" -perm -u+x 2>/dev/null | head -n 1)
  if [[ -z "$bin" ]]; then
    note "FAIL  $e: not built (is docs/examples part of the build?)"
    failed=1
    continue
  fi
  examples+=("$bin")
  step "$e" "$logs/examples.log" "$bin"
done
grep -h "max error" "$logs/examples.log" 2>/dev/null | sed 's/^/  /' | tee -a "$summary"

# 2b. The kernel-tool examples (docs/examples: softmax, add_rms_norm, fp8_quant, histogram) on the
# GPU: their CTest tests of label gpu. There a skip means no usable driver, so it fails.
examples_on_gpu() {
  local out rc
  out=$(ctest --test-dir "$build" -L gpu -R '^example_.*_gpu$' --output-on-failure \
    --no-tests=error 2>&1)
  rc=$?
  echo "$out"
  [[ $rc -eq 0 && $out != *"Skipped"* ]]
}
step "kernel-tool examples on the GPU (ctest -L gpu -R ^example_)" "$logs/examples.log" \
  examples_on_gpu

# 3. compute-sanitizer over the examples.
sanitizer=${SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
if [[ ! -x "$sanitizer" ]]; then
  note "FAIL  compute-sanitizer not found (set SANITIZER)"
  failed=1
else
  read -r -a sargs <<<"${SANITIZER_ARGS:-64 8192}"
  for tool in memcheck racecheck; do
    for bin in "${examples[@]}"; do
      step "$tool $(basename "$bin") ${sargs[*]}" "$logs/$tool.log" \
        "$sanitizer" --tool "$tool" --error-exitcode 3 "$bin" "${sargs[@]}"
    done
  done
  # The asynchronous-copy paths, ragged rows and rows past the batch included: the staged
  # backward and forward (one row ahead, cp.async), the ring (two rows ahead) with 16- and
  # 4-byte copies; and the one-launch backward (a CTA for every tile of columns, rows sharing a
  # warp's loads, lone 16-bit columns); and forwards that read their rows again from L2 under
  # L2 policies (RMS 8192-wide, layer norm 16384-wide by default); and backwards whose CTAs
  # take rows from a counter (row_order tickets: staged, and with two rows ahead); and forwards
  # split over a thread-block cluster (sums through distributed shared memory: 2, 4 and 8 CTAs,
  # the residual add, an odd batch), and rows past 65536 read again from memory; clusters walking
  # rows with a ring of two ahead (the slots alternating row by row), and backwards split over
  # clusters by default (32 KiB slices staged and prefetched, the column reduce's vectors); the
  # clusters' sums exchanged by st.async (the default) and, at PTX 7.8, through a cluster barrier;
  # backwards whose clusters merge their dw/db partial rows through distributed shared memory;
  # widths a cluster does not divide, the last CTA's slice shorter and ending in lone elements.
  cli="$build/tools/ptxdsl"
  if [[ -x "$cli" ]]; then
    for run in "ln_bwd --dtype f16 --width 16384 --batch 7 --single-launch 0" \
      "ln_fwd --dtype f16 --width 16384 --batch 301 --prefetch-rows 1" \
      "ln_bwd --dtype bf16 --width 8192 --batch 300 --single-launch 0" \
      "rms_bwd --dtype f32 --width 1003 --batch 77 --prefetch-rows 2 --single-launch 0" \
      "rms_fwd --dtype f16 --width 8192 --batch 301 --prefetch-rows 2" \
      "ln_bwd --dtype bf16 --width 8192 --batch 301 --prefetch-rows 3" \
      "rms_bwd --dtype f16 --width 4096 --batch 2000 --single-launch 0 --row-nc 0" \
      "ln_bwd --dtype bf16 --width 4096 --batch 200 --single-launch 1" \
      "rms_bwd --dtype f16 --width 1003 --batch 77 --single-launch 1 --vector-elems 1" \
      "rms_fwd --dtype bf16 --width 8192 --batch 301" \
      "ln_fwd --dtype f16 --width 16384 --batch 77" \
      "rms_bwd --dtype bf16 --width 16384 --batch 700 --row-order tickets" \
      "ln_bwd --dtype f16 --width 8192 --batch 1001 --row-order tickets" \
      "rms_fwd --dtype bf16 --width 65536 --batch 3" \
      "ln_fwd --dtype f32 --width 131072 --batch 2 --residual add" \
      "ln_fwd --dtype f16 --width 262144 --batch 1 --one-pass-stats 1" \
      "rms_fwd --dtype f16 --width 1000 --batch 5 --cluster-ctas 8" \
      "ln_bwd --dtype bf16 --width 100001 --batch 3" \
      "rms_bwd --dtype f32 --width 262144 --batch 2" \
      "rms_fwd --dtype bf16 --width 65536 --batch 301 --prefetch-rows 2 --sm-count 8" \
      "ln_fwd --dtype f32 --width 65536 --batch 37 --prefetch-rows 2 --sm-count 16" \
      "rms_bwd --dtype f32 --width 32768 --batch 9" \
      "ln_bwd --dtype bf16 --width 65536 --batch 45 --weight-dtype f32" \
      "rms_fwd --dtype f16 --width 1000 --batch 5 --cluster-ctas 8 --ptx-version 7.8" \
      "ln_bwd --dtype bf16 --width 100001 --batch 3 --ptx-version 7.8" \
      "ln_bwd --dtype f16 --width 4096 --batch 301 --partial-cluster 2" \
      "rms_bwd --dtype bf16 --width 16384 --batch 77 --partial-cluster 4" \
      "ln_bwd --dtype bf16 --width 262143 --stride 262144 --batch 5 --weight-dtype f32" \
      "rms_fwd --dtype f16 --width 65529 --stride 65536 --batch 7" \
      "ln_fwd --dtype bf16 --width 131071 --stride 131072 --batch 3 --weight-dtype f32"; do
      read -r -a rargs <<<"$run"
      for tool in memcheck racecheck; do
        step "$tool ptxdsl run $run" "$logs/$tool.log" \
          "$sanitizer" --tool "$tool" --error-exitcode 3 "$cli" run "${rargs[@]}"
      done
    done
  else
    note "SKIP  sanitizer over ptxdsl run: $cli not built"
  fi
  # The kernel-tool examples: block reductions back to back (the reducer's alternating scratch),
  # masked tails, each dtype; shared-memory atomics of every warp of a CTA (the histogram).
  for run in "softmax softmax_fwd --dtype bf16 --width 4097 --batch 67" \
    "softmax softmax_bwd --dtype f16 --width 1000 --batch 67" \
    "add_rms_norm add_rms_fwd --dtype f32 --width 4097 --batch 67" \
    "fp8_quant fp8_quant --width 4097 --batch 67" \
    "histogram histogram --width 4097 --batch 67 --bins 1000"; do
    read -r -a rargs <<<"$run"
    bin="$build/docs/examples/${rargs[0]}"
    if [[ ! -x "$bin" ]]; then
      note "FAIL  ${rargs[0]}: not built (is docs/examples part of the build?)"
      failed=1
      continue
    fi
    for tool in memcheck racecheck; do
      step "$tool $run" "$logs/$tool.log" \
        "$sanitizer" --tool "$tool" --error-exitcode 3 "$bin" run "${rargs[@]:1}"
    done
  done
  grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$logs"/memcheck.log "$logs"/racecheck.log \
    2>/dev/null | sed 's/^/  /' | tee -a "$summary"
fi

if [[ $failed -eq 0 ]]; then note "gpu-check: all passed"; else note "gpu-check: FAILED"; fi
exit $failed
