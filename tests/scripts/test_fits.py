# SPDX-License-Identifier: MIT
import math
import random
import unittest

import helpers  # noqa: F401
from helpers import record
from obllib import fits


class TestFits(unittest.TestCase):
    def test_ols_exact_and_noisy(self):
        X = [[1.0, float(k)] for k in range(10, 21)]
        y = [0.5 + 0.25 * k for k in range(10, 21)]
        coef, se, r2 = fits.ols(X, y)
        self.assertAlmostEqual(coef[0], 0.5, places=9)
        self.assertAlmostEqual(coef[1], 0.25, places=9)
        self.assertLess(se[1], 1e-9)
        self.assertAlmostEqual(r2, 1.0)
        rng = random.Random(5)
        y = [0.5 + 0.25 * k + rng.gauss(0, 0.05) for k in range(10, 21)]
        coef, se, r2 = fits.ols(X, y)
        # the known coefficients lie within 4 standard errors, and the errors are plausible
        self.assertLess(abs(coef[1] - 0.25), 4 * se[1])
        self.assertLess(abs(coef[0] - 0.5), 4 * se[0])
        self.assertTrue(0.001 < se[1] < 0.05)

    def test_standard_error_textbook(self):
        # y = 1, 3, 2 at x = 0, 1, 2: slope 0.5, s^2 = 1.5, se(slope) = sqrt(1.5 / 2)
        coef, se, _ = fits.ols([[1, 0], [1, 1], [1, 2]], [1, 3, 2])
        self.assertAlmostEqual(coef[1], 0.5)
        self.assertAlmostEqual(se[1], math.sqrt(0.75))
        self.assertAlmostEqual(se[0], math.sqrt(1.5 * 5 / 6))

    def test_too_few_points(self):
        with self.assertRaises(ValueError):
            fits.ols([[1, 0]], [1])
        coef, se, _ = fits.ols([[1, 0], [1, 1]], [1, 2])
        self.assertTrue(math.isnan(se[0]))

    def test_latency_decomposition_with_value_size(self):
        recs = [record("RORAM", "obl", 2 ** k, v=v,
                       Read_latency_us=0.4 + 0.3 * k + 0.02 * v, Memory_kb=(1000 + 72 * 2 ** k) / 1024)
                for k in range(10, 16) for v in (8, 56)]
        [f] = fits.latency_fits(recs)
        # the base is the latency at the smallest N and V measured (2^10, 8 B)
        self.assertEqual((f["n0"], f["v0"]), (1024, 8))
        self.assertAlmostEqual(f["base"][0], 0.4 + 0.3 * 10 + 0.02 * 8, places=9)
        self.assertAlmostEqual(f["per_level"][0], 0.3, places=9)
        self.assertIsNone(f["beyond_knee"])
        self.assertIsNone(f["refused"])
        self.assertAlmostEqual(f["per_byte"][0], 0.02, places=9)
        self.assertEqual(f["points"], 12)
        mem = fits.memory_fits(recs)
        self.assertEqual(len(mem), 2)  # one per value size
        for m in mem:
            self.assertAlmostEqual(m["fixed_bytes"][0], 1000, places=5)
            self.assertAlmostEqual(m["per_entry"][0], 72, places=9)
        t = fits.latency_table(recs)
        self.assertIn("DERIVED", t.title)
        self.assertIn("Per byte (us/B)", t.header)
        self.assertIn("DERIVED", fits.memory_table(recs).title)

    def test_knee_beyond_the_cache(self):
        # 0.1 us per level up to 2^16, 0.5 beyond: the straight fit would give
        # a negative base at N = 1; the knee is found and the base is positive
        recs = [record("RORAM", "obl", 2 ** k,
                       Read_latency_us=0.5 + 0.1 * k + (0.4 * (k - 16) if k > 16 else 0))
                for k in range(10, 23)]
        [f] = fits.latency_fits(recs)
        self.assertEqual(f["knee_n"], 2 ** 16)
        self.assertAlmostEqual(f["beyond_knee"][0], 0.4, places=6)
        self.assertAlmostEqual(f["base"][0], 1.5, places=6)
        self.assertLess(f["rms_resid"], 1e-9)

    def test_refused_fits_are_not_printed(self):
        zigzag = [record("UnorderedMap", "obl", 2 ** k, Get_latency_us=1 + (k % 3))
                  for k in range(10, 20)]
        [f] = fits.latency_fits(zigzag)
        self.assertIn("R²", f["refused"])
        row = fits.latency_table(zigzag).rows[0]
        self.assertTrue(row[4].startswith("refused"))
        # three levels (no room for a knee) whose straight fit is negative at N0
        steep = [record("RORAM", "obl", 2 ** k, Read_latency_us=x)
                 for k, x in zip(range(10, 13), (0.01, 0.02, 4.0))]
        [f] = fits.latency_fits(steep)
        self.assertIn("<= 0", f["refused"])

    def test_baseline_metrics_not_fitted_on_obl_rows(self):
        recs = [record("RORAM", "obl", 2 ** k, Read_latency_us=1 + 0.1 * k,
                       Baseline_read_latency_us=0.01) for k in range(10, 16)]
        self.assertEqual([f["metric"] for f in fits.latency_fits(recs)], ["Read_latency_us"])

    def test_no_per_byte_with_one_value_size(self):
        recs = [record("UMAP", "obl", 2 ** k, Read_latency_us=1 + k) for k in range(10, 14)]
        [f] = fits.latency_fits(recs)
        self.assertIsNone(f["per_byte"])
        self.assertNotIn("Per byte (us/B)", fits.latency_table(recs).header)


if __name__ == "__main__":
    unittest.main()
