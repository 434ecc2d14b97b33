#!/bin/sh
# run.sh TYPE k=v ...: one case, one REPORT line per repetition on stdout.
here=$(cd "$(dirname "$0")" && pwd)
work=${OBL_PLUGIN_WORK:-$here/../../build/plugins/cpp_stl}
exec "$work/cpp_stl_bench" "$@"
