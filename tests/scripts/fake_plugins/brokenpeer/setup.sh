#!/bin/sh
# SPDX-License-Identifier: MIT
# TEST DOUBLE: its sources are never there.
echo "looking for the sources"
echo "sources of brokenpeer not found: set BROKENPEER_SRC"
exit 1
