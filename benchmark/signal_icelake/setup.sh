#!/bin/sh
# Locates the C sources of signalapp/ContactDiscoveryService-Icelake at the
# last C-only commit (c76f88b; later ones need the Jasmin compiler):
# $SIGNAL_ICELAKE_SRC (a checkout or an export of that commit, holding c/),
# else $OBL_PLUGIN_WORK/src, else a clone of the public repository there
# (when the network allows), with its SipHash submodule (c/SipHash, for the
# sharded table). Needs clang. Nothing of the peer is kept here.
set -u
commit=c76f88b4647c78d5fee1fa79cb59867e5906654c
work=${OBL_PLUGIN_WORK:-$(cd "$(dirname "$0")/../.." && pwd)/build/plugins/signal_icelake}
mkdir -p "$work"
src=${SIGNAL_ICELAKE_SRC:-$work/src}
if [ ! -f "$src/c/ohtable/ohtable.c" ] && [ -z "${SIGNAL_ICELAKE_SRC:-}" ]; then
    rm -rf "$work/src"
    if GIT_TERMINAL_PROMPT=0 timeout 300 git clone -q --no-checkout https://github.com/signalapp/ContactDiscoveryService-Icelake "$work/src" 2>/dev/null; then
        git -C "$work/src" checkout -q "$commit" -- c .gitmodules 2>&1 | tail -1
        timeout 300 git -C "$work/src" submodule update -q --init c/SipHash 2>&1 | tail -1
    fi
fi
if [ ! -f "$src/c/ohtable/ohtable.c" ]; then
    echo "sources of signalapp/ContactDiscoveryService-Icelake not found: set SIGNAL_ICELAKE_SRC to a checkout of $commit (no clone: no network?)"
    exit 1
fi
if git -C "$src" rev-parse HEAD >/dev/null 2>&1 && [ "$(git -C "$src" rev-parse HEAD)" != "$commit" ]; then
    echo "note: $src is at $(git -C "$src" rev-parse --short HEAD), not c76f88b; its c/ tree is used as it is"
fi
command -v clang >/dev/null 2>&1 || { echo "clang missing (apt-get install clang)"; exit 1; }
printf '%s\n' "$(cd "$src" && pwd)" > "$work/src_path"
echo "signal_icelake C sources at $src"
# The sharded table's SipHash (the c/SipHash submodule, veorq/SipHash at
# b655e36): from the sources, else $SIGNAL_SIPHASH_SRC (a checkout), else a
# clone in $OBL_PLUGIN_WORK/SipHash; without it the sharded cases fail.
siphash=$src/c/SipHash
[ -f "$siphash/halfsiphash.c" ] || siphash=${SIGNAL_SIPHASH_SRC:-$work/SipHash}
if [ ! -f "$siphash/halfsiphash.c" ] && [ -z "${SIGNAL_SIPHASH_SRC:-}" ]; then
    rm -rf "$work/SipHash"
    GIT_TERMINAL_PROMPT=0 timeout 120 git clone -q https://github.com/veorq/SipHash "$work/SipHash" 2>/dev/null \
        && git -C "$work/SipHash" checkout -q b655e36684b241bc6be9e7f7d063a9ffbadf3aa0 2>/dev/null
fi
if [ -f "$siphash/halfsiphash.c" ]; then
    printf '%s\n' "$(cd "$siphash" && pwd)" > "$work/siphash_path"
    echo "SipHash at $siphash: the sharded table is built"
else
    rm -f "$work/siphash_path"
    echo "note: no SipHash sources (c/SipHash empty, SIGNAL_SIPHASH_SRC unset, no clone): the sharded cases will fail"
fi
