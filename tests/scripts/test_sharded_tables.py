# SPDX-License-Identifier: MIT
"""The sharded maps' derived tables (obllib/sharded.py): the time split's
parts, shares and rest; the targets' verdicts; other rows ignored."""
import unittest

import helpers  # noqa: F401
from helpers import record
from obllib import sharded


def case(n, b, s=2, eng=0, impl="obl_sharded", kv=(8, 56), **metrics):
    r = record("UnorderedMap", impl, n, kv[0], kv[1], **metrics)
    r["params"].update({"Shards": s, "Batch_size": b, "Threads": 0, "Engines": eng})
    return r


class TestTimeSplit(unittest.TestCase):
    def test_parts_shares_and_rest(self):
        recs = [case(1 << 20, 65536, Get_latency_us=80000.0, Balance_us=30000.0,
                     Shard_us=40000.0, Get_writeback_latency_us=2000.0, Engine=2.0),
                record("UnorderedMap", "obl", 1 << 20, Get_latency_us=5.0),  # not sharded
                case(1 << 20, 1024, impl="olabs_oram_sharded", Get_latency_us=1.0)]
        t = sharded.time_split_table(recs)
        self.assertEqual(len(t.rows), 1)
        row = dict(zip(t.header, t.rows[0]))
        self.assertEqual(row["N"], "$2^{20}$")
        self.assertEqual(row["Engine"], "2")
        self.assertEqual(row["Batch (ms)"], "80.0")
        self.assertEqual(row["Balancer (ms)"], "30.0 (38 %)")
        self.assertEqual(row["Shards (ms)"], "40.0 (50 %)")
        self.assertEqual(row["Write-back (ms)"], "2.00 (2 %)")
        self.assertEqual(row["Rest (ms)"], "8.00 (10 %)")
        self.assertTrue(t.note.startswith("DERIVED"))

    def test_nothing_to_split(self):
        self.assertIsNone(sharded.time_split_table([record("UMAP", "obl", 1024, Get_latency_us=1.0)]))


class TestTargets(unittest.TestCase):
    def test_verdicts_at_n_2_20_only(self):
        n = 1 << 20
        recs = [case(n, 65536, Get_latency_us=70000.0, Get_throughput_qps=936000.0,
                     Memory_kb=150.0 * n / 1024, Initialization_time_us=400000.0),
                case(n, 1024, impl="obl_batched", s=1, Get_latency_us=3000.0,
                     Get_throughput_qps=340000.0, Memory_kb=480.0 * n / 1024,
                     Initialization_time_us=1.2e6),
                case(1 << 16, 1024, Get_latency_us=1.0, Get_throughput_qps=1.0)]  # other N
        t = sharded.targets_table(recs)
        self.assertEqual(len(t.rows), 2)
        rows = {r[0]: dict(zip(t.header, r)) for r in t.rows}
        s, b = rows["obl_sharded"], rows["obl_batched"]
        self.assertEqual(s["Target q/s"], "1000000: not met")
        self.assertEqual(b["Target q/s"], "300000: met")
        self.assertTrue(s["Memory B/entry (target <= 200)"].endswith(": met"))
        self.assertTrue(b["Memory B/entry (target <= 200)"].endswith("not met"))
        self.assertEqual(s["Build s (target < 1)"], "0.400: met")
        self.assertEqual(b["Build s (target < 1)"], "1.20: not met")


if __name__ == "__main__":
    unittest.main()
