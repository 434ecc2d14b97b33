# SPDX-License-Identifier: MIT
import os
import tempfile
import unittest

import helpers  # noqa: F401
from helpers import record
from obllib import figures


class TestFigures(unittest.TestCase):
    def test_draws_one_png_per_metric_family(self):
        recs = []
        for n in (1024, 2048, 4096):
            for impl in ("obl", "baseline_array"):
                recs.append(record("RORAM", impl, n, Read_latency_us=1.0 + n / 1e3,
                                   Read_throughput_qps=1e6, Initialization_time_us=n * 0.1,
                                   Memory_kb=n / 10, Odd_metric_count=3))
        with tempfile.TemporaryDirectory() as d:
            paths = figures.draw_all(recs, d)
            self.assertEqual(len(paths), 4)
            for p in paths:
                with open(p, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertTrue(any("Read_latency_us" in p for p in paths))


if __name__ == "__main__":
    unittest.main()
