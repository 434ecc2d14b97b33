# SPDX-License-Identifier: MIT
"""obl-bench's REPORT lines read by the same code as the harness's (golden
test: test_interop.py), from the real binary, through the obl and
c_baselines plug-ins' run.sh: the harness's type names, every field it
defines for the type, with its meaning's name (Initialization_zeroed_time_us,
Memory_kb next to Allocated_kb, fill 0.8 for the map), and the harness's own
reading of the line agreeing with ours.

Registered in ctest as scripts_bench_interop with OBL_BENCH_REAL = the built
obl-bench (not named test_*.py: the fake-driver discovery skips it). By hand:
  OBL_BENCH_REAL=build/bench/obl-bench /usr/bin/python3 -m unittest -v bench_interop_real
"""
import os
import subprocess
import unittest

import helpers
from interop import harness_parse_line
from obllib import parse

BIN = os.environ.get("OBL_BENCH_REAL", "")
HARNESS_FIELDS = {  # the harness's fields of each type (its olabs_oram rows)
    "NRORAM": {"N", "Key_bytes", "Value_bytes", "Initialization_zeroed_time_us",
               "Read_latency_us", "Read_throughput_qps", "Memory_kb"},
    "RORAM": {"N", "Key_bytes", "Value_bytes", "Initialization_zeroed_time_us",
              "Read_latency_us", "Read_throughput_qps", "Memory_kb"},
    "UnorderedMap": {"N", "Key_bytes", "Value_bytes", "fill", "Initialization_time_us",
                     "Get_latency_us", "Get_throughput_qps", "Memory_kb"},
}


def run_plugin(plugin, *args):
    env = dict(os.environ, OBL_BENCH=BIN, OBL_ROOT=helpers.ROOT)
    script = os.path.join(helpers.ROOT, "benchmark", plugin, "run.sh")
    r = subprocess.run(["sh", script] + list(args), capture_output=True, text=True, env=env,
                       timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"{plugin} run.sh {args}: exit {r.returncode}: {r.stderr[-500:]}")
    return [l for l in r.stdout.splitlines() if "REPORT_123" in l]


class TestOblBenchLines(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(BIN, os.X_OK):
            raise RuntimeError(f"OBL_BENCH_REAL={BIN!r} is not an executable obl-bench")

    def check(self, lines, rtype, impl, extra_fields=()):
        self.assertEqual(len(lines), 1, lines)
        [rec] = parse.parse_report_line(lines[0])
        self.assertEqual((rec["report_type"], rec["impl"]), (rtype, impl))
        fields = set(rec["params"]) | set(rec["metrics"])
        self.assertLessEqual(HARNESS_FIELDS[rtype] | set(extra_fields), fields)
        h = harness_parse_line(lines[0])
        self.assertEqual((h["benchmark_type"], h["implementation"]), (rtype, impl))
        for name in fields:
            self.assertIn(name, h)
            value = rec["params"].get(name, rec["metrics"].get(name))
            value = value["median"] if isinstance(value, dict) else value
            self.assertAlmostEqual(float(h[name]), float(value), places=6)
        return rec

    def test_nroram_and_roram(self):
        for rtype in ("NRORAM", "RORAM"):
            rec = self.check(run_plugin("obl", rtype, "N=1024", "Key_bytes=8", "Value_bytes=8",
                                        "reps=1", "queries=500"), rtype, "obl",
                             ("Allocated_kb", "Warmup_read_latency_us", "Initialization_time_us"))
            self.assertGreater(rec["metrics"]["Allocated_kb"], 8)

    def test_map_at_the_harness_fill(self):
        rec = self.check(run_plugin("obl", "UnorderedMap", "N=1024", "Key_bytes=8",
                                    "Value_bytes=56", "fill=0.8", "reps=1", "queries=500"),
                         "UnorderedMap", "obl", ("Allocated_kb", "Warmup_get_latency_us"))
        self.assertEqual(rec["params"]["fill"], 0.8)
        rec = self.check(run_plugin("c_baselines", "UnorderedMap", "N=1024", "Key_bytes=8",
                                    "Value_bytes=8", "fill=0.8", "reps=1", "queries=500"),
                         "UnorderedMap", "baseline_hashmap")
        self.assertEqual(rec["params"]["fill"], 0.8)

    def test_sharded_and_batched(self):
        """The harness's sharded fields (its olabs_oram_sharded row), per
        batch and per query as it defines them."""
        sharded = HARNESS_FIELDS["UnorderedMap"] | {
            "Shards", "Batch_size", "Get_burst_latency_us", "Get_burst_throughput_qps",
            "Get_writeback_latency_us"}
        for bench, impl, shards in (("sharded", "obl_sharded", "3"), ("batched", "obl_batched", "1")):
            args = [BIN, bench, "--n", "1024", "--batch", "128", "--threads", "2", "--reps", "1",
                    "--queries", "512"] + (["--shards", shards] if bench == "sharded" else [])
            r = subprocess.run(args, capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr[-500:])
            lines = [l for l in r.stdout.splitlines() if "REPORT_123" in l]
            rec = self.check(lines, "UnorderedMap", impl, sharded - HARNESS_FIELDS["UnorderedMap"])
            p, m = rec["params"], rec["metrics"]
            self.assertEqual((p["Shards"], p["Batch_size"], p["fill"]), (int(shards), 128, 0.8))
            lat, qps = m["Get_latency_us"], m["Get_throughput_qps"]
            self.assertAlmostEqual(qps, 128 / lat * 1e6, delta=qps * 1e-3)  # latency per batch


if __name__ == "__main__":
    unittest.main()
