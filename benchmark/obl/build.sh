#!/bin/sh
# obl-bench in the release configuration (what go.sh builds).
set -eu
root=${OBL_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" -j2 --target obl-bench >/dev/null
