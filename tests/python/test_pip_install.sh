#!/usr/bin/env bash
# `python3 -m pip install .` with no network into a fresh virtual environment (which sees the
# system's packages, as a user's would), then the package imported and its library called from
# outside the source tree, then `pip uninstall` removes it. Arguments: the source tree, a scratch
# folder, the Python (default python3). PTXDSL_CMAKE_ARGS and PTXDSL_BUILD_JOBS pass on to the
# build (CTest: an unoptimized build with the shared libfmt, which compiles fastest).
set -euo pipefail
source_dir=$1
scratch=$2
python=${3:-python3}
rm -rf "$scratch"
mkdir -p "$scratch"
"$python" -m venv --system-site-packages "$scratch/venv"
py="$scratch/venv/bin/python3"
export PTXDSL_BUILD_DIR="$scratch/build" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1
"$py" -m pip install --no-index "$source_dir"
cd "$scratch"
unset PYTHONPATH PTXDSL_LIBRARY
"$py" -c "import ptxdsl, pathlib; print('ptxdsl', ptxdsl.version(), 'from', pathlib.Path(ptxdsl.__file__).parent)"
"$py" -c "import ptxdsl, sys; assert ptxdsl.__file__.startswith(sys.prefix), ptxdsl.__file__"
"$py" -m pip show ptxdsl | grep '^Version:' >/dev/null
"$py" -m pip uninstall -y ptxdsl
if "$py" -c "import ptxdsl" 2>/dev/null; then
  echo "ptxdsl still imports after pip uninstall" >&2
  exit 1
fi
echo "pip install, import, uninstall: OK"
