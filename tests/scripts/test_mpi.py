# SPDX-License-Identifier: MIT
"""scripts/obllib/mpi.py and run.py --mpi: the rank list, the MPI cases and
their commands, obl-mpi's REPORT line read as a record, the table with the
rank layout, and a Ramp-UMAP case over MPI stopped through rank 0 (stand-in
programs for mpirun, obl-mpi, obl-server and obl-load)."""
import json
import os
import stat
import tempfile
import unittest
from unittest import mock

import helpers  # noqa: F401  (puts scripts/ on sys.path)
from obllib import mpi, parse, plan, ramp, runner, tables

# A stand-in mpirun.sh: drops "-np R" and runs the rest as one process;
# SIGTERM to it (as to the real mpirun, which kills every rank) fails it.
MPIRUN = """#!/bin/sh
shift 2
trap 'echo "mpirun got SIGTERM" >&2; exit 9' TERM
"$@" &
wait $!
"""

# A stand-in rank 0: prints its pid, listens, exits 0 on SIGTERM.
SERVER = """#!/bin/sh
trap 'echo "rank 0 stopped" >&2; exit 0' TERM
echo "obl-server: pid $$"
echo "obl-server: listening on 127.0.0.1:4242"
while :; do sleep 0.05; done
"""

LOAD = """#!/bin/sh
for a in "$@"; do [ "$prev" = --summary ] && out=$a; prev=$a; done
echo '%s' > "$out"
"""

REPORT = ("REPORT_123UnorderedMap|obl_mpi|0.1| N:=65536 | Key_bytes := 8 | Value_bytes := 56 "
          "| Shards := 2 | Batch_size := 4096 | fill:=0.8 | Initialization_time_us := 9000 "
          "| Get_latency_us := 390800 | Get_throughput_qps := 10482 | Balancers := 1 "
          "| Ranks := 3 | Shard_batch := 2236 | Bytes_per_query := 73.3 "
          "| Encrypt_us_per_query := 0.06 | Split_us := 50000 | Join_us := 20000 "
          "| Shard_us := 282900 | Wait_us := 300000 REPORT_123")


class MpiTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = self.tmp.name
        for d in ("bench", "serve", os.path.join("src", "mpi"), "bin"):
            os.makedirs(os.path.join(root, d))
        self.bench = os.path.join(root, "bench", "obl-bench")
        self.write(self.bench, "#!/bin/sh\n")
        self.write(os.path.join(root, "bin", "mpirun"), "#!/bin/sh\n")
        self.script = os.path.join(root, "mpirun.sh")
        self.write(self.script, MPIRUN)
        env = {"PATH": os.path.join(root, "bin") + os.pathsep + os.environ.get("PATH", ""),
               "OBL_MPIRUN_SH": self.script}
        self.env = mock.patch.dict(os.environ, env)
        self.env.start()

    def tearDown(self):
        self.env.stop()
        self.tmp.cleanup()

    def write(self, path, text):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)

    def install(self):
        root = self.tmp.name
        self.write(os.path.join(root, "src", "mpi", "obl-mpi"), "#!/bin/sh\n")
        rec = json.dumps(dict(schema="obl-bench/1", bench="ramp", report_type=ramp.REPORT_TYPE,
                              impl="obl", params={"N": 1024, "Step": 1},
                              metrics={"Offered_qps": {"median": 1000}}))
        self.write(os.path.join(root, "serve", "obl-server"), SERVER)
        self.write(os.path.join(root, "serve", "obl-load"), LOAD % rec)

    def test_parse_ranks(self):
        self.assertEqual(mpi.parse_ranks("3"), [3])
        self.assertEqual(mpi.parse_ranks("4,2,4"), [2, 4])
        self.assertEqual(mpi.parse_ranks("2-4"), [2, 3, 4])
        for bad in ("1", "0-3", "x", "3-2", "65", ""):
            with self.assertRaises(ValueError, msg=bad):
                mpi.parse_ranks(bad)

    def test_cases_and_commands(self):
        self.assertEqual(mpi.cases(self.bench, [3]), [])  # obl-mpi not built: no case
        self.install()
        cs = mpi.cases(self.bench, [2, 4], max_n=4096)
        maps = [c for c in cs if c["impl"] == mpi.IMPL]
        self.assertEqual([(c["params"]["Ranks"], c["params"]["Balancers"], c["params"]["Shards"])
                          for c in maps], [(2, 1, 1), (4, 1, 3)])
        self.assertEqual(maps[0]["params"]["N"], 4096)
        argv = mpi.argv(self.bench, maps[1])
        self.assertEqual(argv[:4], ["sh", self.script, "-np", "4"])
        self.assertTrue(argv[4].endswith(os.path.join("src", "mpi", "obl-mpi")))
        self.assertEqual(argv[argv.index("--shards") + 1], "3")
        self.assertEqual(argv[argv.index("--balancers") + 1], "1")
        threaded = [c for c in cs if c["impl"] == mpi.THREADED_IMPL]
        self.assertEqual([(c["bench"], c["params"]["Shards"], c["params"]["Threads"])
                          for c in threaded], [("sharded", 1, 1), ("sharded", 3, 3)])
        engines = [(c["params"]["N"], c["params"]["Engines"]) for c in cs
                   if c["impl"] == "obl_batched"]
        self.assertEqual(engines, [(4096, 1), (4096, 2)])  # the cost model's, N <= max_n
        ramps = [c for c in cs if c.get("driver") == ramp.DRIVER]

        self.assertEqual([c["mpi_ranks"] for c in ramps], [2, 4])
        sv = ramp.server_argv("obl-server", ramps[1])
        self.assertEqual(sv[:5], ["sh", self.script, "-np", "4", "obl-server"])
        self.assertEqual(sv[sv.index("--backend") + 1], "mpi")
        self.assertIn("MPI: 4 ranks", ramp.describe(ramps[1]["params"]))
        self.assertEqual([c["pin"] for c in threaded], [True, False])  # S threads: all cores
        self.assertEqual(runner.unpinned(["--cpu", "1", "--x"], threaded[1]), ["--x"])
        self.assertEqual(runner.unpinned(["--cpu", "1"], threaded[0]), ["--cpu", "1"])
        # a threaded case already in the plan is not added twice
        again = mpi.cases(self.bench, [2, 4], max_n=4096, existing=threaded[:1])
        self.assertEqual(len([c for c in again if c["impl"] == mpi.THREADED_IMPL]), 1)
        names = [plan.case_name(c) for c in cs]
        self.assertEqual(len(set(names)), len(names))

    def test_report_and_table(self):
        rec = parse.objects_from_reports([REPORT], "mpi")[0]
        self.assertEqual(rec["impl"], mpi.IMPL)
        for m in ("Get_latency_us", "Bytes_per_query", "Encrypt_us_per_query", "Wait_us"):
            self.assertIn(m, rec["metrics"])
        self.assertEqual(rec["params"]["Ranks"], 3)
        self.assertEqual(rec["params"]["Balancers"], 1)
        norm = parse.record_from_json(rec, "x")
        threaded = {"report_type": "UnorderedMap", "impl": mpi.THREADED_IMPL,
                    "params": {"N": 65536, "Key_bytes": 8, "Value_bytes": 56, "Shards": 2,
                               "Batch_size": 4096, "Threads": 2, "Engines": 0},
                    "metrics": {"Get_latency_us": {"median": 339700.0},
                                "Get_throughput_qps": {"median": 12058.0}}}
        [t] = mpi.tables([norm, threaded])
        self.assertEqual(t.header[:4], ["ranks", "balancers L", "shard ranks R", "shards S"])
        row = t.rows[0]
        self.assertEqual(row[:4], ["3", "1", "2", "2"])
        self.assertEqual(row[t.header.index("threaded q/s")], "12058")
        self.assertEqual(row[-1], "1.15")  # 390800 / 339700
        self.assertIn("Sharded-UMAP over MPI", t.section)
        # not in the generic tables (its own, a row per layout)
        self.assertEqual([x for x in tables.measured_tables([dict(norm, origin="run")])
                          if mpi.IMPL in x.header], [])

    def test_ramp_over_mpi_stops_rank0(self):
        self.install()
        case = mpi.ramp_case(1024, 3)
        res = ramp.run_case(self.bench, case, 30)
        self.assertEqual(res["outcome"], "ok", res)
        self.assertIn("rank 0 stopped", res["stderr_tail"])
        self.assertEqual(res["records"][0]["params"]["Ranks"], 3)  # the case's layout
        self.assertEqual(res["records"][0]["params"]["Backend"], "mpi")
        self.assertNotIn("mpirun got SIGTERM", res["stderr_tail"])

    def test_run_case_reads_report_line(self):
        self.install()
        self.write(os.path.join(self.tmp.name, "src", "mpi", "obl-mpi"),
                   f"#!/bin/sh\necho '{REPORT}'\n")
        case = mpi.cases(self.bench, [3])[0]
        res = runner.run_case(self.bench, case, 30)
        self.assertEqual(res["outcome"], "ok", res)
        self.assertEqual(res["argv"][:3], [self.script, "-np", "3"])
        self.assertEqual(res["records"][0]["metrics"]["Bytes_per_query"]["median"], 73.3)


    def test_plugin_command(self):
        """benchmark/obl's run.sh with Ranks=R: obl-mpi under mpirun.sh."""
        import importlib.util
        path = os.path.join(helpers.ROOT, "benchmark", "common", "obl_bench_run.py")
        spec = importlib.util.spec_from_file_location("obl_bench_run", path)
        run = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(run)
        cmd, reps = run.mpi_command("/r", ["N=65536", "Ranks=3", "Shards=2", "Batch_size=4096",
                                           "Balancers=1", "reps=2", "fill=0.8"])
        self.assertEqual(cmd, ["sh", "/r/scripts/mpirun.sh", "-np", "3",
                               "/r/build/src/mpi/obl-mpi", "--n", "65536", "--shards", "2",
                               "--batch", "4096", "--balancers", "1"])
        self.assertEqual(reps, 2)
        with self.assertRaises(SystemExit):
            run.mpi_command("/r", ["Ranks=3", "Threads=2"])

if __name__ == "__main__":
    unittest.main()
