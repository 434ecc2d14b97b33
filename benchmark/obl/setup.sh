#!/bin/sh
# The sources are this repository; only the tools are needed.
for tool in cmake cc /usr/bin/python3; do
    command -v "$tool" >/dev/null 2>&1 || { echo "missing $tool (sh scripts/install-deps.sh)"; exit 1; }
done
