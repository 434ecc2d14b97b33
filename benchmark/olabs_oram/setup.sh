#!/bin/sh
# Locates the sources of obliviouslabs/oram: $OLABS_ORAM_SRC (a checkout),
# else $OBL_PLUGIN_WORK/src, else a clone of the public repository there
# (when the network allows). Checks the Debian packages its headers need
# (sh scripts/install-deps.sh --peers installs them). Nothing of the peer is
# kept in this repository.
set -u
work=${OBL_PLUGIN_WORK:-$(cd "$(dirname "$0")/../.." && pwd)/build/plugins/olabs_oram}
mkdir -p "$work"
src=${OLABS_ORAM_SRC:-$work/src}
if [ ! -f "$src/omap/odsl/omap.hpp" ] && [ -z "${OLABS_ORAM_SRC:-}" ]; then
    rm -rf "$work/src"
    GIT_TERMINAL_PROMPT=0 timeout 300 git clone -q https://github.com/obliviouslabs/oram "$work/src" 2>&1 | tail -1
fi
if [ ! -f "$src/omap/odsl/omap.hpp" ]; then
    echo "sources of obliviouslabs/oram not found: set OLABS_ORAM_SRC to a checkout (no clone: no network?)"
    exit 1
fi
[ -f /usr/include/bearssl.h ] || { echo "libbearssl-dev missing: sh scripts/install-deps.sh --peers"; exit 1; }
[ -f /usr/include/boost/version.hpp ] || { echo "libboost-dev missing: sh scripts/install-deps.sh --peers"; exit 1; }
command -v g++ >/dev/null 2>&1 || { echo "g++ missing"; exit 1; }
printf '%s\n' "$(cd "$src" && pwd)" > "$work/src_path"
echo "obliviouslabs/oram at $src ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
