#!/bin/sh
# SPDX-License-Identifier: MIT
# TEST DOUBLE: "builds" by recording the call.
echo build >> "$OBL_PLUGIN_WORK/calls"
