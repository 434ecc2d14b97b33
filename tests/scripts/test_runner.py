# SPDX-License-Identifier: MIT
"""Case isolation with the fake driver: crash, timeout, failure, memory skip."""
import json
import os
import tempfile
import time
import unittest

import helpers
from obllib import parse


class TestIsolation(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        start = time.monotonic()
        # 5 s: long enough for the fake driver's ordinary cases on a loaded
        # machine (ctest -j2 beside the ORAM tests), short beside the hang
        cls.r = helpers.script("run.py", "--max-n", "1024", "--timeout", "5", "--rounds", "1",
                               "--results", os.path.join(d, "res"), "--log-dir", os.path.join(d, "logs"),
                               env={"OBL_BENCH": helpers.FAKE, "FAKE_SPECIAL": "1"})
        cls.elapsed = time.monotonic() - start
        [name] = os.listdir(os.path.join(d, "logs"))
        cls.events = parse.read_jsonl(os.path.join(d, "logs", name))
        cls.by_name = {}
        for ev in cls.events:
            if ev.get("name") and not ev.get("repeat"):
                cls.by_name.setdefault(ev["name"].split(":")[0], []).append(ev)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def last(self, bench):
        return self.by_name[bench][-1]

    def test_exit_status_and_run_goes_on(self):
        self.assertEqual(self.r.returncode, 1, self.r.stderr)
        end = self.events[-1]
        self.assertEqual(end["event"], "run_end")
        self.assertTrue(end["failed"])
        self.assertEqual(end["counts"], {"ok": 8, "failed": 3, "timeout": 1, "skipped": 1})
        self.assertLess(self.elapsed, 40)  # the hanging case did not hold the run

    def test_crash(self):
        ev = self.last("crash")
        self.assertEqual(ev["event"], "case_failed")
        self.assertEqual(ev["signal"], "SIGSEGV")
        self.assertIn("SIGSEGV", ev["reason"])

    def test_timeout(self):
        ev = self.last("hang")
        self.assertEqual(ev["event"], "case_timeout")
        self.assertEqual(ev["timeout_s"], 5.0)
        self.assertLess(ev["elapsed_s"], 10)

    def test_nonzero_exit_and_missing_record(self):
        ev = self.last("fail")
        self.assertEqual((ev["event"], ev["exit_code"]), ("case_failed", 3))
        self.assertIn("impossible size", ev["reason"])
        self.assertIn("no JSONL record", self.last("nojson")["reason"])

    def test_memory_skip(self):
        ev = self.last("huge")
        self.assertEqual((ev["event"], ev["reason"]), ("case_skipped", "memory"))
        self.assertIn("available", ev["message"])
        self.assertNotIn("huge", [e["name"].split(":")[0] for e in self.events
                                  if e["event"] == "case_start"])

    def test_log_and_results(self):
        start = self.events[0]
        self.assertEqual(start["event"], "run_start")
        self.assertIn("cpu", start["env"])
        # roram is the first obl case, so it is also the noise reference: its
        # last event is the noise measurement, the one before it the case end
        ends = [e for e in self.by_name["roram"] if e["event"] == "case_end"]
        self.assertTrue(ends)
        ok = ends[-1]
        self.assertEqual(self.last("roram")["event"], "noise")
        self.assertEqual(ok["records"][0]["impl"], "obl")
        noise = [e for e in self.events if e["event"] == "noise"]
        self.assertEqual(len(noise), 1)
        self.assertEqual(noise[0]["max_rel_diff"], 0.0)  # the fake is deterministic
        with open(os.path.join(self.tmp.name, "res", "results.json")) as f:
            doc = json.load(f)
        self.assertEqual(len(doc["records"]), 8)  # the noise repeat is not a second record
        self.assertTrue(os.path.exists(os.path.join(self.tmp.name, "res", "RORAM.csv")))
        with open(os.path.join(self.tmp.name, "res", "results.csv")) as f:
            rows = f.read().splitlines()
        self.assertEqual(len(rows), 1 + 13)
        self.assertTrue(any("timeout" in r and "hang" in r for r in rows))

    def test_progress_lines(self):
        lines = [l for l in self.r.stderr.splitlines() if l.startswith("[")]
        self.assertEqual(len(lines), 13)
        self.assertRegex(lines[0], r"^\[1/13\] \S+ .*elapsed [0-9.]+s, est\. remaining [0-9.ms]+$")
        self.assertIn("noise:", self.r.stderr)

    def test_missing_binary(self):
        r = helpers.script("run.py", "--bench-bin", "/nonexistent/obl-bench")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not found", r.stderr)


class TestRounds(unittest.TestCase):
    """run.py --rounds: the plan forward, then backward; the rounds pooled."""

    def test_schedule_alternates(self):
        from obllib import runner
        self.assertEqual(runner.schedule(["a", "b", "c"], 3),
                         [(1, "a"), (1, "b"), (1, "c"), (2, "c"), (2, "b"), (2, "a"),
                          (3, "a"), (3, "b"), (3, "c")])
        self.assertEqual(runner.schedule(["a"], 1), [(1, "a")])

    def test_merge_pools_samples(self):
        def obj(samples, reps, mem):
            return {"report_type": "RORAM", "impl": "obl", "params": {"N": 8, "reps": reps},
                    "metrics": {"Read_latency_us": {"median": sorted(samples)[len(samples) // 2],
                                                    "samples": samples},
                                "Memory_kb": mem}}
        other = dict(obj([9.0], 1, 1.0), params={"N": 16, "reps": 1})
        merged = parse.merge_rounds([obj([1.0, 2.0, 3.0], 3, 5.0), other,
                                     obj([10.0, 11.0, 12.0], 3, 6.0)])
        self.assertEqual([m["params"]["N"] for m in merged], [8, 16])
        m = merged[0]
        self.assertEqual(m["params"]["reps"], 6)
        self.assertEqual(m["rounds"], 2)
        lat = m["metrics"]["Read_latency_us"]
        self.assertEqual(lat["samples"], [1.0, 2.0, 3.0, 10.0, 11.0, 12.0])
        self.assertEqual((lat["median"], lat["min"], lat["max"]), (6.5, 1.0, 12.0))
        self.assertEqual((lat["q1"], lat["q3"], lat["reps"], lat["rounds"]), (2.25, 10.75, 6, 2))
        self.assertEqual(m["metrics"]["Memory_kb"], 6.0)  # no samples: the last round's
        self.assertIs(merged[1], other)  # seen once: unchanged
        rec = parse.record_from_json(m, "x")
        self.assertEqual(rec["metrics"]["Read_latency_us"]["rounds"], 2)

    def test_a_failed_round_decides_the_outcome(self):
        from obllib import results
        rec = {"report_type": "RORAM", "impl": "obl", "params": {"N": 8},
               "metrics": {"Read_latency_us": {"median": 1.0, "samples": [1.0]}}}
        ev = [{"event": "case_start", "name": "a"}, {"event": "case_end", "name": "a", "records": [rec]},
              {"event": "case_start", "name": "b"}, {"event": "case_end", "name": "b", "records": [rec]},
              {"event": "case_start", "name": "b"}, {"event": "case_failed", "name": "b", "reason": "x"},
              {"event": "case_start", "name": "a"}, {"event": "case_end", "name": "a", "records": [rec]},
              {"event": "case_start", "name": "b"}, {"event": "case_end", "name": "b", "records": [rec]}]
        rows = {r["name"]: r for r in results.outcomes(ev)}
        self.assertEqual((rows["a"]["outcome"], rows["b"]["outcome"]), ("ok", "failed"))
        [a] = rows["a"]["records"]
        self.assertEqual((a["rounds"], a["metrics"]["Read_latency_us"]["reps"]), (2, 2))

    def test_two_rounds_of_the_fake_plan(self):
        with tempfile.TemporaryDirectory() as d:
            r = helpers.script("run.py", "--max-n", "2048", "--cpu", "none", "--rounds", "2",
                               "--results", os.path.join(d, "res"),
                               "--log-dir", os.path.join(d, "logs"),
                               env={"OBL_BENCH": helpers.FAKE})
            self.assertEqual(r.returncode, 0, r.stderr)
            [name] = os.listdir(os.path.join(d, "logs"))
            events = parse.read_jsonl(os.path.join(d, "logs", name))
            starts = [e for e in events if e["event"] == "case_start" and not e.get("repeat")]
            n = len(starts) // 2
            self.assertEqual([e["round"] for e in starts], [1] * n + [2] * n)
            self.assertEqual([e["name"] for e in starts[n:]], [e["name"] for e in starts[:n]][::-1])
            with open(os.path.join(d, "res", "results.json")) as f:
                doc = json.load(f)
            self.assertEqual(len(doc["records"]), n)  # one record per case
            for rec in doc["records"]:
                for m in rec["metrics"].values():
                    self.assertEqual(m["rounds"], 2)
                    self.assertEqual(m["reps"], 2 * 5)  # the fake's 5 repetitions, twice
            self.assertEqual(doc["run"]["rounds"], 2)
            self.assertIn(f"{n} cases x 2 rounds", r.stderr)

    def test_rounds_must_be_positive(self):
        r = helpers.script("run.py", "--rounds", "0", env={"OBL_BENCH": helpers.FAKE})
        self.assertEqual(r.returncode, 2)
        self.assertIn("--rounds must be at least 1", r.stderr)


class TestDrift(unittest.TestCase):
    """The reference series at its largest N, run again at the end (drift)."""

    @staticmethod
    def run_small_plan(d, **env):
        """run.py on the fake's plan up to 4096, roram 8/8 at 1024 the noise case."""
        return helpers.script("run.py", "--max-n", "4096", "--cpu", "none",
                              "--noise-case", "roram:obl:N=1024,Key_bytes=8,Value_bytes=8",
                              "--results", os.path.join(d, "res"),
                              "--log-dir", os.path.join(d, "logs"),
                              env=dict({"OBL_BENCH": helpers.FAKE}, **env))

    def test_drift_event_and_results(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_small_plan(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            [name] = os.listdir(os.path.join(d, "logs"))
            events = parse.read_jsonl(os.path.join(d, "logs", name))
            [drift] = [e for e in events if e["event"] == "drift"]
            self.assertEqual(drift["name"], "roram:obl:N=4096,Key_bytes=8,Value_bytes=8")
            self.assertEqual(drift["max_rel_diff"], 0.0)  # the fake is deterministic
            repeats = [e["name"] for e in events if e["event"] == "case_end" and e.get("repeat")]
            self.assertEqual(repeats, ["roram:obl:N=1024,Key_bytes=8,Value_bytes=8",
                                       "roram:obl:N=4096,Key_bytes=8,Value_bytes=8"])
            self.assertIn("drift: roram:obl:N=4096", r.stderr)
            with open(os.path.join(d, "res", "results.json")) as f:
                doc = json.load(f)
            self.assertEqual(doc["drift"]["name"], drift["name"])
            # the repeats are not second records: one per case of the plan
            self.assertEqual(len(doc["records"]), 4 * 2 * 3)

    def test_drift_not_measured_is_said(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.run_small_plan(d, FAKE_FAIL_N="4096")
            self.assertEqual(r.returncode, 1)  # the failed cases
            self.assertIn("drift: not measured (roram:obl:N=4096", r.stderr)
            from obllib import inputs
            drift = inputs.gather(os.path.join(d, "res", "results.json"))[3]
            self.assertEqual(drift["reason"], "its first run did not complete")

    def test_results_without_drift(self):
        from obllib import inputs, runner
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "results.json")
            with open(path, "w") as f:
                json.dump({"records": [], "noise": None}, f)
            self.assertIsNone(inputs.gather(path)[3])
        self.assertEqual(runner.drift_line(None), "drift: not measured")

    def test_no_drift_case_when_the_reference_is_the_largest(self):
        from obllib import runner
        cases = [{"bench": "roram", "impl": "obl", "params": {"N": n, "Value_bytes": 8}}
                 for n in (1024, 2048)]
        self.assertIsNone(runner.drift_case_for(cases, cases[1]))
        self.assertIs(runner.drift_case_for(cases, cases[0]), cases[1])
        other = {"bench": "roram", "impl": "obl", "params": {"N": 4096, "Value_bytes": 56}}
        self.assertIs(runner.drift_case_for(cases + [other], cases[0]), cases[1])
        self.assertIsNone(runner.drift_case_for(cases, None))


if __name__ == "__main__":
    unittest.main()
