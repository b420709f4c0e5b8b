#!/bin/bash
export LD_LIBRARY_PATH=$PWD/build-ci/fmtlib
P=$PWD/build-ci/tools/ptxdsl
L=$OUT/bench.log
b() { echo "=== $*" >>$L; timeout 60 $P bench "$@" >>$L 2>&1 || echo "rc=$?" >>$L; }
W="--dtype bf16 --weight-dtype f32"
b rms_bwd $W --width 262144 --batch 256
b rms_bwd $W --width 262144 --batch 256 --cluster-ctas 8
b ln_bwd $W --width 262144 --batch 256
b ln_bwd $W --width 262144 --batch 256 --cluster-ctas 8
b rms_fwd $W --width 262144 --batch 512 --cluster-ctas 16
for t in memcheck racecheck; do
  for a in "rms_bwd $W --width 262144 --batch 37" "ln_bwd --dtype f32 --width 262144 --batch 5" "rms_fwd --dtype f16 --width 262144 --batch 3 --cluster-ctas 16"; do
    compute-sanitizer --tool $t --error-exitcode 3 $P run $a > $OUT/san.log 2>&1; echo "$t $a rc=$? $(tail -1 $OUT/san.log | cut -c1-60)"
  done
done
awk '/^=== /{c=$0} /^(rms|ln)_(fwd|bwd) +(bf16|f16|f32)/{split($0,a," "); printf "%s | %s copy=%s ratio=%.3f\n", c, a[4], a[7], a[7]/a[4]}' $L
grep -h "ptxdsl:" $L | head
