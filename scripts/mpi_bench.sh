#!/bin/sh
# SPDX-License-Identifier: MIT
# The measurements of docs/mpi.md, in one command (after the release build):
#   sh scripts/mpi_bench.sh [LOG]        (default logs/mpi/<time>.log)
# 1. the MPI path against the threaded path at the same S (obl-bench
#    sharded with T = S threads; obl-mpi with one balancer and S shard
#    ranks), N = 2^16, B = 1024 and 4096, 8/56;
# 2. rank scaling on loopback: one balancer and R = 1..4 shard ranks (S = R),
#    and two balancers with two shard ranks; R = 1, 2 with pipelined epochs;
# 3. the shard engines' constants for the cost model: obl-bench batched
#    (one shard, one thread) with each engine at N = 2^14 .. 2^18.
# Every line is a REPORT line; scripts/mpi_model.py reads the log.
set -eu
cd "$(dirname "$0")/.."
log=${1:-logs/mpi/$(date -u +%Y%m%dT%H%M%SZ).log}
mkdir -p "$(dirname "$log")"
bench=build/bench/obl-bench
mpi=build/src/mpi/obl-mpi
q=${OBL_MPI_QUERIES:-32768}
{
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) cores $(nproc); load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# git: $(git rev-parse --short HEAD)"
} >>"$log"
run_mpi() { # np L S B N [obl-mpi flags]
  np=$1 L=$2 S=$3 B=$4 N=$5
  shift 5
  sh scripts/mpirun.sh -np "$np" "$mpi" --balancers "$L" --shards "$S" --batch "$B" --n "$N" \
    --batches $(( q / B > 4 ? q / B : 4 )) --seed 1 "$@" 2>&1 | grep REPORT_123 >>"$log"
}
for B in 1024 4096; do
  for S in 1 2; do
    "$bench" sharded --n 65536 --batch "$B" --shards "$S" --threads "$S" --reps 1 \
      --queries "$q" 2>&1 | grep REPORT_123 >>"$log"
    run_mpi $((S + 1)) 1 "$S" "$B" 65536
  done
done
for R in 3 4; do run_mpi $((R + 1)) 1 "$R" 4096 65536; done
run_mpi 4 2 2 4096 65536
for R in 1 2; do run_mpi $((R + 1)) 1 "$R" 4096 65536 --pipeline 1; done
for N in 16384 65536 262144; do
  for E in 1 2; do
    "$bench" batched --n "$N" --batch 4096 --threads 1 --engines "$E" --reps 1 \
      --queries 16384 2>&1 | grep REPORT_123 >>"$log"
  done
done
echo "# load at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"
echo "mpi_bench: wrote $log" >&2
