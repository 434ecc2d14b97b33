# SPDX-License-Identifier: MIT
"""The peer plug-ins (benchmark/<peer>/ with a source_env in the manifest):
set up, built and run on one small case of each type they list, their
REPORT lines parsed, when their sources are given ($OLABS_ORAM_SRC,
$SIGNAL_ICELAKE_SRC ...); skipped with a message naming the variable
otherwise (no network here, and building a peer takes minutes)."""
import os
import subprocess
import tempfile
import unittest

import helpers
from obllib import parse, plugins

PEERS = [p for p in plugins.discover(os.path.join(helpers.ROOT, "benchmark"))
         if p.kind == "peer"]


class TestPeerPlugins(unittest.TestCase):
    def test_every_peer_plugin(self):
        self.assertTrue(PEERS)
        for p in PEERS:
            with self.subTest(peer=p.name):
                var = p.manifest["source_env"]
                if not os.path.isdir(os.environ.get(var, "")):
                    self.skipTest(f"{p.name}: sources not given; set {var} to a checkout "
                                  f"of {p.manifest['repository']} to exercise it")
                self.exercise(p)

    def exercise(self, p):
        with tempfile.TemporaryDirectory() as work:
            os.environ["OBL_PLUGINS_WORK"] = work
            try:
                why = plugins.prepare(p, helpers.ROOT)
                self.assertIsNone(why)
                env = p.env(helpers.ROOT)
                for rtype in p.manifest["types"]:
                    c = next(c for c in plugins.manifest_cases(p, max_n=1024)
                             if c["report_type"] == rtype and c["impl"] == p.name)
                    args = [a for a in c["args"] if not a.startswith("queries=")]
                    r = subprocess.run(["sh", p.script("run.sh")] + args + ["queries=200"],
                                       capture_output=True, text=True, env=env, timeout=600)
                    self.assertEqual(r.returncode, 0, r.stderr[-500:])
                    objs = parse.objects_from_reports(r.stdout.splitlines(), c["bench"])
                    self.assertEqual([(o["report_type"], o["impl"]) for o in objs],
                                     [(rtype, p.name)])
            finally:
                os.environ.pop("OBL_PLUGINS_WORK", None)


if __name__ == "__main__":
    unittest.main()
