#!/bin/sh
# SPDX-License-Identifier: MIT
# TEST DOUBLE: never reached (setup fails).
exit 9
