#!/usr/bin/env bash
# Emits, stamps and ptxas-checks backward cases for ptxdsl-timeline, on the build machine:
#
#   tools/bench/timeline/prepare.sh PTXDSL OUTDIR "ln_bwd f16 4096 8192" "rms_bwd bf16 4096 16384 --sm-count 128" ...
#
# Writes OUTDIR/<case>.ptx, .json, .tl.ptx and OUTDIR/cases.txt, which run.sh reads on the GPU
# machine; the reduce launches early where the library launches it so (waits_for_prior_grid). Row-counter kernels (row_order tickets) are not supported: their counter is a parameter
# the harness has no value for.
set -eu
bin=$1 out=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
: > "$out/cases.txt"
for c in "$@"; do
  read -r k d b w extra <<<"$c"
  name="${k}_${d}_${b}x${w}${extra// /}"
  # shellcheck disable=SC2086 # extra is a list of knob options
  "$bin" emit "$k" --dtype "$d" --width "$w" --batch "$b" $extra --json -o "$out/$name.ptx" > "$out/$name.json"
  read -r g1 b1 s1 g2 b2 e1 e2 early < <(python3 -c "
import json, sys; s = json.load(open(sys.argv[1]))['steps']
print(s[0]['grid'][0], s[0]['block'][0], s[0]['dynamic_shared_bytes'], s[1]['grid'][0], s[1]['block'][0],
      s[0]['entry'], s[1]['entry'], int(s[1].get('waits_for_prior_grid', False)))" "$out/$name.json")
  python3 "$here/stamp.py" "$out/$name.ptx" "$g1" "$out/$name.tl.ptx"
  ptxas -arch=sm_90 "$out/$name.tl.ptx" -o /dev/null
  echo "$name $name.tl.ptx $e1 $e2 $g1 $b1 $s1 $g2 $b2 $b $w $early" >> "$out/cases.txt"
done
