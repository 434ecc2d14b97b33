#!/usr/bin/python3
"""run.sh of the plug-ins served by obl-bench (obl, c_baselines):
    obl_bench_run.py IMPL_KIND TYPE k=v ...
runs the obl-bench subcommand of that REPORT type and implementation kind
(obl: the oblivious one, baseline: array, hashmap or lb-baseline) with the parameters as
its flags (N or B -> --n, Key_bytes -> --key-bytes, fill=0.8 -> --fill-pct 80,
reps/queries/seed/cpu as they are, any other Name -> --name) and prints its
REPORT lines on stdout. Exit status: obl-bench's.
With Ranks=R (UnorderedMap, obl only) the sharded map runs over MPI instead:
scripts/mpirun.sh -np R obl-mpi (docs/mpi.md) with Balancers, Shards and
Batch_size as its flags, once per repetition (reps=, default 1)."""
import os
import subprocess
import sys

BASELINES = {"array", "hashmap", "lb-baseline"}


def subcommand(bench, rtype, kind):
    out = subprocess.run([bench, "list-types"], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        name, _, rest = line.partition("\t")
        if rest.partition("\t")[0] == rtype and (name in BASELINES) == (kind == "baseline"):
            return name
    sys.exit(f"obl_bench_run: obl-bench has no {kind} type for {rtype}")


def flags(pairs):
    out = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            sys.exit(f"obl_bench_run: expected k=v, not {pair!r}")
        if key == "fill":
            out += ["--fill-pct", str(round(float(value) * 100))]
        elif key in ("N", "B"):  # the load balancer's B is obl-bench's --n
            out += ["--n", value]
        else:
            out += ["--" + key.lower().replace("_", "-"), value]
    return out


MPI_FLAGS = {"N": "--n", "Key_bytes": "--key-bytes", "Value_bytes": "--value-bytes",
             "Shards": "--shards", "Batch_size": "--batch", "Balancers": "--balancers",
             "Pipeline": "--pipeline", "seed": "--seed", "queries": None, "cpu": None,
             "fill": None}


def mpi_command(root, pairs):
    """(argv of one obl-mpi run under scripts/mpirun.sh, repetitions)."""
    kv = dict(p.partition("=")[::2] for p in pairs)
    ranks, reps = kv.pop("Ranks"), int(kv.pop("reps", "1"))
    exe = os.path.join(root, "build", "src", "mpi", "obl-mpi")
    cmd = ["sh", os.path.join(root, "scripts", "mpirun.sh"), "-np", ranks, exe]
    for key, value in kv.items():
        if key not in MPI_FLAGS:
            sys.exit(f"obl_bench_run: obl-mpi has no parameter {key!r}")
        if MPI_FLAGS[key]:
            cmd += [MPI_FLAGS[key], value]
    return cmd, reps


def run_mpi(root, pairs):
    cmd, reps = mpi_command(root, pairs)
    for _ in range(reps):
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        sys.stdout.write("".join(l + "\n" for l in proc.stdout.splitlines() if "REPORT_123" in l))
        if proc.returncode:
            return proc.returncode
    return 0


def main(argv):
    if len(argv) < 3:
        sys.exit("usage: obl_bench_run.py obl|baseline TYPE k=v ...")
    root = os.environ.get("OBL_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    if argv[1] == "obl" and argv[2] == "UnorderedMap" and any(
            a.startswith("Ranks=") for a in argv[3:]):
        return run_mpi(root, argv[3:])
    bench = os.environ.get("OBL_BENCH") or os.path.join(root, "build", "bench", "obl-bench")
    cmd = [bench, subcommand(bench, argv[2], argv[1])] + flags(argv[3:])
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    sys.stdout.write("".join(l + "\n" for l in proc.stdout.splitlines() if "REPORT_123" in l))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
