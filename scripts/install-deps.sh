#!/bin/sh
# SPDX-License-Identifier: MIT
# Installs, with apt-get, the Debian 12 packages obl's build, tests and
# benchmark suite need, when they are missing. Safe to run again: it does
# nothing when everything is there. Must run as root when something is missing.
#   sh scripts/install-deps.sh            what the build, tests and suite need
#   sh scripts/install-deps.sh --peers    also what the peer plug-ins' builds
#                                         need (benchmark/olabs_oram: BearSSL,
#                                         Boost headers; signal_icelake: clang)
set -eu
need=""
if [ "${1:-}" = --peers ]; then
  [ -f /usr/include/bearssl.h ] || need="$need libbearssl-dev"
  [ -f /usr/include/boost/version.hpp ] || need="$need libboost-dev"
fi
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v g++ >/dev/null 2>&1 || need="$need g++"
command -v clang >/dev/null 2>&1 || need="$need clang"
command -v cmake >/dev/null 2>&1 || need="$need cmake"
command -v make >/dev/null 2>&1 || need="$need make"
command -v git >/dev/null 2>&1 || need="$need git"
# the install test builds an example against the installed library with it
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
# the symbol check (tests/pkg) reads the library with nm, readelf, objcopy
command -v readelf >/dev/null 2>&1 || need="$need binutils"
command -v valgrind >/dev/null 2>&1 && [ -f /usr/include/valgrind/memcheck.h ] || need="$need valgrind"
[ -x /usr/bin/python3 ] || need="$need python3"
# obl_mpi (obl/mpi.h, obl-mpi) and its tests: Open MPI and OpenSSL's libcrypto
command -v mpirun >/dev/null 2>&1 || need="$need openmpi-bin"
[ -f /usr/include/x86_64-linux-gnu/mpi/mpi.h ] || [ -f /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h ] || need="$need libopenmpi-dev"
[ -f /usr/include/openssl/evp.h ] || need="$need libssl-dev"
if [ -x /usr/bin/python3 ]; then
  /usr/bin/python3 -c 'import numpy' 2>/dev/null || need="$need python3-numpy"
  /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || need="$need python3-matplotlib"
else
  need="$need python3-numpy python3-matplotlib"
fi
if [ -n "$need" ]; then
  echo "install-deps: installing$need" >&2
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: not root; run as root or install:$need" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $need >/dev/null
fi
