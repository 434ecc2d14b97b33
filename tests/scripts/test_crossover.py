# SPDX-License-Identifier: MIT
import os
import tempfile
import unittest

import helpers  # noqa: F401
from helpers import record
from obllib import crossover


def sharded(n, b, eng, qps, impl="obl_sharded"):
    r = record("UnorderedMap", impl, n, 8, 56, Get_throughput_qps=qps)
    r["params"].update({"Shards": 2, "Batch_size": b, "Threads": 0, "Engines": eng})
    return r


class TestCrossover(unittest.TestCase):
    def test_one_figure_per_fixed_n_and_fixed_b(self):
        recs = [sharded(n, b, e, 1e5 * e + b)
                for n in (4096, 65536) for b in (1024, 4096, 65536) for e in (1, 2)]
        recs.append(sharded(4096, 1024, 0, 3e5))  # a single point: no line of its own
        with tempfile.TemporaryDirectory() as d:
            paths = crossover.draw(recs, d)
            names = sorted(os.path.basename(p) for p in paths)
            # against B at N = 4096 and 65536; against N at B = 1024, 4096, 65536
            self.assertEqual(len(names), 5)
            self.assertIn("crossover_obl_sharded_8_56_S2_N65536_vs_B.png", names)
            self.assertIn("crossover_obl_sharded_8_56_S2_Batch_size1024_vs_N.png", names)
            for p in paths:
                with open(p, "rb") as f:
                    self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

    def test_other_types_and_single_engine_draw_nothing(self):
        recs = [record("UMAP", "obl", 1024, Get_throughput_qps=1.0)]
        recs += [sharded(4096, b, 1, 1e5) for b in (1024, 4096)]
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(crossover.draw(recs, d), [])


if __name__ == "__main__":
    unittest.main()
