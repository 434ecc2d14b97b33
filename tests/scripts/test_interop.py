# SPDX-License-Identifier: MIT
"""Golden interop test: hand-written REPORT lines in the public harness's
exact format (golden/harness_report_lines.txt: one per implementation row of
its field table, with its LOG@ prefix line and sys_* version fields) parse
into the expected records and tables; obl's own format reads the same way
under the harness's parsing (interop.py). bench_interop_real.py does the
same with the lines of the built obl-bench."""
import os
import unittest

import helpers
from interop import harness_parse_line
from obllib import parse, tables

GOLDEN = os.path.join(helpers.HERE, "golden", "harness_report_lines.txt")

P = {"N", "Key_bytes", "Value_bytes"}
RO = {"Initialization_zeroed_time_us", "Read_latency_us", "Read_throughput_qps", "Memory_kb"}
INS = {"Insertion_latency_us", "Insertion_throughput_qps"}
MAP = {"Initialization_time_us", "Get_latency_us", "Get_throughput_qps", "Memory_kb"}
# (type, implementation) -> (parameters, metrics), from the field table
EXPECTED = {
    ("NRORAM", "olabs_oram"): (P, RO),
    ("RORAM", "olabs_oram"): (P, RO),
    ("RORAM", "Signal"): (P, RO | INS),
    ("RORAM", "Signal_Jasmine"): (P | {"Path_length", "Capacity_blocks", "Capacity_records",
                                       "Inserted_records", "Query_count", "Target_fill", "fill"},
                                  RO | INS),
    ("UnorderedMap", "olabs_oram"): (P | {"fill"}, MAP),
    ("UnorderedMap", "olabs_oram_shortkv"): (P | {"fill"}, MAP),
    ("UnorderedMap", "Signal"): (P | {"fill"}, MAP),
    ("UnorderedMap", "Signal_Jasmine"): (P | {"Path_length", "Capacity_records", "fill"}, MAP),
    ("UnorderedMap", "olabs_oram_sharded"): (
        P | {"Shards", "Batch_size", "fill"},
        MAP | {"Get_burst_latency_us", "Get_burst_throughput_qps", "Get_writeback_latency_us"}),
    ("UnorderedMap", "Signal_Sharded"): (P | {"Shards", "Batch_size", "fill"}, MAP),
    ("UnorderedMap", "Signal_Jasmine_Sharded"): (
        P | {"Path_length", "Shards", "Batch_size", "Capacity_records", "fill"}, MAP),
    # the batch size B is read as N (the tables' rows)
    ("LOADBALANCE", "olabs_oram"): ({"N", "Key_bytes", "Value_bytes", "Shards"},
                                    {"Latency_us", "Throughput_qps"}),
    ("LOADBALANCE", "snoopy"): ({"N", "Key_bytes", "Value_bytes", "Shards"},
                                {"Latency_us", "Throughput_qps"}),
}


def golden_records():
    recs = parse.load_any(GOLDEN)
    for r in recs:
        r["origin"] = "run"
    return recs


class TestHarnessLines(unittest.TestCase):
    def test_every_type_and_field(self):
        recs = golden_records()
        got = {(r["report_type"], r["impl"]): r for r in recs}
        self.assertEqual(set(got), set(EXPECTED))
        for key, (params, metrics) in EXPECTED.items():
            r = got[key]
            self.assertEqual(set(r["params"]), params, key)
            self.assertEqual(set(r["metrics"]), metrics, key)
            self.assertEqual(r["env"]["sys_lcores"], 32, key)
        self.assertEqual(got[("UnorderedMap", "olabs_oram")]["params"]["fill"], 0.8)
        self.assertEqual(got[("UnorderedMap", "olabs_oram_sharded")]["params"]["Shards"], 15)
        self.assertEqual(got[("RORAM", "Signal")]["metrics"]["Insertion_latency_us"]["median"], 2.5)
        self.assertEqual(got[("LOADBALANCE", "snoopy")]["metrics"]["Latency_us"]["median"], 974.54)

    def test_tables_of_the_golden_lines(self):
        tabs = {t.key: t for t in tables.measured_tables(golden_records(), spread="none")}
        t = tabs["UnorderedMap | Key_bytes=8,Value_bytes=56,fill=0.8 | Get_latency_us"]
        self.assertEqual(t.header, ["N", "Signal", "Signal_Jasmine", "olabs_oram",
                                    "olabs_oram_shortkv"])
        self.assertEqual(t.rows[0], ["$2^{10}$", "7.800", "", "1.870", "1.500"])
        self.assertIn("fill=0.8", t.subsection)
        t = tabs["UnorderedMap | Key_bytes=8,Value_bytes=56,Batch_size=1024,Shards=15,fill=0.8 | "
                 "Get_latency_us"]
        self.assertEqual(t.rows, [["$2^{10}$", "725.2"]])
        # per batch: the hash map's per-get figure is no baseline for it
        recs = golden_records() + [helpers.record("UnorderedMap", "baseline_hashmap", 1024, v=56,
                                                  Get_latency_us=0.06)]
        recs[-1]["params"]["fill"] = 0.8
        tabs = {t.key: t for t in tables.measured_tables(recs, spread="none")}
        t = tabs["UnorderedMap | Key_bytes=8,Value_bytes=56,Batch_size=1024,Shards=15,fill=0.8 | "
                 "Get_latency_us"]
        self.assertEqual(t.header, ["N", "olabs_oram_sharded"])
        t = tabs["LOADBALANCE | Key_bytes=8,Value_bytes=8,Shards=15 | Latency_us"]
        self.assertEqual(t.header, ["N", "olabs_oram", "snoopy"])
        self.assertIn("batch size B", t.section)
        self.assertEqual(t.rows, [["$2^{10}$", "352.7", "974.5"]])
        t = tabs["RORAM | Key_bytes=8,Value_bytes=8 | Insertion_latency_us"]
        self.assertEqual(t.header, ["N", "Signal"])  # Signal_Jasmine's has a fill: its own
        # the sizing fields that vary with N do not split a table
        t = tabs["UnorderedMap | Key_bytes=8,Value_bytes=56,fill=0.8 | Get_latency_us"]
        self.assertEqual(len(t.rows), 2)  # 2^10 and Signal_Jasmine's 2^14

    def test_harness_parser_reads_the_golden_lines(self):
        # the harness's own reading agrees with ours on every field
        ours = {(r["report_type"], r["impl"]): r for r in golden_records()}
        with open(GOLDEN) as f:
            theirs = [harness_parse_line(l) for l in f if "REPORT_123" in l]
        self.assertEqual(len(theirs), len(EXPECTED))
        for h in theirs:
            r = ours[(h["benchmark_type"], h["implementation"])]
            for name in list(r["params"]) + list(r["metrics"]):
                self.assertIn("B" if name == "N" and "B" in h else name, h)

    def test_aliases_of_older_names(self):
        [r] = parse.parse_report_line("REPORT_123UMAP|obl|tag| N:=1024 | Get_latency_us := 4 REPORT_123")
        self.assertEqual((r["report_type"], r["impl"]), ("UnorderedMap", "obl"))
        [r] = parse.parse_report_line("REPORT_123Sharded-UMAP|obl|tag| N:=1024 | Shards := 4 | "
                                      "Get_latency_us := 4 REPORT_123")
        self.assertEqual((r["report_type"], r["impl"]), ("UnorderedMap", "obl_sharded"))


class TestOblFormatReadsThere(unittest.TestCase):
    # obl-bench's line as docs/benchmark-format.md shows it
    LINE = ("REPORT_123UnorderedMap|obl|AMD-EPYC/2c/avx2/abc123| N:=1024 | Key_bytes := 8 | "
            "Value_bytes := 56 | fill := 0.8 | Initialization_time_us := 2000 | "
            "Get_latency_us := 2.5 | Get_throughput_qps := 400000 | Warmup_get_latency_us := 2.9 | "
            "Memory_kb := 160 | Allocated_kb := 150 | Bytes_per_entry := 150 REPORT_123")

    def test_harness_reading(self):
        h = harness_parse_line(self.LINE)
        self.assertEqual((h["benchmark_type"], h["implementation"]), ("UnorderedMap", "obl"))
        self.assertEqual(h["extra"], ["AMD-EPYC/2c/avx2/abc123"])
        self.assertEqual((h["N"], h["fill"], h["Get_latency_us"], h["Memory_kb"]),
                         ("1024", "0.8", "2.5", "160"))
        [r] = parse.parse_report_line(self.LINE)
        self.assertEqual(r["params"], {"N": 1024, "Key_bytes": 8, "Value_bytes": 56, "fill": 0.8})


if __name__ == "__main__":
    unittest.main()
