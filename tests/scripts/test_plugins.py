# SPDX-License-Identifier: MIT
"""The plug-in protocol with a fake implementation (fake_plugins/): discovery,
setup and build before the run, run.sh's REPORT lines as records, a plug-in
that cannot be set up skipped with its reason (never silently), OBL_PEERS,
plan mode per implementation, and the tables' columns and best-peer ratio."""
import json
import os
import tempfile
import unittest

import helpers
from obllib import parse, plugins

FAKE_PLUGINS = os.path.join(helpers.HERE, "fake_plugins")


class TestPlugins(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.work = os.path.join(self.tmp.name, "work")
        self.src = os.path.join(self.tmp.name, "fakepeer-src")
        os.mkdir(self.src)

    def run_py(self, *args, peers=None, src=True):
        d = self.tmp.name
        env = {"OBL_BENCH": helpers.FAKE, "OBL_PLUGINS_DIR": FAKE_PLUGINS,
               "OBL_PLUGINS_WORK": self.work}
        if src:
            env["FAKEPEER_SRC"] = self.src
        if peers is not None:
            env["OBL_PEERS"] = peers
        return helpers.script("run.py", "--max-n", "2048", "--rounds", "1", "--cpu", "none",
                              "--results", os.path.join(d, "res"),
                              "--log-dir", os.path.join(d, "logs"), *args, env=env)

    def events(self):
        [name] = os.listdir(os.path.join(self.tmp.name, "logs"))
        return parse.read_jsonl(os.path.join(self.tmp.name, "logs", name))

    def test_discover_and_manifest_cases(self):
        found = {p.name: p for p in plugins.discover(FAKE_PLUGINS)}
        self.assertEqual(sorted(found), ["brokenpeer", "fakepeer"])
        cases = plugins.manifest_cases(found["fakepeer"], max_n=2048)
        names = sorted((c["impl"], c["params"]["N"]) for c in cases)
        self.assertEqual(names, [("fakepeer", 1024), ("fakepeer", 2048),
                                 ("fakepeer_pubmethod", 1024)])
        roram = next(c for c in cases if c["impl"] == "fakepeer")
        self.assertEqual(roram["args"][:2], ["RORAM", "N=1024"])
        self.assertIn("queries=100", roram["args"])  # run control, not an identity parameter
        self.assertNotIn("queries", roram["params"])
        self.assertEqual(set(roram["params"]), {"N", "Key_bytes", "Value_bytes"})
        self.assertAlmostEqual(roram["est_seconds"], 1.0, places=1)  # 1 + 3 x (100 + 3 N) us

    def test_run_records_skips_and_tables(self):
        r = self.run_py("--no-noise")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn("plug-in brokenpeer skipped: setup.sh failed: sources of brokenpeer not "
                      "found", r.stderr)
        evs = self.events()
        [skip] = [e for e in evs if e["event"] == "plugin_skipped"]
        self.assertEqual(skip["name"], "brokenpeer")
        self.assertIn("BROKENPEER_SRC", skip["reason"])
        with open(os.path.join(self.work, "fakepeer", "calls")) as f:
            calls = f.read().split("\n")
        self.assertEqual(calls[:2], ["setup", "build"])  # before any case ran
        self.assertIn("run RORAM N=1024 Key_bytes=8 Value_bytes=8 queries=100 reps=3", calls)
        with open(os.path.join(self.tmp.name, "res", "results.json")) as f:
            recs = json.load(f)["records"]
        peer = [x for x in recs if x["impl"] == "fakepeer"]
        self.assertEqual(sorted(x["params"]["N"] for x in peer), [1024, 2048])
        lat = peer[0]["metrics"]["Read_latency_us"]
        self.assertEqual((lat["median"], lat["min"], lat["max"], lat["reps"]), (0.51, 0.5, 0.52, 3))
        t = helpers.script("generate_readme_bodies.py", "--results",
                           os.path.join(self.tmp.name, "res", "results.json"))
        self.assertEqual(t.returncode, 0, t.stderr)
        table = t.stdout.split("<!-- obl-table: RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us -->")[1]
        header = next(l for l in table.splitlines() if l.startswith("| N"))
        self.assertIn("| obl | fakepeer |", header)
        self.assertIn("obl ÷ best peer", header)
        # the fake obl-bench's obl: 0.5 + 0.25 log2 N + 0.01 V = 3.08 us at 2^10;
        # the peer's median 0.51: ratio 6.04
        row = next(l for l in table.splitlines() if l.startswith("| $2^{10}$"))
        self.assertIn("6.04 (fakepeer)", row)

    def test_peers_selection_and_plan_mode(self):
        r = self.run_py("--plan", peers="none")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("# plug-in fakepeer: skipped: not in OBL_PEERS", r.stdout)
        self.assertNotIn("\tfakepeer\t", r.stdout)
        r = self.run_py("--plan", peers="fakepeer")
        self.assertIn("# plug-in fakepeer: 3 cases", r.stdout)
        self.assertIn("run\troram\tfakepeer\tN=2048,Key_bytes=8,Value_bytes=8", r.stdout)
        self.assertIn("# plug-in brokenpeer: skipped: not in OBL_PEERS", r.stdout)
        r = self.run_py("--plan", src=False)
        self.assertIn("# plug-in fakepeer: skipped: setup.sh failed: fakepeer sources not found",
                      r.stdout)


if __name__ == "__main__":
    unittest.main()
