#!/bin/sh
# run.sh TYPE k=v ...: one case, one REPORT line per repetition on stdout
# (the peer's own log lines go to stderr).
work=${OBL_PLUGIN_WORK:-$(cd "$(dirname "$0")/../.." && pwd)/build/plugins/signal_icelake}
exec "$work/signal_bench" "$@"
