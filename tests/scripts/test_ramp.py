# SPDX-License-Identifier: MIT
"""scripts/obllib/ramp.py: the Ramp-UMAP cases, their run (server up, load,
server down, with stand-in programs), the knee, the tables and figures."""
import json
import os
import stat
import tempfile
import unittest

import helpers  # noqa: F401  (puts scripts/ on sys.path)
from obllib import ramp


def step_record(step, offered, p99, **extra):
    metrics = {"Offered_qps": offered, "Achieved_qps": offered, "Latency_p50_us": p99 / 4,
               "Latency_p99_us": p99, "Batch_size_avg": 3.0, "Batches_size_1": 10,
               "Batches_size_4": 2, "Lost": 0}
    metrics.update(extra)
    params = {"N": 1024, "Key_bytes": 8, "Value_bytes": 56, "Max_batch": 256, "Pad": 0,
              "Connections": 4, "Hit_pct": 80, "Rate_from": 1000, "Rate_to": 4000,
              "Seconds": 4, "Steps": 4, "Step": step}
    return {"report_type": ramp.REPORT_TYPE, "impl": "obl", "params": params,
            "metrics": {m: {"median": x} for m, x in metrics.items()}, "env": {}}


def second_record(sec, p99):
    rec = step_record(1, 1000, p99)
    rec["report_type"] = ramp.TIMELINE_TYPE
    del rec["params"]["Step"]
    rec["params"]["Second"] = sec
    rec["metrics"]["Answered"] = {"median": 990}
    rec["metrics"]["Received"] = {"median": 980}
    return rec


SERVER = """#!/bin/sh
trap 'echo stopped >&2; exit 0' TERM
echo "obl-server: listening on 127.0.0.1:4242"
while :; do sleep 0.05; done
"""

LOAD = """#!/bin/sh
for a in "$@"; do [ "$prev" = --summary ] && out=$a; prev=$a; done
[ "$2" = 4242 ] || exit 3
echo '%s' > "$out"
echo 'REPORT_123Ramp-UMAP|obl|x| N:=1024 | Step := 1 | Offered_qps := 1000 REPORT_123'
"""


class RampTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        for d in ("bench", "serve"):
            os.makedirs(os.path.join(root, d))
        self.bench = os.path.join(root, "bench", "obl-bench")
        self.write(self.bench, "#!/bin/sh\n")

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, path, text):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

    def install(self, load_exit=0):
        rec = json.dumps(dict(step_record(1, 1000, 500), schema="obl-bench/1", bench="ramp"))
        self.write(os.path.join(self.tmp.name, "serve", "obl-server"), SERVER)
        self.write(os.path.join(self.tmp.name, "serve", "obl-load"),
                   LOAD % rec + f"exit {load_exit}\n")

    def test_cases(self):
        self.assertEqual(ramp.cases(self.bench), [])  # not built: no case
        self.install()
        default = ramp.cases(self.bench)
        self.assertEqual([c["params"]["Steps"] for c in default], [10, 1, 10, 1])
        self.assertEqual([c["params"]["Backend"] for c in default],
                         ["omap", "omap", "shard", "shard"])
        self.assertEqual(default[0]["params"]["N"], 2 ** 20)
        shard = default[2]["server_args"]
        self.assertEqual(shard[shard.index("--backend") + 1], "shard")
        self.assertEqual(shard[shard.index("--shards") + 1], str(default[2]["params"]["Shards"]))
        self.assertEqual(shard[shard.index("--max-batch") + 1], "1024")
        self.assertIn("backend shard", ramp.describe(default[2]["params"]))
        self.assertEqual(ramp.cases(self.bench, max_n=4096)[0]["params"]["N"], 4096)
        large = ramp.cases(self.bench, large=True)
        self.assertEqual(len(large), 8)
        self.assertEqual(large[:4], default)  # the large plan holds the default one
        self.assertIn("--ramp", default[0]["args"])
        self.assertEqual(default[0]["driver"], ramp.DRIVER)

    def test_run_case(self):
        self.install()
        case = ramp.cases(self.bench)[1]
        res = ramp.run_case(self.bench, case, 30)
        self.assertEqual(res["outcome"], "ok", res)
        self.assertEqual(res["records"][0]["report_type"], ramp.REPORT_TYPE)
        self.assertEqual(len(res["reports"]), 1)
        self.assertIn("stopped", res["stderr_tail"])  # the server got SIGTERM

    def test_run_case_load_fails(self):
        self.install(load_exit=1)
        res = ramp.run_case(self.bench, ramp.cases(self.bench)[1], 30)
        self.assertEqual(res["outcome"], "failed")
        self.assertIn("obl-load exit status 1", res["reason"])

    def test_report_line_fields(self):
        from obllib import parse
        line = ("REPORT_123Ramp-UMAP|obl|x| N:=1024 | Key_bytes := 8 | Value_bytes := 56 | "
                "Step := 2 | Offered_qps := 1000 | Latency_p99_us := 5 | Batch_size_avg := 1.5 | "
                "Batches := 10 | Lost := 0 REPORT_123")
        rec = parse.records_from_reports([line], "x")[0]
        self.assertEqual(rec["params"], {"N": 1024, "Key_bytes": 8, "Value_bytes": 56, "Step": 2})
        self.assertEqual(sorted(rec["metrics"]), ["Batch_size_avg", "Batches", "Latency_p99_us",
                                                  "Lost", "Offered_qps"])

    def test_knee_tables_figures(self):
        steps = [step_record(i + 1, r, p) for i, (r, p) in
                 enumerate(((1000, 300.0), (2000, 900.0), (3000, 9000.0), (4000, 50000.0)))]
        rate, rec = ramp.knee(steps)
        self.assertEqual(rate, 3000)
        self.assertEqual(rec["params"]["Step"], 3)
        self.assertEqual(ramp.knee(steps[3:]), (None, None))
        tabs = ramp.tables(steps[::-1])
        self.assertEqual(len(tabs), 1)
        self.assertEqual([r[0] for r in tabs[0].rows], ["1", "2", "3", "4"])
        self.assertIn("3,000 q/s", tabs[0].note)
        self.assertIn("1:10 4+:2", tabs[0].rows[0])
        self.assertEqual(tabs[0].headline[1:], ("$2^{10}$", "3,000"))  # the summary's row
        self.assertEqual(ramp.tables(steps[3:])[0].headline[2], "none: p99 ≥ 10 ms from 1,000 q/s")
        self.assertIsNone(ramp.tables([dict(steps[0], params=dict(steps[0]["params"], Steps=1))])[0]
                          .headline)  # a constant rate has no knee
        out = os.path.join(self.tmp.name, "fig")
        paths = ramp.figures(steps + [second_record(s, 400.0 * (s + 1)) for s in range(5)], out)
        self.assertEqual(len(paths), 2)
        self.assertTrue(all(os.path.getsize(p) > 0 for p in paths))


if __name__ == "__main__":
    unittest.main()
