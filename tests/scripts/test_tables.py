# SPDX-License-Identifier: MIT
import os
import tempfile
import unittest

import helpers
from helpers import record
from obllib import tables

PEER = ("REPORT_123RORAM|olabs_oram| sys_name := Linux | sys_lcores := 32 | N:=1024 | "
        "Key_bytes := 8 | Value_bytes := 8 | Read_latency_us := 0.17 | Memory_kb := 48REPORT_123\n")


def synthetic():
    recs = []
    for n in (1024, 2048, 4096):
        recs.append(record("RORAM", "obl", n, Read_latency_us=2.0 * (n // 1024), Memory_kb=n / 16))
        recs.append(record("RORAM", "baseline_array", n, Read_latency_us=0.1, Memory_kb=n / 128))
        recs.append(record("NRORAM", "obl", n, Read_latency_us=1.0, Memory_kb=n / 32))
        recs.append(record("UMAP", "obl", n, v=56, Read_latency_us=5.0))
        recs.append(record("UMAP", "baseline_hashmap", n, v=56, Read_latency_us=0.5))
    return recs


class TestMeasured(unittest.TestCase):
    def setUp(self):
        self.tabs = {t.key: t for t in tables.measured_tables(synthetic())}

    def test_layout_and_ratio(self):
        t = self.tabs["RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us"]
        self.assertEqual(t.header, ["N", "obl", "baseline_array", "obl ÷ baseline_array"])
        self.assertEqual([r[0] for r in t.rows], ["$2^{10}$", "$2^{11}$", "$2^{12}$"])
        self.assertEqual(t.rows[1][1], "4.000 (3.920–4.080)")
        self.assertEqual(t.rows[1][3], "40.0")  # 4.0 / 0.1
        self.assertIn("same run", t.note)

    def test_baseline_borrowed_for_nroram_and_maps(self):
        t = self.tabs["NRORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us"]
        self.assertEqual(t.header, ["N", "obl", "baseline_array", "obl ÷ baseline_array"])
        self.assertEqual(t.rows[0][3], "10.0")
        u = self.tabs["UMAP | Key_bytes=8,Value_bytes=56 | Read_latency_us"]
        self.assertEqual(u.header[-1], "obl ÷ baseline_hashmap")
        self.assertEqual(u.rows[2][-1], "10.0")

    def test_nroram_key_bytes_4_ratio_needs_its_own_baseline(self):
        key = "NRORAM | Key_bytes=4,Value_bytes=8 | Read_latency_us"
        k4 = [record("NRORAM", "obl", n, k=4, Read_latency_us=0.8 * (n // 1024)) for n in (1024, 2048)]
        # the 8-byte baseline of synthetic() is not this row's baseline: no ratio
        t = {x.key: x for x in tables.measured_tables(synthetic() + k4)}[key]
        self.assertEqual(t.header, ["N", "obl"])
        # the array baseline at Key_bytes=4 (as the default plan now runs it): a ratio per row
        base4 = [record("RORAM", "baseline_array", n, k=4, Read_latency_us=0.02) for n in (1024, 2048)]
        t = {x.key: x for x in tables.measured_tables(synthetic() + k4 + base4)}[key]
        self.assertEqual(t.header, ["N", "obl", "baseline_array", "obl ÷ baseline_array"])
        self.assertEqual([r[3] for r in t.rows], ["40.0", "80.0"])  # 0.8 / 0.02, 1.6 / 0.02
        self.assertEqual(t.rows[0][2], "0.02000 (0.01960–0.02040)")
        self.assertIn("same run", t.note)

    def test_spread_modes(self):
        t = {x.key: x for x in tables.measured_tables(synthetic(), "iqr")}
        self.assertEqual(t["RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us"].rows[0][1],
                         "2.000 (1.980–2.020)")
        t = {x.key: x for x in tables.measured_tables(synthetic(), "none")}
        self.assertEqual(t["RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us"].rows[0][1], "2.000")

    def test_peer_side_by_side_without_ratio(self):
        from obllib import parse
        peer = parse.records_from_reports(PEER.splitlines(), "peer.log")
        for r in peer:
            r["origin"] = "extra"
        t = {x.key: x for x in tables.measured_tables(synthetic() + peer)}
        lat = t["RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us"]
        self.assertEqual(lat.header, ["N", "obl", "baseline_array", "olabs_oram", "obl ÷ baseline_array"])
        self.assertEqual(lat.rows[0][3], "0.1700")
        self.assertEqual(lat.rows[1][3], "")
        self.assertIn("olabs_oram: from other logs", lat.note)


README = """# obl

Intro text.

<!-- obl-tables:begin -->
## Results

Curated note before the table, kept verbatim.

<!-- obl-table: RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us -->
**My own title**

| N | obl | baseline_array* | obl ÷ baseline_array |
| --- | --: | --: | --: |
| $2^{10}$ | old | old | old |

\\* footnote kept.

<!-- obl-table: UMAP | Key_bytes=8,Value_bytes=56 | Read_latency_us -->
| N | old |
| --- | --: |
<!-- obl-tables:end -->

Footer.
"""


class TestRefresh(unittest.TestCase):
    def test_refresh_keeps_selection_order_notes(self):
        new = tables.refresh(README, tables.measured_tables(synthetic()))
        self.assertNotIn("| old |", new)
        for kept in ("Intro text.", "Curated note before the table, kept verbatim.",
                     "**My own title**", "\\* footnote kept.", "Footer."):
            self.assertIn(kept, new)
        self.assertIn("| N | obl | baseline_array* | obl ÷ baseline_array |", new)
        self.assertIn("| $2^{12}$ | 8.000 (7.840–8.160) |", new)
        self.assertLess(new.index("RORAM | Key"), new.index("UMAP | Key"))
        self.assertEqual(tables.curated_keys(new), tables.curated_keys(README))
        self.assertNotIn("NRORAM", new)  # selection kept: no new tables

    def test_refresh_fails_on_unmatched(self):
        broken = README.replace("Value_bytes=56", "Value_bytes=999")
        with self.assertRaisesRegex(ValueError, "Value_bytes=999.*matches no result"):
            tables.refresh(broken, tables.measured_tables(synthetic()))
        with self.assertRaisesRegex(ValueError, "no <!-- obl-tables:begin"):
            tables.refresh("no markers\n", [])

    def test_script_main_write_and_failure(self):
        with tempfile.TemporaryDirectory() as d:
            res = os.path.join(d, "results.json")
            helpers.write_results(res, synthetic())
            readme = os.path.join(d, "README.md")
            with open(readme, "w") as f:
                f.write(README)
            r = helpers.script("generate_readme_bodies.py", "--results", res, "--readme", readme, "--main")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("**My own title**", r.stdout)
            self.assertNotIn("Footer.", r.stdout)
            r = helpers.script("generate_readme_bodies.py", "--results", res, "--readme", readme,
                               "--main", "--write-readme")
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(readme) as f:
                written = f.read()
            self.assertIn("8.000 (7.840–8.160)", written)
            broken = README.replace("Value_bytes=56", "Value_bytes=999")
            with open(readme, "w") as f:
                f.write(broken)
            r = helpers.script("generate_readme_bodies.py", "--results", res, "--readme", readme,
                               "--main", "--write-readme")
            self.assertEqual(r.returncode, 1)
            self.assertIn("nothing written", r.stderr)
            with open(readme) as f:
                self.assertEqual(f.read(), broken)

    def test_script_full_output_and_extra_log(self):
        with tempfile.TemporaryDirectory() as d:
            res = os.path.join(d, "results.json")
            helpers.write_results(res, synthetic())
            peer = os.path.join(d, "peer.log")
            with open(peer, "w") as f:
                f.write("noise line\n" + PEER)
            r = helpers.script("generate_readme_bodies.py", "--results", res, "--extra-log", peer)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("<!-- obl-table: RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us -->", r.stdout)
            self.assertIn("| N | obl | baseline_array | olabs_oram |", r.stdout)
            self.assertIn("DERIVED: latency decomposition", r.stdout)
            self.assertIn("DERIVED: memory formula", r.stdout)
            self.assertIn("Lines of code per structure", r.stdout)


SUMMARY_README = """# obl

<!-- obl-tables:begin -->
<!-- obl-env --> old machine, commit 0000000.

<!-- obl-table: SUMMARY -->
| Benchmark | N | obl | old |
| --- | --- | --: | --: |
| old | old | old | old |
<!-- obl-tables:end -->
"""


def summary_records():
    recs = synthetic()
    for n in (1024, 2048):
        recs.append(record("NRORAM", "obl", n, Read_latency_plain_caller_us=1.5))
        recs.append(record("RORAM", "olabs_oram", n, Read_latency_us=3.0))
    return recs


class TestSummary(unittest.TestCase):
    def test_rows_at_largest_n_headline_first(self):
        t = tables.summary_table(tables.measured_tables(summary_records()))
        self.assertEqual(t.key, "SUMMARY")
        self.assertEqual(t.header, ["Benchmark", "N", "obl", "olabs_oram",
                                    "non-oblivious baseline", "obl ÷ baseline",
                                    "obl ÷ best peer"])
        self.assertEqual(t.rows[0][:3], ["NRORAM 8/8 read, plain caller (us)", "$2^{11}$",
                                         "1.500 (1.470–1.530)"])
        # the array's plain read is the plain caller's baseline: 1.5 / 0.1
        self.assertEqual(t.rows[0][3:], ["", "0.1000 (0.09800–0.1020)", "15.0", ""])
        roram = next(r for r in t.rows if r[0] == "RORAM 8/8 read (us)")
        self.assertEqual(roram, ["RORAM 8/8 read (us)", "$2^{12}$", "8.000 (7.840–8.160)", "",
                                 "0.1000 (0.09800–0.1020)", "80.0", ""])
        # at 2^11, where the peer was measured too, obl's read is 4.0 against its 3.0
        rt = tables.measured_tables(summary_records())
        rt = next(x for x in rt if x.key == "RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us")
        self.assertEqual(rt.rows[1][-1], "1.33 (olabs_oram)")
        self.assertIsNone(tables.summary_table([]))

    def test_refresh_summary_and_machine_line(self):
        new = tables.refresh(SUMMARY_README, tables.measured_tables(summary_records())
                             + [tables.summary_table(tables.measured_tables(summary_records()))],
                             "AMD EPYC, 2 cores, 23.4 GiB RAM, commit abc1234.")
        self.assertIn("<!-- obl-env --> AMD EPYC, 2 cores, 23.4 GiB RAM, commit abc1234.", new)
        self.assertNotIn("old", new)
        self.assertIn("| NRORAM 8/8 read, plain caller (us) | $2^{11}$ |", new)


def batched_records():
    """obl's sharded and batched maps and the load balancer against the peers'
    (whose batched maps have no Threads or Engines)."""
    recs = []
    for n in (16384, 65536):
        for impl, shards, lat in (("obl_sharded", 15, 20000.0), ("obl_batched", 1, 9000.0)):
            r = record("UnorderedMap", impl, n, v=56, Get_latency_us=lat)
            r["params"].update(Shards=shards, Batch_size=1024, Threads=0, Engines=0, fill=0.8)
            recs.append(r)
        r = record("UnorderedMap", "obl_sharded", n, v=56, Get_latency_us=1.0)  # another engine
        r["params"].update(Shards=15, Batch_size=1024, Threads=0, Engines=2, fill=0.8)
        recs.append(r)
        r = record("UnorderedMap", "olabs_oram_sharded", n, v=56, Get_latency_us=40000.0)
        r["params"].update(Shards=15, Batch_size=1024, fill=0.8)
        recs.append(r)
        r = record("UnorderedMap", "obl", n, v=56, Get_latency_us=5.0)  # the plain map
        r["params"]["fill"] = 0.8
        recs.append(r)
    for b in (1024, 4096):
        for impl, lat in (("obl", 300.0), ("olabs_oram", 900.0), ("baseline_lb", 30.0)):
            r = record("LOADBALANCE", impl, b, Latency_us=lat * b / 1024)
            r["params"].update(Shards=15, Threads=2)
            recs.append(r)
    return recs


class TestBatchedSummary(unittest.TestCase):
    def test_peers_batched_maps_join_obl_defaults(self):
        tabs = {t.key: t for t in tables.measured_tables(batched_records())}
        key = ("UnorderedMap | Key_bytes=8,Value_bytes=56,Batch_size=1024,Engines=0,Shards=15,"
               "Threads=0,fill=0.8 | Get_latency_us")
        t = tabs[key]
        self.assertEqual(t.header, ["N", "obl_sharded", "olabs_oram_sharded",
                                    "obl_sharded ÷ best peer"])
        self.assertEqual(t.rows[1][-1], "0.500 (olabs_oram_sharded)")
        # the scan engine's table and the plain map's have no peer column
        self.assertNotIn("olabs_oram_sharded", tabs[key.replace("Engines=0", "Engines=2")].header)
        self.assertEqual(tabs["UnorderedMap | Key_bytes=8,Value_bytes=56,fill=0.8 | "
                              "Get_latency_us"].header, ["N", "obl"])

    def test_summary_rows_of_batched_maps_balancer_and_ramp(self):
        from test_ramp import step_record
        from obllib import ramp
        steps = [step_record(i + 1, r, p) for i, (r, p) in
                 enumerate(((1000, 300.0), (2000, 900.0), (3000, 9000.0), (4000, 50000.0)))]
        t = tables.summary_table(tables.measured_tables(batched_records()) + ramp.tables(steps))
        self.assertEqual(t.header, ["Benchmark", "N", "obl", "olabs_oram_sharded", "olabs_oram",
                                    "non-oblivious baseline", "obl ÷ baseline",
                                    "obl ÷ best peer"])
        rows = {r[0].split(",")[0]: r for r in t.rows}
        self.assertEqual(rows["UnorderedMap 8/56 get"][1:4], ["$2^{16}$", "5.000 (4.900–5.100)", ""])
        sharded = rows["Sharded UnorderedMap 8/56"]
        self.assertEqual(sharded[2:4], ["20000 (19600–20400)", "40000 (39200–40800)"])
        self.assertEqual(sharded[-1], "0.500 (olabs_oram_sharded)")
        self.assertEqual(rows["Batched UnorderedMap 8/56"][2], "9000 (8820–9180)")
        lb = rows["LOADBALANCE 8/8"]
        self.assertEqual(lb[1:], ["$2^{12}$", "1200 (1176–1224)", "", "3600 (3528–3672)",
                                  "120.0 (117.6–122.4)", "10.0", "0.333 (olabs_oram)"])
        self.assertEqual(rows["Ramp-UMAP 8/56 over TCP"][1:3], ["$2^{10}$", "3,000"])


class TestResultsFile(unittest.TestCase):
    def test_write_results_writes_every_table(self):
        with tempfile.TemporaryDirectory() as d:
            res = os.path.join(d, "results.json")
            helpers.write_results(res, summary_records())
            out = os.path.join(d, "docs", "results", "latest.md")
            r = helpers.script("generate_readme_bodies.py", "--results", res, "--write-results", out)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                page = f.read()
            self.assertTrue(page.startswith("# Results of the latest suite run"))
            self.assertIn("<!-- obl-table: RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us -->", page)
            self.assertIn("Lines of code per structure", page)
            self.assertNotIn("obl-table: SUMMARY", page)  # the README's, not the results'
            self.assertIn(tables.END, page)
            self.assertIn("<!-- obl-table: NRORAM", r.stdout)  # stdout as without the flag


class TestFormat(unittest.TestCase):
    def test_numbers(self):
        from obllib import stats
        self.assertEqual(stats.fmt(1928825.16), "1928825")
        self.assertEqual(stats.fmt(1.25), "1.250")
        self.assertEqual(stats.fmt(0.052), "0.05200")
        self.assertEqual(stats.fmt_pm(3.5012, 0.061), "3.501 ± 0.061")
        self.assertEqual(stats.fmt_pm(0.001, 0.004), "~0 (±0.0040)")
        self.assertEqual(tables.n_label(1 << 20), "$2^{20}$")
        self.assertEqual(tables.n_label(1000), "1000")


if __name__ == "__main__":
    unittest.main()
