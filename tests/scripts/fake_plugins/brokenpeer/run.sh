#!/bin/sh
# TEST DOUBLE: never reached (setup fails).
exit 9
