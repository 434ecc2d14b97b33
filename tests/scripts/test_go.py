# SPDX-License-Identifier: MIT
"""go.sh end to end in a scratch copy of the repository, with the fake driver.

A stand-in `cmake` on PATH "builds" by installing the fake obl-bench as
build/bench/obl-bench, so the whole pipeline (run, results, tables, figures,
exit status) is exercised without compiling anything."""
import os
import shutil
import subprocess
import tempfile
import unittest

import helpers

FAKE_CMAKE = """#!/bin/sh
# test double of cmake: records its arguments, "builds" the fake obl-bench
echo "$@" >> cmake.calls
if [ "$1" = --build ]; then
    mkdir -p build/bench && cp "$FAKE_BENCH" build/bench/obl-bench && chmod +x build/bench/obl-bench
fi
"""


class TestGo(unittest.TestCase):
    def run_go(self, *args, special=False, extra_env=None):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        shutil.copy(os.path.join(helpers.ROOT, "go.sh"), d)
        shutil.copytree(os.path.join(helpers.ROOT, "scripts"), os.path.join(d, "scripts"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        bindir = os.path.join(d, "bin")
        os.mkdir(bindir)
        with open(os.path.join(bindir, "cmake"), "w") as f:
            f.write(FAKE_CMAKE)
        os.chmod(os.path.join(bindir, "cmake"), 0o755)
        env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"], FAKE_BENCH=helpers.FAKE)
        for k in ("BENCHMARK_MODE", "BENCHMARK_SELECTOR", "OBL_BENCH"):
            env.pop(k, None)
        if special:
            env["FAKE_SPECIAL"] = "1"
        env.update(extra_env or {})
        r = subprocess.run(["sh", os.path.join(d, "go.sh")] + list(args), capture_output=True,
                           text=True, env=env, cwd=d, timeout=300)
        return d, r

    def test_go_leaves_log_results_tables_figures(self):
        d, r = self.run_go("--max-n", "2048")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        with open(os.path.join(d, "cmake.calls")) as f:
            calls = f.read()
        self.assertIn("-S . -B build -DCMAKE_BUILD_TYPE=Release", calls)
        self.assertIn("--build build -j2", calls)
        self.assertEqual(len(os.listdir(os.path.join(d, "logs", "full_runs"))), 1)
        for name in ("results.json", "results.csv", "RORAM.csv", "UnorderedMap.csv", "tables.md"):
            self.assertTrue(os.path.exists(os.path.join(d, "results", name)), name)
        self.assertIn("<!-- obl-table: RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us -->", r.stdout)
        self.assertIn("obl ÷ baseline_array", r.stdout)
        with open(os.path.join(d, "docs", "results", "latest.md")) as f:
            page = f.read()
        self.assertIn("<!-- obl-table: RORAM | Key_bytes=8,Value_bytes=8 | Read_latency_us -->", page)
        self.assertIn("noise: reference case", r.stdout)
        pngs = [p for p in os.listdir(os.path.join(d, "figures")) if p.endswith(".png")]
        self.assertEqual(len(pngs), 20)
        self.assertRegex(r.stderr, r"\[32/32\] ")  # 16 cases, two rounds (the default)
        self.assertIn("in 2 rounds spread over the run", r.stdout)

    def test_go_fails_when_a_case_fails(self):
        d, r = self.run_go("--max-n", "1024", "--timeout", "2", special=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("some cases failed", r.stderr)
        self.assertIn("obl-table", r.stdout)  # the tables of what did run are still printed

    def test_go_plan_mode(self):
        d, r = self.run_go("--max-n", "1024", extra_env={"BENCHMARK_MODE": "plan"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "logs")))  # nothing ran
        lines = [l for l in r.stdout.splitlines() if l and not l.startswith("#")]
        self.assertEqual(len(lines), 8)
        self.assertTrue(all(l.startswith("run\t") for l in lines))


if __name__ == "__main__":
    unittest.main()
