# SPDX-License-Identifier: MIT
"""Ramp-UMAP: obl-server under obl-load's open-loop load (docs/server.md).

A Ramp-UMAP case is not an obl-bench subcommand: run.py starts obl-server
(build/serve/, beside build/bench/obl-bench) on an ephemeral loopback port,
runs obl-load against it, stops the server with SIGTERM and reads obl-load's
summary: one obl-bench/1 record per rate step (type Ramp-UMAP) and one per
second of the schedule (type Ramp-UMAP-timeline). Tables: one row per step;
figures: latency percentiles against the offered rate (the knee) and the
timeline of a ramp (offered rate, p99 per second, batch size).
"""
import os
import select
import signal
import subprocess
import tempfile
import time

from . import procs, stats
from .tables import Table, n_label

REPORT_TYPE = "Ramp-UMAP"
TIMELINE_TYPE = "Ramp-UMAP-timeline"
TYPES = (REPORT_TYPE, TIMELINE_TYPE)
DRIVER = "obl-server+obl-load"
KNEE_P99_US = 10000.0  # the knee: the highest offered rate whose p99 stays below 10 ms
TARGET_N = 2 ** 20
START_TIMEOUT_S = 300.0  # the server builds its map before it listens

# (Rate_from, Rate_to, Seconds, Steps): the default plan's short ramp and
# the single-query path at 1 K q/s; --large adds the full ones (the large
# plan holds the default one, as its N grid does). The ramps run past the
# knee of the faster backend (docs/server.md, "Measured"). After a ramp, a
# fine ramp on the same server brackets its knee (refine_load).
DEFAULT_LOADS = ((20000, 400000, 20, 10), (1000, 1000, 10, 1))
LARGE_LOADS = ((10000, 500000, 120, 30), (1000, 1000, 30, 1))
FINE_STEP_QPS = 10000  # the fine ramp's step, widened when it would need more than
FINE_MAX_STEPS = 8     # this many steps
FINE_STEP_S = 3
# Backends, each under every load: obl_omap one request at a time, and the
# sharded map (one shard per core, GETs through its batch get path).
BACKENDS = ("omap", "shard")
WARMUP_S = 2
# A ramp's wait for answers after its last send (obl-load --drain): a ramp
# ends past its knee, where the backlog would take the default 10 s.
RAMP_DRAIN_S = 2
# Case parameters the server's side alone knows, copied into the records
# (an MPI deployment's: obllib/mpi.py).
CASE_ONLY_PARAMS = ("Backend", "Ranks", "Shards")
# The parameter that marks the records of a fine ramp (refine_load).
FINE_PARAM = "Fine"
CONNECTIONS = 4
HIT_PCT = 80
# With OBL_RAMP_PIN=1 the omap backend's cases pin the server's batch thread
# (the map) to one CPU and its loop and obl-load to another (placement); by
# default every thread is left to the scheduler, which did better on the
# shared VM (docs/server.md, "Measured").
PIN_BACKENDS = ("omap",)


def binaries(bench_bin):
    """(obl-server, obl-load) of the build that holds bench_bin, or None."""
    d = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(bench_bin))), "serve")
    paths = (os.path.join(d, "obl-server"), os.path.join(d, "obl-load"))
    return paths if all(os.access(p, os.X_OK) for p in paths) else None


def make_case(n, load, key_bytes=8, value_bytes=56, max_batch=None, pad=0, backend="omap"):
    """One ramp case; the shard backend runs one shard per core with GETs only
    (obl-load sends GETs), max batch 1024 unless given (omap: 256)."""
    r0, r1, secs, steps = load
    if max_batch is None:
        max_batch = 1024 if backend == "shard" else 256
    params = {"Backend": backend, "N": n, "Key_bytes": key_bytes, "Value_bytes": value_bytes,
              "Max_batch": max_batch, "Pad": pad, "Connections": CONNECTIONS,
              "Hit_pct": HIT_PCT, "Rate_from": r0, "Rate_to": r1, "Seconds": secs,
              "Steps": steps}
    server_args = ["--n", str(n), "--key-bytes", str(key_bytes), "--value-bytes",
                   str(value_bytes), "--max-batch", str(max_batch), "--pad",
                   "pow2" if pad else "none"]
    if backend == "shard":  # omap is the server's default backend
        params["Shards"] = os.cpu_count() or 1
        server_args += ["--backend", "shard", "--shards", str(params["Shards"]), "--ops", "get"]
    load_args = ["--ramp", f"{r0}:{r1}:{secs}:{steps}", "--warmup", str(WARMUP_S),
                 "--connections", str(CONNECTIONS), "--hit-ratio", str(HIT_PCT / 100),
                 "--seed", "1"] + (["--drain", str(RAMP_DRAIN_S)] if steps > 1 else [])
    requests = (r0 + r1) / 2 * secs + r0 * WARMUP_S
    case = {"bench": "ramp", "report_type": REPORT_TYPE, "impl": "obl", "driver": DRIVER,
            "args": load_args, "server_args": server_args, "params": params,
            "est_memory_bytes": n * 400 + requests * 120,
            "est_seconds": 3 * n / 2 ** 20 + WARMUP_S + secs + 5}
    if steps > 1:  # a ramp: then a fine one around its knee (refine_load)
        case["refine"] = True
        case["est_seconds"] += 2 * RAMP_DRAIN_S + WARMUP_S + FINE_MAX_STEPS * FINE_STEP_S - 5
    return case


def refine_load(steps):
    """The fine ramp that brackets the knee of a ramp's step records:
    (Rate_from, Rate_to, Seconds, Steps) from the knee's rate, rounded down to
    a multiple of FINE_STEP_QPS (if that is not 0), to at least the next
    step's rate, in steps of FINE_STEP_QPS, or wider (whole thousands) where
    that would take more than FINE_MAX_STEPS. None when no step or every step
    kept p99 under 10 ms: nothing to bracket."""
    rate, _ = knee(steps)
    above = sorted(_med(r, "Offered_qps") for r in steps
                   if rate is not None and _med(r, "Offered_qps") > rate)
    if rate is None or not above:
        return None
    lo = int(rate // FINE_STEP_QPS) * FINE_STEP_QPS or int(rate)
    span = -(-int(above[0]) // FINE_STEP_QPS) * FINE_STEP_QPS - lo
    width = FINE_STEP_QPS
    if span > (FINE_MAX_STEPS - 1) * width:
        width = -(-span // ((FINE_MAX_STEPS - 1) * 1000)) * 1000
    n = -(-span // width) + 1
    return (lo, lo + (n - 1) * width, n * FINE_STEP_S, n)


def cases(bench_bin, max_n=None, large=False):
    """The plan's Ramp-UMAP cases ([] when obl-server/obl-load are not built)."""
    if binaries(bench_bin) is None:
        return []
    n = min(TARGET_N, max_n) if max_n else TARGET_N
    plan = [make_case(n, load, backend=b) for b in BACKENDS for load in DEFAULT_LOADS]
    if large:
        plan += [make_case(n, load, backend=b) for b in BACKENDS for load in LARGE_LOADS]
    return plan


def _read_listen_line(proc, deadline, pid_out=None):
    """The port the server prints once listening, or None. pid_out (a list)
    gets the pid from an "obl-server: pid P" line (rank 0 under mpirun)."""
    buf = b""
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            break
        buf += chunk
        for line in buf.decode("utf-8", "replace").splitlines():
            if line.startswith("obl-server: pid ") and pid_out is not None:
                pid_out.append(int(line.split()[-1]))
            if "listening on" in line:
                return int(line.rsplit(":", 1)[1])
    return None


def server_argv(server, case):
    """obl-server's command: itself, or under scripts/mpirun.sh with the
    case's ranks (mpi.ramp_case)."""
    from . import mpi
    argv = [server, "--port", "0"] + case["server_args"]
    if case.get("mpi_ranks"):
        argv = ["sh", mpi.mpirun_script(), "-np", str(case["mpi_ranks"])] + argv
    return argv


def _run_load(load_bin, port, args, files, deadline, timeout_s):
    """One obl-load run against the server on port; its output goes to
    files (stdout, stderr, summary). -> (outcome, reason, exit code)."""
    out, err, summary = files
    with open(out, "wb") as lo, open(err, "wb") as le:
        load = subprocess.Popen([load_bin, "--port", str(port)] + args + ["--summary", summary],
                                stdout=lo, stderr=le, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            code = load.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            procs.stop_group(load, signal.SIGKILL, 5)
            return "timeout", f"timed out after {timeout_s:g} s (killed)", None
    if code != 0:
        last = [l for l in procs.tail(err).splitlines() if l.strip()]
        return "failed", f"obl-load exit status {code}" + (f": {last[-1]}" if last else ""), code
    return "ok", "", code


def _read_summary(path):
    """obl-load's summary records, or a reason why there are none."""
    import json
    try:
        with open(path, encoding="utf-8") as f:
            records = [json.loads(l) for l in f if l.strip()]
    except (OSError, ValueError) as e:
        return None, f"unreadable summary: {e}"
    if not any(r.get("report_type") == REPORT_TYPE for r in records):
        return None, "obl-load wrote no Ramp-UMAP record"
    return records, ""


def fine_args(args, load):
    """obl-load's arguments with the ramp replaced by load (refine_load)."""
    r0, r1, secs, steps = load
    i = args.index("--ramp")
    return args[:i + 1] + [f"{r0}:{r1}:{secs}:{steps}"] + args[i + 2:]


def placement(case, extra_args=()):
    """(batch CPU, loop CPU) for a case pinned by PIN_BACKENDS, or None: the
    map's thread on the run's CPU (run.py --cpu, the fastest in its probe)
    or else the last CPU this process may use, the server's loop and obl-load
    on the first other one. None unless OBL_RAMP_PIN=1, and with fewer than
    two CPUs or under MPI."""
    if (os.environ.get("OBL_RAMP_PIN", "0") != "1" or case.get("mpi_ranks")
            or case["params"].get("Backend") not in PIN_BACKENDS
            or not hasattr(os, "sched_getaffinity")):
        return None
    cpus = sorted(os.sched_getaffinity(0))
    args = list(extra_args)
    run_cpu = [int(args[i + 1]) for i, a in enumerate(args[:-1]) if a == "--cpu"
               and args[i + 1].isdigit()]
    batch = run_cpu[-1] if run_cpu and run_cpu[-1] in cpus else cpus[-1]
    others = [c for c in cpus if c != batch]
    return (batch, others[0]) if others else None


def run_case(bench_bin, case, timeout_s, extra_args=()):
    """Server up, load run (a ramp: then its fine ramp, refine_load, on the
    same server), server down. -> runner.run_case's result dict."""
    bins = binaries(bench_bin)
    start = time.monotonic()
    pin = placement(case, extra_args)
    if pin is not None:
        case = dict(case, server_args=case["server_args"] + [
            "--cpu-batch", str(pin[0]), "--cpu-loop", str(pin[1])],
            args=case["args"] + ["--cpu", str(pin[1])])
    result = {"argv": ["obl-server"] + case["server_args"] + ["|", "obl-load"] + case["args"]}
    if bins is None:
        result.update(outcome="failed", reason="obl-server/obl-load not built", exit_code=None,
                      signal=None, elapsed_s=0.0, stderr_tail="", reports=[])
        return result
    with tempfile.TemporaryDirectory(prefix="obl-ramp-") as tmp:
        srv_err = os.path.join(tmp, "srv.err")
        runs = [tuple(os.path.join(tmp, f"{x}{k}") for x in ("load.out", "load.err", "sum.jsonl"))
                for k in range(2)]
        deadline = start + timeout_s
        with open(srv_err, "wb") as se:
            server = subprocess.Popen(server_argv(bins[0], case), stdout=subprocess.PIPE,
                                      stderr=se, stdin=subprocess.DEVNULL,
                                      start_new_session=True)
        outcome, reason, code, rank0, records, done = "ok", "", 0, [], [], 0
        try:
            port = _read_listen_line(server, min(deadline, start + START_TIMEOUT_S), rank0)
            if port is None:
                outcome, reason = "failed", "obl-server did not start listening"
            args = case["args"]
            while outcome == "ok" and args is not None:
                outcome, reason, code = _run_load(bins[1], port, args, runs[done], deadline,
                                                  timeout_s)
                if outcome == "ok":
                    recs, reason = _read_summary(runs[done][2])
                    outcome = "ok" if recs is not None else "failed"
                    for r in recs or []:
                        if done:
                            r.setdefault("params", {})[FINE_PARAM] = 1
                        records.append(r)
                done += 1
                fine = (refine_load([r for r in records if r.get("report_type") == REPORT_TYPE])
                        if outcome == "ok" and done == 1 and case.get("refine") else None)
                args = fine_args(case["args"], fine) if fine else None
        finally:
            srv_code = procs.stop_group(server, pid=rank0[0] if rank0 else None)
            server.stdout.close()
        if outcome == "ok" and srv_code != 0:
            outcome, reason = "failed", f"obl-server exit status {srv_code} after SIGTERM"
        result["elapsed_s"] = round(time.monotonic() - start, 3)
        result["stderr_tail"] = (procs.tail(srv_err, 1000) + "".join(
            procs.tail(runs[k][1], 1000) for k in range(done))).strip()
        result["reports"] = [l.strip() for k in range(done)
                             for l in procs.tail(runs[k][0], 1 << 20).splitlines()
                             if "REPORT_123" in l]
        result.update(exit_code=code, signal=None)
        if outcome != "ok":
            if outcome == "timeout":
                result["timeout_s"] = timeout_s
                result["exit_code"] = None
            result.update(outcome=outcome, reason=reason)
            return result
        for r in records:  # what obl-load cannot know: the server's deployment
            for k in CASE_ONLY_PARAMS:
                if k in case["params"]:
                    r.setdefault("params", {})[k] = case["params"][k]
        result.update(outcome="ok", records=records)
        return result


# ---- tables and figures ------------------------------------------------------

def _med(rec, name):
    m = rec["metrics"].get(name)
    return None if m is None else m.get("median")


def _groups(records, rtype, row_param):
    """{params without row_param (sorted tuple): [records sorted by row_param]}"""
    out = {}
    for r in records:
        if r.get("report_type") != rtype or r.get("origin") == "extra":
            continue
        key = tuple(sorted((k, v) for k, v in r["params"].items() if k != row_param))
        out.setdefault(key, []).append(r)
    for recs in out.values():
        recs.sort(key=lambda r: r["params"].get(row_param, 0))
    return out


def describe(params):
    p = dict(params)
    n = p.get("N", 0)
    n_text = f"2^{n.bit_length() - 1}" if n and n & (n - 1) == 0 else str(n)
    if p.get("Steps", 1) > 1:
        load = (f"{'fine ' if p.get(FINE_PARAM) else ''}ramp {p['Rate_from']:,}→"
                f"{p['Rate_to']:,} q/s over {p['Seconds']} s in {p['Steps']} steps")
        if p.get(FINE_PARAM):
            load += " (around the knee of the ramp before it, same server)"
    else:
        load = f"constant {p.get('Rate_from', 0):,} q/s for {p.get('Seconds')} s"
    pad = ", padded to powers of two" if p.get("Pad") else ""
    backend = p.get("Backend", "omap")
    backend = (f"backend shard ({p.get('Shards')} shards)" if backend == "shard"
               else f"backend {backend}")
    mpi = ""
    if p.get("Backend") == "mpi":
        mpi = (f"; MPI: {p.get('Ranks')} ranks (rank 0 server and balancer, "
               f"{p.get('Ranks', 1) - 1} shard ranks, {p.get('Shards')} shards), get epochs "
               f"of {p.get('Max_batch')} requests")
    return (f"{backend}, N = {n_text}, {p.get('Key_bytes')}/{p.get('Value_bytes')} B, {load}, "
            f"{p.get('Hit_pct')} % hits, {p.get('Connections')} connections, max batch "
            f"{p.get('Max_batch')}{pad}{mpi}")


def knee(steps):
    """(offered rate, record) of the highest offered rate whose p99 < 10 ms."""
    ok = [(_med(r, "Offered_qps"), r) for r in steps
          if _med(r, "Latency_p99_us") is not None and _med(r, "Latency_p99_us") < KNEE_P99_US]
    return max(ok, key=lambda x: x[0]) if ok else (None, None)


def batch_hist_text(rec):
    bins = sorted((int(m.rsplit("_", 1)[1]), s["median"]) for m, s in rec["metrics"].items()
                  if m.startswith("Batches_size_") and s.get("median"))
    return " ".join(f"{lo}{'' if lo == 1 else '+'}:{int(c) if c == int(c) else stats.fmt(c, 3)}"
                    for lo, c in bins)


def _base(params):
    """A ramp's parameters without its rates: a ramp and its fine ramp share them."""
    return tuple(sorted((k, v) for k, v in params.items()
                        if k not in ("Rate_from", "Rate_to", "Seconds", "Steps", FINE_PARAM)))


def tables(records):
    """One table per Ramp-UMAP case: a row per rate step."""
    out = []
    cols = ("Offered_qps", "Achieved_qps", "Latency_avg_us", "Latency_p50_us", "Latency_p90_us",
            "Latency_p99_us", "Latency_p999_us", "Latency_max_us", "Batch_size_avg",
            "Batch_size_p50", "Batch_size_p99", "Batch_size_max", "Lost")
    header = ["Step", "Offered q/s", "Achieved q/s", "avg µs", "p50 µs", "p90 µs", "p99 µs",
              "p99.9 µs", "max µs", "batch avg", "batch p50", "batch p99", "batch max",
              "batches by size (lo: count)", "lost"]
    groups = _groups(records, REPORT_TYPE, "Step")
    refined = {_base(dict(k)) for k in groups if dict(k).get(FINE_PARAM)}
    ramps = {}  # a ramp's and its fine ramp's steps, for the headline's knee
    for key, steps in groups.items():
        if dict(key).get("Steps", 1) > 1:
            ramps.setdefault(_base(dict(key)), []).extend(steps)
    # a ramp's cases together, its fine ramp after it
    order = sorted(groups, key=lambda k: (_base(dict(k)), dict(k).get(FINE_PARAM, 0), k))
    for key in order:
        steps, params = groups[key], dict(key)
        rows = []
        for r in steps:
            vals = [stats.fmt(_med(r, c)) for c in cols]
            rows.append([str(r["params"]["Step"])] + vals[:12] + [batch_hist_text(r), vals[12]])
        rate, at = knee(steps)
        rounds = max((r.get("rounds") or 1) for r in steps)
        note = ("Open loop (obl-load, docs/server.md): latency from each request's intended "
                "send time, server and generator on the same machine over loopback; "
                f"medians over {rounds} round(s). Batches: the server's executed batch sizes.")
        if params.get("Steps", 1) > 1:
            note += (f" Knee (highest offered rate with p99 < 10 ms): {rate:,.0f} q/s, p50 there "
                     f"{stats.fmt(_med(at, 'Latency_p50_us'))} µs." if at else
                     " No step kept p99 under 10 ms.")
        t = Table(f"{REPORT_TYPE} | {describe(params)}", "Ramp-UMAP (lookups over TCP)", "",
                  describe(params), header, rows, note)
        # the headline, on the fine ramp where there is one: the knee of the
        # ramp and its fine ramp together
        if params.get("Steps", 1) > 1 and (params.get(FINE_PARAM) or _base(params) not in refined):
            rate, at = knee(ramps[_base(params)])
            backend = f", {params['Backend']} backend" if params.get("Backend") else ""
            t.headline = (f"Ramp-UMAP {params.get('Key_bytes')}/{params.get('Value_bytes')} "
                          f"over TCP{backend}, knee: highest offered rate with p99 < 10 ms (q/s)",
                          n_label(params.get("N", 0)),
                          f"{rate:,.0f}" if at else
                          f"none: p99 ≥ 10 ms from {params.get('Rate_from'):,} q/s")
        out.append(t)
    return out


def figures(records, out_dir):
    """The knee and the timeline of every ramp; -> written paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    written = []
    timelines = _groups(records, TIMELINE_TYPE, "Second")
    for i, (key, steps) in enumerate(sorted(_groups(records, REPORT_TYPE, "Step").items())):
        params = dict(key)
        if params.get("Steps", 1) < 2:
            continue
        tag = (f"{params.get('Backend', 'omap')}_{params['N']}_{params['Key_bytes']}_"
               f"{params['Value_bytes']}_"
               f"{params['Rate_from']}-{params['Rate_to']}_{params['Seconds']}s_pad{params['Pad']}"
               f"{'_fine' if params.get(FINE_PARAM) else ''}")
        fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
        xs = [_med(r, "Offered_qps") for r in steps]
        for name, label in (("Latency_p50_us", "p50"), ("Latency_p90_us", "p90"),
                            ("Latency_p99_us", "p99"), ("Latency_p999_us", "p99.9"),
                            ("Latency_max_us", "max")):
            ax.plot(xs, [_med(r, name) for r in steps], "o-", ms=3, lw=1.2, label=label)
        ax.axhline(KNEE_P99_US, color="0.5", ls="--", lw=0.8, label="10 ms")
        rate, _ = knee(steps)
        if rate:
            ax.axvline(rate, color="0.3", ls=":", lw=0.8, label=f"knee {rate:,.0f} q/s")
        ax.set_yscale("log")
        ax.set_xlabel("offered rate (requests/s)")
        ax.set_ylabel("latency from intended send (µs)")
        ax.set_title("Ramp-UMAP: latency against offered rate\n" + _wrap(describe(params)),
                     fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"Ramp-UMAP_knee_{tag}.png")
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
        secs = timelines.get(key)
        if secs:
            written.append(_timeline_figure(plt, secs, params, tag, out_dir))
    return written


def _wrap(text, width=80):
    import textwrap
    return "\n".join(textwrap.wrap(text, width))


def _timeline_figure(plt, secs, params, tag, out_dir):
    fig, axes = plt.subplots(3, 1, figsize=(7, 6.5), dpi=110, sharex=True)
    t = [r["params"]["Second"] for r in secs]
    axes[0].step(t, [_med(r, "Offered_qps") for r in secs], where="post", label="offered rate")
    axes[0].plot(t, [_med(r, "Received") for r in secs], "o", ms=2,
                 label="answers received that second")
    axes[0].set_ylabel("requests/s")
    axes[0].legend(fontsize=7)
    axes[1].plot(t, [_med(r, "Latency_p99_us") for r in secs], "o-", ms=2, lw=1, label="p99")
    axes[1].plot(t, [_med(r, "Latency_p50_us") for r in secs], "o-", ms=2, lw=1, label="p50")
    axes[1].axhline(KNEE_P99_US, color="0.5", ls="--", lw=0.8)
    axes[1].set_yscale("log")
    axes[1].set_ylabel("latency (µs)")
    axes[1].legend(fontsize=7)
    axes[2].plot(t, [_med(r, "Batch_size_avg") for r in secs], "o-", ms=2, lw=1)
    axes[2].set_ylabel("batch size (avg)")
    axes[2].set_xlabel("second of the schedule (warm-up first)")
    for ax in axes:
        ax.grid(True, alpha=0.3)
    axes[0].set_title("Ramp-UMAP timeline\n" + _wrap(describe(params)), fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, f"Ramp-UMAP_timeline_{tag}.png")
    fig.savefig(path)
    plt.close(fig)
    return path
