#!/usr/bin/env bash
# On the GPU machine: every case prepare.sh wrote, REPS repetitions each (L2 flushed before each),
# its stamps to OUTDIR/<case>.txt, then analyze.py's summary of them all. EARLY=0 launches every
# reduce plainly, to compare with the early (PDL) launch.
#
#   tools/bench/timeline/run.sh PTXDSL_TIMELINE CASEDIR OUTDIR [REPS=5]
set -u
bin=$(realpath "$1") cases=$2 out=$(realpath -m "$3") reps=${4:-5}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
cd "$cases" || exit 2
while read -r name ptx e1 e2 g1 b1 s1 g2 b2 b w early; do
  early=${EARLY:-$early}
  "$bin" "$ptx" "$e1" "$e2" "$g1" "$b1" "$s1" "$g2" "$b2" "$b" "$w" "$reps" "$early" > "$out/$name.txt" ||
    echo "$name: ptxdsl-timeline failed" >&2
done < cases.txt
python3 "$here/analyze.py" "$out"/*.txt
