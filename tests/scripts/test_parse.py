# SPDX-License-Identifier: MIT
import json
import os
import tempfile
import unittest

import helpers  # noqa: F401  (sets sys.path)
from obllib import parse

OURS = ("REPORT_123RORAM|obl|epyc-2c| N:=1024 | Key_bytes := 8 | Value_bytes := 8 | "
        "Initialization_time_us := 12.5 | Read_latency_us := 1.25 | Read_throughput_qps := 800000.0 | "
        "Memory_kb := 40.0 | Bytes_per_entry := 40.0 REPORT_123")
# The public harness: LOG prefix on the line before, sys_* environment fields,
# no spaces around :=, the last value glued to the closing marker.
PUBLIC = ("LOG@1700000000 oram_bench.cpp:042 [benchmark_roram_8bk_8bv] \n"
          "REPORT_123RORAM|olabs_oram| sys_name := Linux | sys_hostname := box | sys_lcores := 32 | "
          "sys_pcores := 16 | sys_total_mem_b := 67108864000 | sys_used_mem_b := 1 | "
          "sys_total_swap_b := 0 | sys_used_swap_b := 0 | N:=1024 | Key_bytes := 8 | Value_bytes := 8 | "
          "Initialization_zeroed_time_us := 3.10 | Read_latency_us := 0.17 | "
          "Read_throughput_qps := 5882352.94 | Memory_kb := 48REPORT_123\n")


class TestReportLines(unittest.TestCase):
    def test_ours(self):
        [rec] = parse.parse_report_line(OURS)
        self.assertEqual(rec["report_type"], "RORAM")
        self.assertEqual(rec["impl"], "obl")
        self.assertEqual(rec["params"], {"N": 1024, "Key_bytes": 8, "Value_bytes": 8})
        self.assertEqual(rec["metrics"]["Read_latency_us"], 1.25)
        self.assertEqual(rec["metrics"]["Bytes_per_entry"], 40.0)
        self.assertEqual(rec["env"], {"tag": "epyc-2c"})

    def test_public_harness(self):
        [rec] = parse.records_from_reports(PUBLIC.splitlines(), "peer.log")
        self.assertEqual((rec["report_type"], rec["impl"]), ("RORAM", "olabs_oram"))
        self.assertEqual(rec["params"], {"N": 1024, "Key_bytes": 8, "Value_bytes": 8})
        self.assertEqual(rec["env"]["sys_lcores"], 32)
        self.assertNotIn("sys_lcores", rec["params"])
        self.assertEqual(rec["metrics"]["Memory_kb"]["median"], 48)
        self.assertAlmostEqual(rec["metrics"]["Read_latency_us"]["median"], 0.17)
        self.assertIn("Initialization_zeroed_time_us", rec["metrics"])

    def test_load_balancer_batch_is_n(self):
        line = ("REPORT_123LOADBALANCE|snoopy|v1| B:=65536 | Key_bytes := 8 | Value_bytes := 8 | "
                "Shards:= 15 | Latency_us := 51000.5 | Throughput_qps := 1285000 REPORT_123")
        (rec,) = parse.parse_report_line(line)
        self.assertEqual(rec["params"], {"N": 65536, "Key_bytes": 8, "Value_bytes": 8, "Shards": 15})
        self.assertEqual(rec["metrics"]["Latency_us"], 51000.5)

    def test_one_metric_per_line_and_repeats_merge(self):
        lines = ["REPORT_123RORAM|olabs_oram| N:=2048 | Key_bytes := 8 | Value_bytes := 8 | Read_latency_us := %s REPORT_123" % v
                 for v in ("0.30", "0.10", "0.20")]
        lines.append("REPORT_123RORAM|olabs_oram| N:=2048 | Key_bytes := 8 | Value_bytes := 8 | Memory_kb := 64REPORT_123")
        [rec] = parse.records_from_reports(lines, "peer.log")
        lat = rec["metrics"]["Read_latency_us"]
        self.assertAlmostEqual(lat["median"], 0.20)
        self.assertAlmostEqual(lat["min"], 0.10)
        self.assertAlmostEqual(lat["max"], 0.30)
        self.assertEqual(lat["lines"], 3)
        self.assertEqual(rec["metrics"]["Memory_kb"]["median"], 64)

    def test_values(self):
        self.assertEqual(parse.parse_value(" 2^20 "), 1 << 20)
        self.assertEqual(parse.parse_value("1.5"), 1.5)
        self.assertEqual(parse.parse_value("abc"), "abc")
        self.assertFalse(parse.is_metric("Key_bytes"))
        self.assertTrue(parse.is_metric("Batch_read_latency_us"))
        self.assertFalse(parse.is_metric("Capacity_blocks"))

    def test_not_a_report(self):
        self.assertEqual(parse.parse_report_line("REPORT_123 only one marker"), [])
        self.assertEqual(parse.parse_report_line("plain text"), [])


class TestJson(unittest.TestCase):
    def obj(self):
        return {"schema": "obl-bench/1", "bench": "roram", "report_type": "RORAM", "impl": "obl",
                "params": {"N": 1024, "Key_bytes": 8, "Value_bytes": 8, "queries": 10, "reps": 3, "seed": 1},
                "env": {"cpu": "x"},
                "metrics": {"Read_latency_us": {"median": 2.0, "min": 1.0, "max": 4.0, "reps": 3,
                                                "samples": [1.0, 2.0, 4.0]}}}

    def test_record(self):
        rec = parse.record_from_json(self.obj(), "f")
        self.assertEqual(rec["params"], {"N": 1024, "Key_bytes": 8, "Value_bytes": 8})
        self.assertEqual(rec["control"]["reps"], 3)
        lat = rec["metrics"]["Read_latency_us"]
        self.assertEqual((lat["median"], lat["min"], lat["max"]), (2.0, 1.0, 4.0))
        self.assertAlmostEqual(lat["q1"], 1.5)  # from the samples: q1 was missing
        self.assertAlmostEqual(lat["q3"], 3.0)

    def test_load_any_and_truncated_line(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.jsonl")
            with open(p, "w") as f:
                f.write(json.dumps(self.obj()) + "\n" + '{"schema": "obl-ben')
            [rec] = parse.load_any(p)
            self.assertEqual(rec["impl"], "obl")
            t = os.path.join(d, "peer.log")
            with open(t, "w") as f:
                f.write(PUBLIC)
            [peer] = parse.load_any(t)
            self.assertEqual(peer["impl"], "olabs_oram")

    def test_bad_json_in_middle_is_an_error(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "x.jsonl")
            with open(p, "w") as f:
                f.write('{"a": \n{"b": 1}\n')
            with self.assertRaises(ValueError):
                parse.read_jsonl(p)


if __name__ == "__main__":
    unittest.main()
