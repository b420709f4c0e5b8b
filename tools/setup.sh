#!/usr/bin/env bash
# Set-up in one command on Debian 12 with the CUDA toolkit at /usr/local/cuda: installs the apt
# packages (tools/apt-packages.txt), builds (preset `default`, into build/), then runs the main
# job: prints the PTX of the default kernel (RMS norm forward, f32, 8192 columns) and, where a GPU
# and its driver exist, runs it and compares with the float64 reference.
set -euo pipefail
cd "$(dirname "$0")/.."

tools/install-packages.sh

cmake --preset default
cmake --build --preset default

cli=build/tools/ptxdsl
if [ ! -x "$cli" ]; then
  echo "setup: build/tools/ptxdsl was not built (tools/cli/ missing); nothing to run" >&2
  exit 0
fi
"$cli" emit rms_fwd --width 8192 --dtype f32
if "$cli" info >/dev/null 2>&1; then
  "$cli" run rms_fwd --width 8192 --dtype f32 --batch 2048
else
  echo "setup: no GPU driver here ($("$cli" info 2>&1 | head -n 1)); skipped 'ptxdsl run'" >&2
fi
