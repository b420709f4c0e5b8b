#!/usr/bin/env bash
# Time one case under several knob settings, to tune kernels/src/heuristics.cpp on a GPU machine.
#
#   tools/bench/sweep.sh PTXDSL KERNEL DTYPE BATCH WIDTH KNOB VALUE...
#
# e.g. tools/bench/sweep.sh build/tools/ptxdsl ln_fwd f16 4096 16384 --threads-per-row 256 512 1024
# or, with whole settings of several knobs each:
#   tools/bench/sweep.sh PTXDSL KERNEL DTYPE BATCH WIDTH -- "--max-registers 64 --ctas-per-sm 2" ...
# Prints one line per setting: the knob value and the bench table row (µs, GB/s, % of copy). The
# heuristic's own choice comes first, as "auto".
set -u
bin=$1 kernel=$2 dtype=$3 batch=$4 width=$5 knob=$6
shift 6
run() {
  local label=$1
  shift
  local row
  row=$("$bin" bench "$kernel" --dtype "$dtype" --batch "$batch" --width "$width" "$@" 2>/dev/null |
    grep -E "^\s*$kernel" | tail -n 1)
  printf '%-26s %-16s %s\n' "$kernel $dtype ${batch}x$width" "$label" "${row:-failed}"
}
run auto
if [[ $knob == -- ]]; then
  # shellcheck disable=SC2086 # each setting is a list of options
  for setting in "$@"; do run "${setting//--/}" $setting; done
else
  for v in "$@"; do run "$knob=$v" "$knob" "$v"; done
fi
