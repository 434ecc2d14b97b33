# SPDX-License-Identifier: MIT
"""The default plan of the real obl-bench (not the fake driver), end to end.

Registered in ctest as scripts_bench_plan with OBL_BENCH_REAL = the built
obl-bench; it is not named test_*.py, so the fake-driver discovery run
(scripts_unittest) does not pick it up. Run by hand:
  OBL_BENCH_REAL=build/bench/obl-bench /usr/bin/python3 -m unittest -v bench_plan_real
(from tests/scripts).
"""
import os
import tempfile
import unittest

import helpers  # noqa: F401 - puts scripts/ on sys.path
from obllib import inputs, plan, runner, stats, tables

BIN = os.environ.get("OBL_BENCH_REAL", "")


def match_key(case):
    return tuple(case["params"][p] for p in tables.MATCH_PARAMS)


class TestRealPlan(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BIN, os.X_OK):
            raise RuntimeError(f"OBL_BENCH_REAL={BIN!r} is not an executable obl-bench "
                               "(ctest sets it to the built one)")

    def test_every_oram_case_has_its_array_baseline(self):
        for large in (False, True):
            cases = runner.list_cases(BIN, None, large)
            oram = [c for c in cases if c["report_type"] in tables.BASELINE_FOR
                    and c["impl"] not in tables.BASELINES]
            base = {match_key(c) for c in cases if c["impl"] == "baseline_array"}
            self.assertTrue(any(c["report_type"] == "NRORAM" and c["params"]["Key_bytes"] == 4
                                for c in oram), "the plan has NRORAM cases with 4-byte keys")
            self.assertEqual([plan.case_name(c) for c in oram if match_key(c) not in base], [],
                             f"ORAM cases without an array baseline (large={large})")

    def test_key_bytes_4_nroram_row_gets_a_measured_ratio(self):
        """plan -> case list of the K=4 NRORAM case and its baseline -> run.py ->
        results.json -> tables: the row's ratio is the two measured medians'."""
        params = {"N": 1024, "Key_bytes": 4, "Value_bytes": 8}
        pick = [c for c in runner.list_cases(BIN, 1024) if c["params"] == params]
        self.assertEqual(sorted(c["bench"] for c in pick), ["array", "nroram"])
        with tempfile.TemporaryDirectory() as d:
            selector = os.path.join(d, "cases.txt")
            with open(selector, "w") as f:
                f.write(plan.format_case_list([("run", c) for c in pick]))
            res = os.path.join(d, "results")
            r = helpers.script("run.py", "--bench-bin", BIN, "--max-n", "1024",
                               "--selector", selector, "--reps", "2", "--no-noise",
                               "--bench-arg=--queries", "--bench-arg=2000",
                               "--results", res, "--log-dir", os.path.join(d, "logs"))
            self.assertEqual(r.returncode, 0, r.stderr)
            records, _, _, _ = inputs.gather(os.path.join(res, "results.json"))
        lat = {r["impl"]: r["metrics"]["Read_latency_us"]["median"]
               for r in records if r["params"] == params}
        self.assertEqual(sorted(lat), ["baseline_array", "obl"])
        t = {x.key: x for x in tables.measured_tables(records)}[
            "NRORAM | Key_bytes=4,Value_bytes=8 | Read_latency_us"]
        self.assertEqual(t.header, ["N", "obl", "baseline_array", "obl ÷ baseline_array"])
        self.assertEqual(t.rows[0][3], stats.fmt(lat["obl"] / lat["baseline_array"], 3))


if __name__ == "__main__":
    unittest.main()
