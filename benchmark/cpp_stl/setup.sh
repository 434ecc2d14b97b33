#!/bin/sh
# The driver is in this directory; a C++ compiler is all it needs.
command -v g++ >/dev/null 2>&1 || { echo "g++ not found (apt-get install g++)"; exit 1; }
