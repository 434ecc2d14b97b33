# SPDX-License-Identifier: MIT
import json
import os
import tempfile
import unittest

import helpers
from obllib import plan, runner

CASES = [{"bench": b, "report_type": "RORAM", "impl": i, "args": [],
          "params": {"N": n, "Key_bytes": 8, "Value_bytes": v}, "est_memory_bytes": 1 << 20,
          "est_seconds": 1.0}
         for b, i in (("array", "baseline_array"), ("roram", "obl"))
         for v in (8, 56) for n in (1 << 10, 1 << 20, 1 << 21)]


class TestCaseList(unittest.TestCase):
    def test_round_trip(self):
        text = plan.format_case_list([("run", c) for c in CASES])
        entries = plan.parse_case_list(text)
        self.assertEqual(len(entries), len(CASES))
        self.assertEqual([plan.identity(e["bench"], e["impl"], e["params"]) for e in entries],
                         [plan.case_identity(c) for c in CASES])
        self.assertTrue(all(e["run"] for e in entries))

    def test_actions_comments_spaces(self):
        text = ("# a comment line\n"
                "yes  roram obl N=1024,Key_bytes=8,Value_bytes=8   # spaces instead of tabs\n"
                "no\troram\tobl\tN=2048,Key_bytes=8,Value_bytes=8\n"
                "# run\troram\tobl\tN=4096,Key_bytes=8,Value_bytes=8\n"
                "\n")
        sel = plan.selection(text)
        self.assertEqual(list(sel.values()), [True, False, False])

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, "line 1"):
            plan.parse_case_list("maybe roram obl N=1\n")
        with self.assertRaisesRegex(ValueError, "duplicate"):
            plan.parse_case_list("run a b N=1,K=2\nskip a b K=2,N=1\n")


class TestEdit(unittest.TestCase):
    def setUp(self):
        self.text = plan.format_case_list([("run", c) for c in CASES])

    def runs(self, text):
        return {(e["bench"], e["params"]["N"], e["params"]["Value_bytes"]): e["run"]
                for e in plan.parse_case_list(text)}

    def test_skip_matching(self):
        new, total, matched, changed = plan.edit_case_list(
            self.text, "N >= 2**20 and Value_bytes != 8")
        self.assertEqual((total, matched, changed), (12, 4, 4))
        for (bench, n, v), run in self.runs(new).items():
            self.assertEqual(run, not (n >= 2 ** 20 and v != 8), (bench, n, v))
        # comments and the header survive
        self.assertTrue(new.startswith(plan.HEADER.splitlines()[0]))

    def test_select_and_run(self):
        new, _, matched, _ = plan.edit_case_list(self.text, 'bench == "roram" and N == 1024', "select")
        self.assertEqual(matched, 2)
        self.assertEqual(sum(self.runs(new).values()), 2)
        back, _, _, changed = plan.edit_case_list(new, "N > 2**20", "run")
        self.assertEqual(changed, 4)  # N = 2^21: both benches, both value sizes
        self.assertEqual(sum(self.runs(back).values()), 6)

    def test_comment(self):
        new, _, matched, _ = plan.edit_case_list(self.text, "impl == 'baseline_array'", "comment")
        self.assertEqual(matched, 6)
        self.assertEqual(len(plan.parse_case_list(new)), 12)  # commented entries still parse
        self.assertEqual(sum(self.runs(new).values()), 6)

    def test_missing_field_is_none_unknown_is_error(self):
        text = "run roram obl N=1024,B=4096\nrun roram obl N=2048\n"
        new, _, matched, _ = plan.edit_case_list(text, "B is not None and B != 4096")
        self.assertEqual(matched, 0)
        new, _, matched, _ = plan.edit_case_list(text, "B is None")
        self.assertEqual(matched, 1)
        with self.assertRaisesRegex(ValueError, "unknown field 'batch'"):
            plan.edit_case_list(text, "batch > 1")
        with self.assertRaisesRegex(ValueError, "unsupported"):
            plan.edit_case_list(text, "__import__('os').system('true')")
        with self.assertRaisesRegex(ValueError, "not True/False"):
            plan.edit_case_list(text, "N + 1")

    def test_script_in_place(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "cases.txt")
            with open(path, "w") as f:
                f.write(self.text)
            r = helpers.script("edit_cases.py", path, "N >= 2**20 and Value_bytes != 8", "--in-place")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "")
            self.assertIn("4/12 cases matched", r.stderr)
            with open(path) as f:
                self.assertEqual(sum(self.runs(f.read()).values()), 8)
            r = helpers.script("edit_cases.py", path, "Nope > 1", "--in-place")
            self.assertEqual(r.returncode, 1)
            with open(path) as f:
                self.assertEqual(sum(self.runs(f.read()).values()), 8)  # unchanged


class TestRunPlanSelect(unittest.TestCase):
    """run.py plan mode, selection, and case lists from logs, with the fake driver."""

    def test_plan_select_cases_round_trip(self):
        with tempfile.TemporaryDirectory() as d:
            env = {"OBL_BENCH": helpers.FAKE, "BENCHMARK_MODE": "plan"}
            r = helpers.script("run.py", "--max-n", "2048", env=env)
            self.assertEqual(r.returncode, 0, r.stderr)
            entries = plan.parse_case_list(r.stdout)
            self.assertEqual(len(entries), 16)  # 4 types x 2 value sizes x 2 sizes
            self.assertFalse(os.path.exists(os.path.join(d, "logs")))
            cases = os.path.join(d, "cases.txt")
            with open(cases, "w") as f:
                f.write(r.stdout)
            e = helpers.script("edit_cases.py", cases, "bench != 'roram' or N != 1024 or Value_bytes != 8",
                              "--in-place")
            self.assertEqual(e.returncode, 0, e.stderr)
            calls = os.path.join(d, "calls")
            r = helpers.script("run.py", "--max-n", "2048", "--results", os.path.join(d, "res"),
                               "--log-dir", os.path.join(d, "logs"),
                               env={"OBL_BENCH": helpers.FAKE, "BENCHMARK_SELECTOR": cases,
                                    "FAKE_CALLS": calls})
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(calls) as f:
                ran = [json.loads(line) for line in f if not line.startswith('["list-')]
            # the CPU probe (--cpu auto, the default): twice on each CPU
            cpus = runner.allowed_cpus()
            probes = [a for a in ran if a[:len(runner.PROBE_ARGS)] == runner.PROBE_ARGS]
            self.assertEqual(len(probes), 2 * len(cpus) if len(cpus) > 1 else 0)
            ran = [a for a in ran if a not in probes]
            # the selected case in each of the two rounds (the default), then
            # its noise repeat, pinned to one CPU
            self.assertEqual(len(ran), 3)
            self.assertIn("1024", ran[0])
            if cpus:
                self.assertIn("--cpu", ran[0])
                self.assertIn(ran[0][ran[0].index("--cpu") + 1], [str(c) for c in cpus])
            [log] = os.listdir(os.path.join(d, "logs"))
            log = os.path.join(d, "logs", log)
            r = helpers.script("run.py", "--cases", log)
            self.assertEqual(r.returncode, 0, r.stderr)
            sel = plan.parse_case_list(r.stdout)
            self.assertEqual(len(sel), 16)
            self.assertEqual([(e["bench"], e["params"]["N"]) for e in sel if e["run"]],
                             [("roram", 1024)])
            r = helpers.script("run.py", log)
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.strip().splitlines()
            self.assertEqual(len(lines), 17)
            self.assertEqual(sum(",ok," in l for l in lines), 1)
            self.assertEqual(sum(",skipped," in l for l in lines), 15)

class TestCpuChoice(unittest.TestCase):
    """run.py --cpu: the probe picks the faster CPU; none and a number pin as asked."""

    class Log:
        def __init__(self):
            self.events = []

        def emit(self, kind, **kw):
            self.events.append(dict(kind=kind, **kw))

    def test_auto_picks_the_faster_cpu(self):
        cpus = runner.allowed_cpus()
        if len(cpus) < 2:
            self.skipTest("one CPU: nothing to choose")
        slow = str(cpus[0])
        old = os.environ.get("FAKE_SLOW_CPU")
        os.environ["FAKE_SLOW_CPU"] = slow
        try:
            log = self.Log()
            with open(os.devnull, "w") as quiet:
                cpu = runner.choose_cpu(helpers.FAKE, "auto", log, stream=quiet)
        finally:
            if old is None:
                del os.environ["FAKE_SLOW_CPU"]
            else:
                os.environ["FAKE_SLOW_CPU"] = old
        self.assertIn(cpu, cpus)
        self.assertNotEqual(str(cpu), slow)
        [ev] = log.events
        self.assertEqual(ev["kind"], "cpu_choice")
        self.assertEqual(ev["cpu"], cpu)
        self.assertEqual(sorted(ev["probe"]), sorted(str(c) for c in cpus))
        self.assertTrue(all(len(v) == 2 for v in ev["probe"].values()))

    def test_none_and_fixed(self):
        log = self.Log()
        self.assertIsNone(runner.choose_cpu(helpers.FAKE, "none", log))
        self.assertEqual(runner.choose_cpu(helpers.FAKE, "1", log), 1)
        self.assertEqual([e["cpu"] for e in log.events], [None, 1])

    def test_threaded_cases_are_not_pinned(self):
        """A case with Threads != 1 (obl-bench's or a plug-in's) runs on every CPU."""
        self.assertEqual(runner.unpinned(["--x", "--cpu", "1", "--y"], {"pin": False}),
                         ["--x", "--y"])
        case = json.loads(runner.bench_output(helpers.FAKE, ["list-cases", "--max-n", "1024"])
                          .splitlines()[0])
        argv = runner.run_case(helpers.FAKE, case, 30, extra_args=["--cpu", "0"])["argv"]
        self.assertIn("--cpu", argv)
        argv = runner.run_case(helpers.FAKE, dict(case, pin=False), 30,
                               extra_args=["--cpu", "0"])["argv"]
        self.assertNotIn("--cpu", argv)
        from obllib import plugins
        p = plugins.Plugin("/nonexistent", {"name": "p", "cases": [
            {"type": "LOADBALANCE", "B": [1024], "Threads": ["cores", 1]}]})
        cases = plugins.manifest_cases(p)
        self.assertEqual([(c["params"]["Threads"], c.get("pin", True)) for c in cases],
                         [(min(os.cpu_count(), 64), os.cpu_count() == 1), (1, True)])

    def test_bad_value_is_a_usage_error(self):
        for bad in ("fast", "-1", "99999"):
            r = helpers.script("run.py", "--cpu", bad, env={"OBL_BENCH": helpers.FAKE})
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn("--cpu", r.stderr)

    def stubbed(self, results):
        """choose_cpu with probe_cpu answering from results[cpu] in turn."""
        calls = {c: iter(v) for c, v in results.items()}
        old_probe, old_allowed = runner.probe_cpu, runner.allowed_cpus
        runner.probe_cpu = lambda bench_bin, cpu: next(calls[cpu])
        runner.allowed_cpus = lambda: sorted(results)
        try:
            with open(os.devnull, "w") as quiet:
                return runner.choose_cpu("unused", "auto", self.Log(), stream=quiet)
        finally:
            runner.probe_cpu, runner.allowed_cpus = old_probe, old_allowed

    def test_a_cpu_is_judged_by_its_slower_probe(self):
        self.assertEqual(self.stubbed({0: [1.0, 3.0], 1: [2.0, 2.1]}), 1)
        self.assertEqual(self.stubbed({0: [1.0, 1.1], 1: [2.0, 0.5]}), 0)

    def test_failed_probes(self):
        self.assertEqual(self.stubbed({0: [None, 1.0], 1: [2.0, 2.0]}), 1)
        self.assertIsNone(self.stubbed({0: [None, None], 1: [None, 2.0]}))


if __name__ == "__main__":
    unittest.main()
