#!/bin/sh
# SPDX-License-Identifier: MIT
# TEST DOUBLE: run.sh TYPE k=v ... -> one synthetic REPORT line per repetition,
# in the public harness's envelope (sys_* version fields); latency 0.5 us
# (the fake obl-bench's obl is slower), 0.7 us for a "public method" run.
echo "run $*" >> "$OBL_PLUGIN_WORK/calls"
exec /usr/bin/python3 - "$@" <<'PY'
import sys
args = dict(a.split("=", 1) for a in sys.argv[2:])
rtype, reps = sys.argv[1], int(args.get("reps", "1"))
impl = "fakepeer_pubmethod" if args.get("method") == "public" else "fakepeer"
lat = 0.7 if impl.endswith("pubmethod") else 0.5
for r in range(reps):
    fields = f"N:={args['N']} | Key_bytes := {args['Key_bytes']} | Value_bytes := {args['Value_bytes']}"
    if "fill" in args:
        fields += f" | fill:={args['fill']}"
    name = "Get" if rtype == "UnorderedMap" else "Read"
    fields += f" | {name}_latency_us := {lat + 0.01 * r:.2f} | Memory_kb := 64"
    print(f"LOG@1 fake.c:001 [main] \nREPORT_123{rtype}|{impl}| sys_name := Linux | sys_lcores := 2 | {fields}REPORT_123\n")
PY
