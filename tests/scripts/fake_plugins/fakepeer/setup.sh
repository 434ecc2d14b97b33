#!/bin/sh
# SPDX-License-Identifier: MIT
# TEST DOUBLE: ready when FAKEPEER_SRC names a directory (the "sources").
[ -d "${FAKEPEER_SRC:-/nonexistent}" ] || { echo "fakepeer sources not found: set FAKEPEER_SRC"; exit 1; }
echo setup >> "$OBL_PLUGIN_WORK/calls"
