#!/usr/bin/env bash
# SASS of one kernel under several knob settings, side by side: on a machine with cuobjdump (the
# GPU machine; the build machine's toolkit has ptxas but no disassembler).
#
#   tools/bench/sass.sh PTXDSL OUTDIR KERNEL DTYPE WIDTH -- "settings"...
#
# e.g. tools/bench/sass.sh build/tools/ptxdsl $OUT/sass ln_bwd f16 16384 -- "" "--row-order tickets"
# For each setting ("" is the heuristic's own choice) it writes OUTDIR/<n>.ptx, .cubin and .sass,
# then prints, for every kernel entry, how many of each SASS opcode each setting has (one column
# a setting): where loads, barriers and atomics went when a change of PTX moved the speed.
#
# Environment: PTXAS, CUOBJDUMP (default: PATH, then /usr/local/cuda/bin), ARCH (default sm_90).
set -u
if [[ $# -lt 7 || $6 != -- ]]; then
  echo "usage: $0 PTXDSL OUTDIR KERNEL DTYPE WIDTH -- \"settings\"..." >&2
  exit 2
fi
bin=$1 out=$2 kernel=$3 dtype=$4 width=$5
shift 6
arch=${ARCH:-sm_90}
tool() {
  if command -v "$1" >/dev/null; then command -v "$1"; else echo "/usr/local/cuda/bin/$1"; fi
}
ptxas=${PTXAS:-$(tool ptxas)}
cuobjdump=${CUOBJDUMP:-$(tool cuobjdump)}
for t in "$ptxas" "$cuobjdump"; do
  if [[ ! -x $t ]]; then
    echo "sass: no $(basename "$t") at $t (set PTXAS / CUOBJDUMP)" >&2
    exit 2
  fi
done
mkdir -p "$out"
n=0
for setting in "$@"; do
  base="$out/$n"
  # shellcheck disable=SC2086 # each setting is a list of options
  if ! "$bin" emit "$kernel" --dtype "$dtype" --width "$width" $setting -o "$base.ptx" ||
    ! "$ptxas" -arch="$arch" -o "$base.cubin" "$base.ptx" ||
    ! "$cuobjdump" -sass "$base.cubin" >"$base.sass"; then
    echo "sass: setting '$setting' failed" >&2
    exit 1
  fi
  echo "$n: ${setting:-auto}"
  n=$((n + 1))
done
# One row an (entry, opcode), one column a setting. An instruction line holds /*address*/, an
# optional predicate (@P0, @!PT) and the opcode with its modifiers (LDG.E.128.CONSTANT).
for ((i = 0; i < n; ++i)); do
  awk -v col="$i" '
    /Function :/ { entry = $NF }
    /^[[:space:]]*\/\*[0-9a-f]+\*\// {
      line = $0
      sub(/^[[:space:]]*\/\*[0-9a-f]+\*\/[[:space:]]*/, "", line)
      split(line, word, /[[:space:]]+/)
      op = word[1] ~ /^@/ ? word[2] : word[1]
      sub(/;$/, "", op)
      if (op != "") count[entry "\t" op]++
    }
    END { for (k in count) print k "\t" col "\t" count[k] }' "$out/$i.sass"
done | awk -F'\t' -v n="$n" '
  { key = $1 "\t" $2; keys[key] = 1; v[key, $3] = $4 }
  END {
    for (key in keys) {
      row = key
      for (i = 0; i < n; ++i) row = row "\t" (v[key, i] + 0)
      print row
    }
  }' | sort | awk -F'\t' '
  $1 != entry {
    entry = $1
    printf "\n%s\n%-28s", entry, "opcode"
    for (i = 3; i <= NF; ++i) printf " %8d", i - 3
    printf "\n"
  }
  {
    printf "%-28s", $2
    for (i = 3; i <= NF; ++i) printf " %8d", $i
    printf "\n"
  }'
