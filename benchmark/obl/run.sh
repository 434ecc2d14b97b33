#!/bin/sh
# run.sh TYPE k=v ...: one case through obl-bench, REPORT lines on stdout.
exec /usr/bin/python3 "$(dirname "$0")/../common/obl_bench_run.py" obl "$@"
