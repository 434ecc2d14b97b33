# SPDX-License-Identifier: MIT
"""Run cases of obl-bench, one process each, and write the full-run log.

Full-run log (logs/full_runs/<timestamp>.jsonl), one JSON event per line:
  run_start     time, argv, bench_bin, plan flags, env (machine), cases, types
  case_start    index, total, name, case (the list-cases object), argv, timeout_s,
                round (1 ..; run.py --rounds runs the plan that many times)
  case_end      name, elapsed_s, records (obl-bench JSONL objects), reports
  case_failed   name, elapsed_s, reason, exit_code, signal, stderr_tail
  case_timeout  name, elapsed_s, timeout_s, reason, stderr_tail
  case_skipped  name, reason ("memory" or "selector"), message, case
  cpu_choice    mode, cpu (pinned to, or null), probe {cpu: [us, us]}, probe_args
  noise         name, metrics {m: {run1, run2, rel_diff}}, max_rel_diff
  drift         as noise, for the reference series at its largest N; or
                name and reason when it could not be measured
  run_end       time, elapsed_s, counts, failed (bool)
The repeats of the noise and drift cases are logged with "repeat": true.
"""
import datetime
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time

from . import mpi, parse, plan, procs, ramp, stats
from .procs import tail
from .inputs import ROOT

MEMORY_MARGIN = 0.9   # a case may use at most 90 % of MemAvailable
DEFAULT_TIMEOUT_FLOOR = 60.0
DEFAULT_TIMEOUT_FACTOR = 10.0
KILL_GRACE_S = 2.0


def now_iso():
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def meminfo():
    out = {}
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                name, _, rest = line.partition(":")
                parts = rest.split()
                if parts:
                    out[name] = int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1)
    except OSError:
        pass
    return out


def mem_available():
    return meminfo().get("MemAvailable")


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_isa():
    """The widest vector extension the CPU reports: the variant obl's dispatch picks."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return None
    return "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE4.2"


def cc_version():
    """The C compiler that builds obl (cc), as 'gcc 12.2' or 'clang 14.0'."""
    try:
        out = subprocess.run(["cc", "--version"], capture_output=True, text=True,
                             timeout=10).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    text = "\n".join(out)
    name = "clang" if "clang" in text else "gcc" if "Free Software Foundation" in text else "cc"
    m = re.search(r"(\d+\.\d+)(?:\.\d+)?\s*$", out[0]) if out else None
    return f"{name} {m.group(1)}" if m else None


def git_revision(root):
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return (rev + ("-dirty" if dirty else "")) if rev else None
    except (OSError, subprocess.SubprocessError):
        return None


def environment(root):
    mem = meminfo()
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "memory_kb": mem.get("MemTotal", 0) // 1024,
            "mem_available_kb": mem.get("MemAvailable", 0) // 1024,
            "kernel": platform.release(), "host": platform.node(),
            "python": platform.python_version(), "git": git_revision(root),
            "isa": cpu_isa(), "cc": cc_version()}


def bench_output(bench_bin, args, timeout=120):
    proc = subprocess.run([bench_bin] + list(args), capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{bench_bin} {' '.join(args)} failed with status {proc.returncode}: "
                           + proc.stderr.strip()[-500:])
    return proc.stdout


def list_cases(bench_bin, max_n=None, large=False):
    args = ["list-cases"]
    if max_n is not None:
        args += ["--max-n", str(max_n)]
    if large:
        args.append("--large")
    cases = []
    for number, line in enumerate(bench_output(bench_bin, args).splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError:
            raise RuntimeError(f"list-cases line {number} is not JSON: {line[:120]}") from None
        for key in ("bench", "impl", "args", "params"):
            if key not in case:
                raise RuntimeError(f"list-cases line {number} lacks {key!r}")
        # more than one thread (Threads 0: every core): not pinned to the run's
        # one CPU, where the threads would wait on each other (as a plug-in's
        # "pin": false)
        if case["params"].get("Threads", 1) != 1:
            case["pin"] = False
        cases.append(case)
    # Ramp-UMAP runs obl-server and obl-load, not an obl-bench subcommand
    return cases + ramp.cases(bench_bin, max_n, large)


def list_types(bench_bin):
    try:
        return [l for l in bench_output(bench_bin, ["list-types"]).splitlines() if l.strip()]
    except (RuntimeError, OSError, subprocess.SubprocessError):
        return []


def case_timeout(case, timeout):
    if timeout is not None:
        return float(timeout)
    est = case.get("est_seconds")
    if est is None:
        return 300.0
    return max(DEFAULT_TIMEOUT_FLOOR, DEFAULT_TIMEOUT_FACTOR * float(est))


def signal_name(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


# Repetitions of a plug-in's case when --reps is not given (one REPORT line
# each; obl-bench's own cases keep its default).
PLUGIN_DEFAULT_REPS = 3


def plugin_argv(plugin, case, reps, extra_args):
    """run.sh of a plug-in's case: TYPE k=v ... reps=R [cpu=K]."""
    argv = ["sh", plugin.script("run.sh")] + [str(a) for a in case["args"]]
    argv.append(f"reps={reps if reps is not None else PLUGIN_DEFAULT_REPS}")
    cpu = [extra_args[i + 1] for i, a in enumerate(extra_args[:-1]) if a == "--cpu"]
    return argv + ([f"cpu={cpu[-1]}"] if cpu else [])


def plugin_preexec(extra_args):
    """Pins a plug-in's process to the run's CPU (obl-bench pins itself)."""
    cpu = [extra_args[i + 1] for i, a in enumerate(extra_args[:-1]) if a == "--cpu"]
    if not cpu or not hasattr(os, "sched_setaffinity"):
        return None
    return lambda: os.sched_setaffinity(0, {int(cpu[-1])})


def unpinned(extra_args, case):
    """extra_args without --cpu K for a case that must not be pinned to one
    CPU: more than one thread (list_cases), or threads that compare with MPI
    ranks on every core (obllib/mpi.py)."""
    args = list(extra_args)
    if case.get("pin", True) or "--cpu" not in args[:-1]:
        return args
    i = args.index("--cpu")
    return args[:i] + args[i + 2:]


def case_argv(bench_bin, case, reps, extra_args, plugin, json_path):
    """The command of one case: an MPI deployment's, a plug-in's run.sh, or
    obl-bench's subcommand writing its records to json_path."""
    if case.get("driver") == mpi.DRIVER:
        return mpi.argv(bench_bin, case)
    if plugin is not None:
        return plugin_argv(plugin, case, reps, list(extra_args))
    argv = [bench_bin, case["bench"]] + [str(a) for a in case["args"]] + unpinned(
        extra_args, case)
    argv += ["--json", json_path]
    if reps is not None:
        argv += ["--reps", str(reps)]
    return argv


def wait_or_kill(proc, timeout_s):
    """Waits timeout_s for proc; then SIGTERM to its group, SIGKILL after
    KILL_GRACE_S. -> (exit code, timed out)."""
    try:
        return proc.wait(timeout=timeout_s), False
    except subprocess.TimeoutExpired:
        return procs.stop_group(proc, signal.SIGTERM, KILL_GRACE_S), True


def case_outcome(result, code, case, by_reports, json_path):
    """Fills result's outcome from a finished case's exit code and its
    records (REPORT lines when by_reports, else the JSONL file). -> result."""
    result["exit_code"] = code if code >= 0 else None
    result["signal"] = signal_name(-code) if code < 0 else None
    if code < 0:
        result.update(outcome="failed", reason=f"killed by {signal_name(-code)}")
        return result
    if code != 0:
        last = [l for l in result["stderr_tail"].splitlines() if l.strip()]
        why = f": {last[-1].strip()}" if last else ""
        result.update(outcome="failed", reason=f"exit status {code}{why}")
        return result
    if by_reports:
        records = parse.objects_from_reports(result["reports"], case["bench"])
        if not records:
            result.update(outcome="failed", reason="exit status 0 but no REPORT line")
            return result
        result.update(outcome="ok", records=records)
        return result
    records = []
    try:
        if os.path.exists(json_path):
            with open(json_path, encoding="utf-8") as f:
                records = [json.loads(l) for l in f if l.strip()]
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        result.update(outcome="failed", reason=f"unreadable JSONL output: {e}")
        return result
    if not records:
        result.update(outcome="failed", reason="exit status 0 but no JSONL record written")
        return result
    result.update(outcome="ok", records=records)
    return result


def run_case(bench_bin, case, timeout_s, reps=None, extra_args=(), plugins=None):
    """Run one case in its own process group. -> result dict. A case of a
    plug-in (case["plugin"], not obl-bench's own) runs its run.sh, and its
    REPORT lines are its records (parse.objects_from_reports)."""
    if case.get("driver") == ramp.DRIVER:
        return ramp.run_case(bench_bin, case, timeout_s, extra_args)
    plugin = (plugins or {}).get(case.get("plugin")) if not case.get("native") else None
    by_reports = plugin is not None or case.get("driver") == mpi.DRIVER  # records: REPORT lines
    with tempfile.TemporaryDirectory(prefix="obl-case-") as tmp:
        json_path = os.path.join(tmp, "case.jsonl")
        out_path, err_path = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
        argv = case_argv(bench_bin, case, reps, extra_args, plugin, json_path)
        result = {"argv": argv[1:]}
        start = time.monotonic()
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            try:
                pin = list(extra_args) if case.get("pin", True) else []
                extra = ({"env": plugin.env(ROOT, bench_bin), "cwd": plugin.dir,
                          "preexec_fn": plugin_preexec(pin)}
                         if plugin is not None else {})
                proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                        start_new_session=True, **extra)
            except OSError as e:
                result.update(outcome="failed", reason=f"cannot start: {e}", exit_code=None,
                              signal=None, elapsed_s=0.0, stderr_tail="")
                return result
            code, timed_out = wait_or_kill(proc, timeout_s)
        result["elapsed_s"] = round(time.monotonic() - start, 3)
        stdout_text = tail(out_path, 1 << 20)
        result["stderr_tail"] = tail(err_path)
        result["reports"] = [l.strip() for l in stdout_text.splitlines() if "REPORT_123" in l]
        if timed_out:
            result.update(outcome="timeout", timeout_s=timeout_s, exit_code=None,
                          signal=None, reason=f"timed out after {timeout_s:g} s (killed)")
            return result
        return case_outcome(result, code, case, by_reports, json_path)


class EventLog:
    def __init__(self, path):
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self.f = open(path, "a", encoding="utf-8")
        self.events = []

    def emit(self, event, **fields):
        ev = {"event": event, "time": now_iso()}
        ev.update(fields)
        self.events.append(ev)
        self.f.write(json.dumps(ev, sort_keys=False) + "\n")
        self.f.flush()
        return ev

    def close(self):
        self.f.close()


def fmt_s(s):
    if s < 60:
        return f"{s:.1f}s"
    return f"{int(s // 60)}m{int(s % 60):02d}s"


class Progress:
    """One line per case on stderr: [k/n] name ..., elapsed, est. remaining."""

    def __init__(self, cases, stream=sys.stderr):
        self.est = [float(c.get("est_seconds") or 1.0) for c in cases]
        self.total = len(cases)
        self.start = time.monotonic()
        self.done_est = 0.0
        self.stream = stream

    def case_done(self, k, name, status):
        self.done_est += self.est[k - 1]
        elapsed = time.monotonic() - self.start
        remaining_est = sum(self.est[k:])
        # scale the driver's estimates by how they have fared so far
        scale = elapsed / self.done_est if self.done_est > 0 else 1.0
        remaining = remaining_est * scale
        print(f"[{k}/{self.total}] {name} {status}; elapsed {fmt_s(elapsed)}, "
              f"est. remaining {fmt_s(remaining)}", file=self.stream, flush=True)


def noise_of(first, second):
    """Relative difference of the medians of two runs of one case."""
    a = {m: v["median"] for m, v in first[0]["metrics"].items()}
    b = {m: v["median"] for m, v in second[0]["metrics"].items()}
    metrics = {m: {"run1": a[m], "run2": b[m], "rel_diff": stats.rel_diff(a[m], b[m])}
               for m in a if m in b}
    timed = [m for m in metrics if m.endswith(("_us", "_qps"))] or list(metrics)
    timed.sort(key=lambda m: "latency" not in m.lower())  # ties: a latency first
    worst = max(timed, key=lambda m: metrics[m]["rel_diff"]) if timed else None
    return metrics, worst


# The probe case of choose_cpu: a small RORAM, in cache, about 0.2 s.
PROBE_ARGS = ["roram", "--n", "4096", "--key-bytes", "8", "--value-bytes", "8",
              "--reps", "3", "--queries", "20000", "--warmup", "1"]


def allowed_cpus():
    """The CPUs this process may run on, sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []


def probe_cpu(bench_bin, cpu, timeout_s=60):
    """Median read latency (us) of the probe case pinned to cpu, or None."""
    with tempfile.TemporaryDirectory(prefix="obl-probe-") as tmp:
        json_path = os.path.join(tmp, "probe.jsonl")
        argv = [bench_bin] + PROBE_ARGS + ["--cpu", str(cpu), "--json", json_path]
        try:
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           stdin=subprocess.DEVNULL, timeout=timeout_s, check=True)
            with open(json_path) as f:
                rec = json.loads(f.readline())
            return float(rec["metrics"]["Read_latency_us"]["median"])
        except (OSError, subprocess.SubprocessError, ValueError, KeyError, TypeError):
            return None


def choose_cpu(bench_bin, mode, log, stream=sys.stderr):
    """The CPU every case is pinned to (obl-bench --cpu), or None.

    mode "none": no pinning. A number: that CPU. "auto": the probe case on
    each CPU this process may use, twice in turn, and the CPU of the lowest
    median wins. On a VM the virtual CPUs need not run at one speed (this
    project's 2-vCPU VM had one a third slower than the other for minutes
    at a time, docs/bench.md), and a run moved between them mixes the
    two. The probe's numbers go to the log (event cpu_choice)."""
    if mode == "none":
        log.emit("cpu_choice", mode=mode, cpu=None)
        return None
    if mode != "auto":
        cpu = int(mode)
        log.emit("cpu_choice", mode="fixed", cpu=cpu)
        return cpu
    cpus = allowed_cpus()
    if len(cpus) < 2:
        cpu = cpus[0] if cpus else None
        log.emit("cpu_choice", mode=mode, cpu=cpu, probe={})
        return cpu
    probe = {c: [] for c in cpus}
    for _ in range(2):
        for c in cpus:
            probe[c].append(probe_cpu(bench_bin, c))
    # a CPU is judged by its slower probe (a slow phase lasts minutes: a CPU
    # slow in either probe may be slow now); one with a failed probe is out
    worst = {c: max(probe[c]) for c in cpus if all(v is not None for v in probe[c])}
    cpu = min(worst, key=lambda c: worst[c]) if worst else None
    log.emit("cpu_choice", mode=mode, cpu=cpu,
             probe={str(c): probe[c] for c in cpus}, probe_args=PROBE_ARGS)
    shown = ", ".join(f"cpu {c}: " + "/".join("-" if v is None else f"{v:.3f}" for v in probe[c])
                      for c in cpus)
    print(f"run.py: CPU probe (roram 8/8, N = 4096, us per read): {shown}; "
          f"running on cpu {cpu}" if cpu is not None else
          f"run.py: CPU probe failed ({shown}); not pinned", file=stream, flush=True)
    return cpu


def drift_case_for(cases, noise_case):
    """The noise case's series (same type, implementation and parameters but
    N) at its largest N in cases, if that N is larger; else None. Run again
    at the end, it shows how far the cases that leave the caches moved
    between their run and the end of the run (on a shared VM, far more than
    the in-cache noise case does: docs/bench.md, "Which CPU")."""
    if noise_case is None:
        return None

    def series(c):
        p = dict(c.get("params") or {})
        p.pop("N", None)
        return (c.get("bench"), c.get("impl"), tuple(sorted(p.items())))

    same = [c for c in cases if series(c) == series(noise_case)]
    top = max(same, key=lambda c: (c.get("params") or {}).get("N", 0), default=None)
    n0 = (noise_case.get("params") or {}).get("N", 0)
    if top is None or (top.get("params") or {}).get("N", 0) <= n0:
        return None
    return top


def rerun_case(bench_bin, case, first_records, log, kind, timeout, reps, extra_args, stream,
               total=None, plugins=None):
    """Run case again; emit event `kind` (noise or drift) comparing it with
    its first run. -> the event, or None if the repeat failed."""
    name = plan.case_name(case)
    t = case_timeout(case, timeout)
    log.emit("case_start", index=0, total=total, name=name, case=case, timeout_s=t, repeat=True)
    res = run_case(bench_bin, case, t, reps, extra_args, plugins)
    if res["outcome"] != "ok":
        log.emit("case_failed", name=name, elapsed_s=res["elapsed_s"], argv=res["argv"],
                 reason=res["reason"], exit_code=res.get("exit_code"),
                 signal=res.get("signal"), stderr_tail=res["stderr_tail"], repeat=True)
        print(f"{kind}: the repeat of {name} failed ({res['reason']}); {kind} not measured",
              file=stream, flush=True)
        return None
    log.emit("case_end", name=name, elapsed_s=res["elapsed_s"], argv=res["argv"],
             records=res["records"], reports=res["reports"], repeat=True)
    metrics, worst = noise_of(first_records, res["records"])
    return log.emit(kind, name=name, metrics=metrics, worst_metric=worst,
                    max_rel_diff=metrics[worst]["rel_diff"] if worst else None)


def schedule(cases, rounds):
    """The order of a run of `rounds` rounds: the whole plan once per round,
    forward in the odd rounds and backward in the even ones, so that every
    case's repetitions are spread over the run and its mean position is the
    same for every case. -> [(round, case)], rounds counted from 1."""
    out = []
    for r in range(1, rounds + 1):
        out += [(r, c) for c in (cases if r % 2 else cases[::-1])]
    return out


def run_plan(bench_bin, cases, log, timeout=None, reps=None, noise_case=None,
             extra_args=(), stream=sys.stderr, drift_case=None, rounds=1, plugins=None):
    """Run the selected cases, `rounds` times over (schedule); -> counts dict
    (of case runs). noise_case: a case to run once more at the end;
    drift_case: one more, run again after it (drift_case_for); both compare
    with their first round."""
    order = schedule(cases, rounds)
    progress = Progress([c for _, c in order], stream)
    counts = {"ok": 0, "failed": 0, "timeout": 0, "skipped": 0}
    first_noise_records = first_drift_records = None
    for k, (rnd, case) in enumerate(order, 1):
        name = plan.case_name(case)
        need, avail = case.get("est_memory_bytes"), mem_available()
        if need is not None and avail is not None and need > MEMORY_MARGIN * avail:
            msg = (f"skipped: needs an estimated {stats.fmt_bytes(need)}, only "
                   f"{stats.fmt_bytes(avail)} available (limit {int(MEMORY_MARGIN * 100)} %)")
            log.emit("case_skipped", name=name, reason="memory", message=msg, case=case,
                     est_memory_bytes=need, mem_available_bytes=avail, round=rnd)
            counts["skipped"] += 1
            progress.case_done(k, name, msg)
            continue
        t = case_timeout(case, timeout)
        log.emit("case_start", index=k, total=len(order), name=name, case=case, timeout_s=t,
                 round=rnd)
        res = run_case(bench_bin, case, t, reps, extra_args, plugins)
        common = {"name": name, "elapsed_s": res["elapsed_s"], "argv": res["argv"]}
        if res["outcome"] == "ok":
            log.emit("case_end", records=res["records"], reports=res["reports"],
                     stderr_tail=res["stderr_tail"][-500:], **common)
            counts["ok"] += 1
            status = f"ok in {fmt_s(res['elapsed_s'])}"
            if (noise_case is not None and first_noise_records is None
                    and plan.case_identity(case) == plan.case_identity(noise_case)):
                first_noise_records = res["records"]
            if (drift_case is not None and first_drift_records is None
                    and plan.case_identity(case) == plan.case_identity(drift_case)):
                first_drift_records = res["records"]
        elif res["outcome"] == "timeout":
            log.emit("case_timeout", timeout_s=t, reason=res["reason"],
                     stderr_tail=res["stderr_tail"], **common)
            counts["timeout"] += 1
            status = f"TIMEOUT ({res['reason']})"
        else:
            log.emit("case_failed", reason=res["reason"], exit_code=res.get("exit_code"),
                     signal=res.get("signal"), stderr_tail=res["stderr_tail"], **common)
            counts["failed"] += 1
            status = f"FAILED ({res['reason']})"
        progress.case_done(k, name, status)
    noise = None
    if first_noise_records:
        noise = rerun_case(bench_bin, noise_case, first_noise_records, log, "noise", timeout,
                           reps, extra_args, stream, len(cases), plugins)
        if noise:
            print(noise_line(noise), file=stream, flush=True)
    if first_drift_records:
        drift = rerun_case(bench_bin, drift_case, first_drift_records, log, "drift", timeout,
                           reps, extra_args, stream, len(cases), plugins)
        if drift:
            print(drift_line(drift), file=stream, flush=True)
    elif drift_case is not None:
        name = plan.case_name(drift_case)
        drift = log.emit("drift", name=name, reason="its first run did not complete")
        print(drift_line(drift), file=stream, flush=True)
    return counts, noise


def drift_line(drift):
    if not drift or not drift.get("worst_metric"):
        why = f" ({drift['name']}: {drift['reason']})" if drift and drift.get("reason") else ""
        return f"drift: not measured{why}"
    w = drift["worst_metric"]
    lat = {m: v for m, v in drift["metrics"].items() if m.endswith("_us")}
    parts = ", ".join(f"{m} {stats.fmt(v['run1'])} -> {stats.fmt(v['run2'])}"
                      for m, v in lat.items())
    return (f"drift: {drift['name']} (the reference series at its largest N) run again at "
            f"the end; its medians moved up to {stats.fmt(drift['max_rel_diff'] * 100, 2)} % "
            f"({w}): {parts}. Cells of that size can differ by as much between runs.")


def noise_line(noise):
    if not noise or not noise.get("worst_metric"):
        return "noise: not measured"
    parts = ", ".join(f"{m} {stats.fmt(v['rel_diff'] * 100, 2)} %"
                      for m, v in noise["metrics"].items())
    w = noise["worst_metric"]
    return (f"noise: reference case {noise['name']} run twice; relative difference of the "
            f"medians up to {stats.fmt(noise['max_rel_diff'] * 100, 2)} % ({w}); {parts}. "
            f"Differences smaller than this are not resolved by a single run.")
