#!/bin/sh
# SPDX-License-Identifier: MIT
# mpirun with the settings obl-mpi needs on one machine or in a container:
# as root --allow-run-as-root; --oversubscribe (more ranks than cores);
# the TCP transport on loopback (bytes cross a socket, as between machines;
# OBL_MPI_BTL=vader,self uses shared memory instead), and Open MPI's UCX
# component off (it probes for network cards a container lacks).
# Usage: sh scripts/mpirun.sh -np 4 build/src/mpi/obl-mpi --balancers 1 ...
set -eu
btl=${OBL_MPI_BTL:-self,tcp}
set -- --oversubscribe --mca btl "$btl" --mca pml ob1 --mca osc ^ucx "$@"
case "$btl" in *tcp*) set -- --mca btl_tcp_if_include lo "$@" ;; esac
[ "$(id -u)" = 0 ] && set -- --allow-run-as-root "$@"
exec mpirun "$@"
