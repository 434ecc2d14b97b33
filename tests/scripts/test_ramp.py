# SPDX-License-Identifier: MIT
"""scripts/obllib/ramp.py: the Ramp-UMAP cases, their run (server up, load,
server down, with stand-in programs), the knee, the tables and figures."""
import json
import os
import stat
import tempfile
import unittest
from unittest import mock

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


# A stand-in obl-load for the refinement: the records of its ramp come from
# the file named after the ramp's text; every ramp it ran goes to a log.
LOAD_BY_RAMP = """#!/bin/sh
for a in "$@"; do
  [ "$prev" = --summary ] && out=$a
  [ "$prev" = --ramp ] && ramp=$a
  prev=$a
done
echo "$ramp" >> "%(dir)s/ramps.log"
cp "%(dir)s/$ramp.jsonl" "$out" || exit 4
"""


def ramp_steps(rates_p99, r0, r1, steps):
    out = []
    for i, (rate, p99) in enumerate(rates_p99):
        rec = dict(step_record(i + 1, rate, p99), schema="obl-bench/1", bench="ramp")
        rec["params"].update(Rate_from=r0, Rate_to=r1, Steps=steps)
        out.append(rec)
    return out


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

    def test_placement(self):
        self.install()
        omap, shard = ramp.cases(self.bench)[0], ramp.cases(self.bench)[2]
        self.assertIsNone(ramp.placement(omap))  # not asked for
        with mock.patch.object(os, "sched_getaffinity", return_value={0, 1}), \
                mock.patch.dict(os.environ, {"OBL_RAMP_PIN": "1"}):
            self.assertEqual(ramp.placement(omap), (1, 0))
            self.assertEqual(ramp.placement(omap, ["--cpu", "0"]), (0, 1))
            self.assertEqual(ramp.placement(omap, ["--cpu", "7"]), (1, 0))  # not allowed
            self.assertIsNone(ramp.placement(shard))
            with mock.patch.dict(os.environ, {"OBL_RAMP_PIN": "0"}):
                self.assertIsNone(ramp.placement(omap))
            res = ramp.run_case(self.bench, ramp.cases(self.bench)[1], 30, ["--cpu", "0"])
        self.assertEqual(res["outcome"], "ok", res)
        argv = " ".join(res["argv"])
        self.assertIn("--cpu-batch 0 --cpu-loop 1 |", argv)
        self.assertTrue(argv.endswith("--cpu 1"), argv)
        with mock.patch.object(os, "sched_getaffinity", return_value={3}), \
                mock.patch.dict(os.environ, {"OBL_RAMP_PIN": "1"}):
            self.assertIsNone(ramp.placement(omap))

    def test_run_case_load_fails(self):
        self.install(load_exit=1)
        res = ramp.run_case(self.bench, ramp.cases(self.bench)[1], 30)
        self.assertEqual(res["outcome"], "failed")
        self.assertIn("obl-load exit status 1", res["reason"])

    def test_refine_load(self):
        coarse = ramp_steps(((20000, 300.0), (62222, 900.0), (104444, 4000.0),
                             (146667, 6100.0), (188889, 3e6), (231111, 5e6)),
                            20000, 231111, 6)
        self.assertEqual(ramp.refine_load(coarse), (140000, 190000, 18, 6))
        # the knee at the first step, the next one far above: wider steps
        wide = ramp_steps(((20000, 300.0), (500000, 3e6)), 20000, 500000, 2)
        lo, hi, secs, n = ramp.refine_load(wide)
        self.assertEqual(lo, 20000)
        self.assertGreaterEqual(hi, 500000)
        self.assertLessEqual(n, ramp.FINE_MAX_STEPS)
        self.assertEqual((hi - lo) % (n - 1), 0)
        self.assertGreater((hi - lo) // (n - 1), ramp.FINE_STEP_QPS)
        self.assertEqual(secs, n * ramp.FINE_STEP_S)
        # a knee below one fine step: the fine ramp starts at the knee
        low = ramp_steps(((3000, 300.0), (9000, 3e6)), 3000, 9000, 2)
        self.assertEqual(ramp.refine_load(low), (3000, 13000, 6, 2))
        # nothing to bracket: every step under 10 ms, or none
        self.assertIsNone(ramp.refine_load(coarse[:4]))
        self.assertIsNone(ramp.refine_load(coarse[4:]))

    def test_run_case_refines(self):
        d = self.tmp.name
        self.write(os.path.join(d, "serve", "obl-server"), SERVER)
        self.write(os.path.join(d, "serve", "obl-load"), LOAD_BY_RAMP % {"dir": d})
        case = ramp.cases(self.bench)[0]
        self.assertTrue(case.get("refine"))
        r0, r1, secs, steps = (case["params"][k] for k in ("Rate_from", "Rate_to", "Seconds",
                                                           "Steps"))
        coarse = ramp_steps(((20000, 300.0), (62222, 900.0), (104444, 9000.0),
                             (146667, 20000.0)), r0, r1, steps)
        fine = ramp_steps(((100000, 5000.0), (110000, 9900.0), (120000, 10000.0)),
                          100000, 150000, 6)
        for text, recs in ((f"{r0}:{r1}:{secs}:{steps}", coarse), ("100000:150000:18:6", fine)):
            with open(os.path.join(d, text + ".jsonl"), "w") as f:
                f.write("".join(json.dumps(r) + "\n" for r in recs))
        res = ramp.run_case(self.bench, case, 30)
        self.assertEqual(res["outcome"], "ok", res)
        with open(os.path.join(d, "ramps.log")) as f:
            self.assertEqual(f.read().split(), [f"{r0}:{r1}:{secs}:{steps}",
                                                "100000:150000:18:6"])
        fine_recs = [r for r in res["records"] if r["params"].get(ramp.FINE_PARAM)]
        self.assertEqual(len(fine_recs), 3)
        self.assertTrue(all(r["params"]["Backend"] == "omap" for r in res["records"]))
        tabs = ramp.tables(res["records"][::-1])
        self.assertEqual(len(tabs), 2)
        self.assertIn("fine ramp", tabs[1].title)  # after its ramp
        heads = [t.headline for t in tabs if t.headline]
        self.assertEqual(len(heads), 1)  # on the fine ramp: the knee of both
        self.assertEqual(heads[0][2], "110,000")
        self.assertIn("fine ramp 100,000→150,000", [t for t in tabs if t.headline][0].title)
        # the fine ramp's obl-load failing fails the case
        os.remove(os.path.join(d, "100000:150000:18:6.jsonl"))
        res = ramp.run_case(self.bench, case, 30)
        self.assertEqual(res["outcome"], "failed")
        self.assertIn("obl-load exit status 4", res["reason"])

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
