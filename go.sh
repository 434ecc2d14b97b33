#!/bin/sh
# The obl benchmark suite, start to finish:
#   sh go.sh [--large] [--max-n N] [--timeout S] [--reps R] [--no-noise] ...
# 1. installs what is missing with apt-get (sh scripts/install-deps.sh, as
#    scripts/test_all.sh does; nothing when everything is there),
# 2. builds the release configuration (build/, obl-bench in build/bench/),
# 3. runs the plan with scripts/run.py (arguments are passed on to it):
#    logs/full_runs/<timestamp>.jsonl and results/,
# 4. prints the Markdown tables (also in results/tables.md) and writes them
#    as the results page docs/results/latest.md (linked from README.md),
# 5. draws the PNG figures under figures/.
# BENCHMARK_MODE=plan prints the case list instead of running it (steps 1-2
# still run); BENCHMARK_SELECTOR=cases.txt runs only the cases marked run.
# Implementations are plug-ins (benchmark/<name>/): obl, the baselines and
# every peer whose sources are found (OLABS_ORAM_SRC, SIGNAL_ICELAKE_SRC with
# SIGNAL_SIPHASH_SRC, or a clone when the network allows); a peer that cannot
# be set up is skipped with its reason. OBL_PEERS=olabs_oram,signal_icelake
# runs only those peers (and installs their build's packages first),
# OBL_PEERS=none none.
# Exit status: non-zero if the build or any case failed. See docs/suite.md.
set -eu
cd "$(dirname "$0")"
PY=/usr/bin/python3

log() { printf 'go.sh: %s\n' "$*" >&2; }

if [ -n "${OBL_PEERS:-}" ] && [ "${OBL_PEERS}" != none ]; then
    sh scripts/install-deps.sh --peers >&2
else
    sh scripts/install-deps.sh >&2
fi

log "building the release configuration in build/"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >&2
cmake --build build -j2 >&2

if [ "${BENCHMARK_MODE:-run}" = plan ]; then
    exec "$PY" scripts/run.py "$@"
fi

mkdir -p results
status=0
"$PY" scripts/run.py "$@" > results/cases.csv || status=$?
if [ "$status" -ge 2 ]; then
    log "scripts/run.py failed (status $status)"
    exit "$status"
fi
"$PY" scripts/generate_readme_bodies.py --write-results docs/results/latest.md > results/tables.md
cat results/tables.md
"$PY" scripts/draw_figures.py --clean >&2
if [ "$status" -ne 0 ]; then
    log "some cases failed or timed out: see results/results.csv and the log in logs/full_runs/"
fi
exit "$status"
