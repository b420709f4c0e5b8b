#!/usr/bin/env bash
# Installs the Debian packages the build needs (tools/apt-packages.txt, one a line), through sudo
# unless run as root. Shared by tools/setup.sh and CI so the two never disagree.
set -euo pipefail
list="$(dirname "$0")/apt-packages.txt"
mapfile -t packages < <(grep -v '^\s*\(#\|$\)' "$list")
as_root=()
if [ "$(id -u)" -ne 0 ]; then as_root=(sudo); fi
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y "${packages[@]}"
