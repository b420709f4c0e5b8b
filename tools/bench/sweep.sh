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
#
# ROUNDS=N (default 1) runs the settings round after round, N times, and ends with each setting's
# median µs over the rounds: for differences near the run-to-run spread (about 0.5%), where one
# timing each cannot tell a setting from the GPU's drift.
set -u
bin=$1 kernel=$2 dtype=$3 batch=$4 width=$5 knob=$6
shift 6
rounds=${ROUNDS:-1}
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "sweep: ROUNDS must be a whole number >= 1, got '$rounds'" >&2
  exit 2
fi
labels=(auto)
settings=("")
if [[ $knob == -- ]]; then
  for setting in "$@"; do
    labels+=("${setting//--/}")
    settings+=("$setting")
  done
else
  for v in "$@"; do
    labels+=("$knob=$v")
    settings+=("$knob $v")
  done
fi
times=()
for ((round = 0; round < rounds; ++round)); do
  for i in "${!settings[@]}"; do
    # shellcheck disable=SC2086 # each setting is a list of options
    row=$("$bin" bench "$kernel" --dtype "$dtype" --batch "$batch" --width "$width" \
      ${settings[$i]} 2>/dev/null | grep -E "^\s*$kernel" | tail -n 1)
    printf '%-26s %-16s %s\n' "$kernel $dtype ${batch}x$width" "${labels[$i]}" "${row:-failed}"
    # The row: kernel, dtype, shape, µs, ...
    us=$(awk '{print $4}' <<<"$row")
    [[ $us =~ ^[0-9.]+$ ]] && times[i]+="$us "
  done
done
if ((rounds > 1)); then
  for i in "${!settings[@]}"; do
    median=$(tr ' ' '\n' <<<"${times[i]:-}" | grep -v '^$' | sort -g |
      awk '{v[NR] = $1} END {if (NR == 0) print "failed"; else if (NR % 2) print v[(NR + 1) / 2];
           else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}')
    printf '%-26s %-16s median of %d: %s\n' "$kernel $dtype ${batch}x$width" "${labels[$i]}" \
      "$rounds" "$median"
  done
fi
