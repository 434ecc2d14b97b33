# SPDX-License-Identifier: MIT
"""scripts/instr_profile.py: the callgrind reader and the size list."""
import os
import tempfile
import unittest

import helpers  # noqa: F401
import instr_profile as prof

# A callgrind file in the compressed form valgrind writes: names defined once
# as (id) name and referred to by (id) later; "calls=" lines followed by the
# call's inclusive cost; "+k" relative positions.
SAMPLE = """# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 305

ob=(1) /bin/obl-bench
fl=(1) bench.c
fn=(1) caller
10 5
cfl=(1)
cfn=(2) obl_op
calls=3 20
15 300
fn=(2)
20 150
+1 50
cfn=(3) helper
calls=6 30
21 100
fn=(3)
30 100
"""


class TestProfileReader(unittest.TestCase):
    def test_self_inclusive_and_calls(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cg.out")
            with open(path, "w") as f:
                f.write(SAMPLE)
            incl, self_ir, calls = prof.read_callgrind(path, ["obl_op"])
        self.assertEqual(self_ir, {"caller": 5, "obl_op": 200, "helper": 100})
        self.assertEqual(incl["obl_op"], 300)
        self.assertEqual(incl["caller"], 305)
        self.assertEqual(incl["helper"], 100)
        self.assertEqual(calls, {"obl_op": 3})

    def test_sizes(self):
        self.assertEqual(prof.parse_n("2^16,2^20"), [65536, 1048576])
        self.assertEqual(prof.parse_n("1000, 2^10"), [1000, 1024])


if __name__ == "__main__":
    unittest.main()
