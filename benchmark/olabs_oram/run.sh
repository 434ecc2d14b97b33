#!/bin/sh
# run.sh TYPE k=v ...: one case, one REPORT line per repetition on stdout
# (the suite keeps only the REPORT lines of the library's output).
work=${OBL_PLUGIN_WORK:-$(cd "$(dirname "$0")/../.." && pwd)/build/plugins/olabs_oram}
exec "$work/olabs_bench" "$@"
