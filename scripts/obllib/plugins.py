# SPDX-License-Identifier: MIT
"""Implementations as plug-ins: benchmark/<name>/ (docs/suite.md, "Plug-ins").

A plug-in is a directory with
  manifest.json  {"name", "kind": "obl" | "baseline" | "peer", "description",
                  "source_env" (peers: the variable naming a local source tree),
                  "cases": [case groups], or "plan": "obl-bench" with
                  "impls": [fnmatch patterns] (cases from obl-bench list-cases)}
  setup.sh       fetch or locate the sources; exit 0 when ready, else non-zero
                 with the reason on the last line of its output
  build.sh       build; exit 0 when the plug-in can run
  run.sh TYPE k=v ...   run one case, print REPORT lines on stdout
A case group: {"type": "RORAM", "impl": "olabs_oram", "N": "2^10..2^20" or
[list], any other parameter as a list ("Key_bytes": [8], "Shards": [15];
the value "cores" is the machine's online CPUs, at most 64, as obl-bench's
plan sets its balancer's Threads),
"args": {run-control k=v, not part of the case's identity}, "est_us_per_op":
rough microseconds per timed operation, "ops": timed operations,
"est_us_per_entry": rough build microseconds per entry}: the case's
estimate, and so its default timeout (10 x, at least 60 s); "pin": false for
a multi-threaded implementation (not pinned to the run's one CPU, where its
threads would wait on each other; implied by a Threads parameter other than 1).
The scripts run with OBL_ROOT (the repository), OBL_PLUGIN_WORK (its build
directory, build/plugins/<name>/, or $OBL_PLUGINS_WORK/<name>) and OBL_BENCH
(obl-bench) set.
"""
import fnmatch
import json
import os
import subprocess

from .parse import parse_value

SCRIPTS = ("setup.sh", "build.sh", "run.sh")
# Benchmark subcommand names of the harness's types, for case names.
BENCH_OF_TYPE = {"NRORAM": "nroram", "RORAM": "roram", "UnorderedMap": "umap",
                 "LOADBALANCE": "lb"}
SETUP_TIMEOUT_S = 1800
# Keys of a manifest's case group that are not parameters of its cases.
GROUP_KEYS = ("type", "impl", "args", "est_us_per_op", "est_us_per_entry", "ops", "N", "B",
              "pin")
# Repetitions a plug-in case's estimate assumes (runner.PLUGIN_DEFAULT_REPS).
PLUGIN_EST_REPS = 3


class Plugin:
    def __init__(self, directory, manifest):
        self.dir = directory
        self.manifest = manifest
        self.name = manifest["name"]
        self.kind = manifest.get("kind", "peer")

    def script(self, which):
        return os.path.join(self.dir, which)

    def env(self, root, bench_bin=None):
        env = dict(os.environ)
        env["OBL_ROOT"] = root
        work_root = os.environ.get("OBL_PLUGINS_WORK") or os.path.join(root, "build", "plugins")
        env["OBL_PLUGIN_WORK"] = os.path.join(work_root, self.name)
        if bench_bin:
            env["OBL_BENCH"] = bench_bin
        return env


def discover(plugins_dir):
    """Plug-ins under plugins_dir, sorted by name; a directory without a
    valid manifest or a script raises ValueError (a broken plug-in must not
    vanish silently)."""
    out = []
    if not os.path.isdir(plugins_dir):
        return out
    for name in sorted(os.listdir(plugins_dir)):
        d = os.path.join(plugins_dir, name)
        path = os.path.join(d, "manifest.json")
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                manifest = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: {e}") from None
        if manifest.get("name") != name:
            raise ValueError(f"{path}: name must be {name!r}")
        missing = [s for s in SCRIPTS if not os.path.isfile(os.path.join(d, s))]
        if missing:
            raise ValueError(f"plug-in {name}: missing {', '.join(missing)}")
        out.append(Plugin(d, manifest))
    return out


def wanted(plugin, peers):
    """peers: None (every peer), or a set of peer names ({"none"}: no peer).
    -> None if the plug-in runs, else why not."""
    if plugin.kind != "peer" or peers is None:
        return None
    if plugin.name in peers:
        return None
    return "not in OBL_PEERS"


def peers_from_env(value):
    if value is None or value.strip() in ("", "all"):
        return None
    return {p.strip() for p in value.split(",") if p.strip()}


def _last_line(text):
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    return lines[-1] if lines else ""


def prepare(plugin, root, bench_bin=None, stream=None):
    """setup.sh then build.sh. -> None when ready, else the reason."""
    env = plugin.env(root, bench_bin)
    os.makedirs(env["OBL_PLUGIN_WORK"], exist_ok=True)
    for which in ("setup.sh", "build.sh"):
        log_path = os.path.join(env["OBL_PLUGIN_WORK"], which.replace(".sh", ".log"))
        try:
            with open(log_path, "w", encoding="utf-8") as logf:
                proc = subprocess.run(["sh", plugin.script(which)], env=env, cwd=plugin.dir,
                                      stdout=logf, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, timeout=SETUP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"{which} timed out after {SETUP_TIMEOUT_S} s (log {log_path})"
        except OSError as e:
            return f"{which} could not start: {e}"
        if proc.returncode != 0:
            with open(log_path, encoding="utf-8", errors="replace") as f:
                why = _last_line(f.read()) or f"exit status {proc.returncode}"
            return f"{which} failed: {why} (log {os.path.relpath(log_path, root)})"
    return None


def expand_n(spec, max_n):
    if isinstance(spec, list):
        ns = [parse_value(str(v)) for v in spec]
    else:
        lo, _, hi = str(spec).partition("..")
        lo, hi = parse_value(lo), parse_value(hi or lo)
        ns, n = [], lo
        while n <= hi:
            ns.append(n)
            n *= 2
    return [n for n in ns if max_n is None or n <= max_n]


def _value(v):
    """A manifest parameter value; "cores": the online CPUs, at most 64."""
    return min(os.cpu_count() or 1, 64) if v == "cores" else v


def _product(lists):
    out = [{}]
    for key, values in lists:
        out = [dict(o, **{key: v}) for o in out for v in values]
    return out


def manifest_cases(plugin, max_n=None):
    """The plug-in's cases from its manifest's case groups."""
    cases = []
    for group in plugin.manifest.get("cases", []):
        rtype, impl = group["type"], group.get("impl", plugin.name)
        row_key = "N" if "N" in group else "B"
        rows = expand_n(group[row_key], max_n)
        fixed = [(k, [_value(x) for x in (v if isinstance(v, list) else [v])])
                 for k, v in group.items() if k not in GROUP_KEYS]
        for params0 in _product(fixed):
            for n in rows:
                params = {row_key: n}
                params.update(params0)
                run_args = dict(group.get("args", {}))
                ops = float(group.get("ops", run_args.get("queries", 10000)))
                per_rep = (ops * float(group.get("est_us_per_op", 10))
                           + n * float(group.get("est_us_per_entry", 2))) * 1e-6
                est = 1.0 + PLUGIN_EST_REPS * per_rep
                args = [rtype] + [f"{k}={v}" for k, v in params.items()]
                args += [f"{k}={v}" for k, v in run_args.items()]
                case = {"bench": BENCH_OF_TYPE.get(rtype, rtype.lower()),
                        "report_type": rtype, "impl": impl, "plugin": plugin.name,
                        "args": args, "params": params,
                        "est_memory_bytes": None, "est_seconds": round(est, 1)}
                if group.get("pin") is False or params.get("Threads", 1) != 1:
                    case["pin"] = False  # as obl-bench's cases (runner.list_cases)
                cases.append(case)
    return cases


def claims(plugin, impl):
    return any(fnmatch.fnmatch(impl, pat) for pat in plugin.manifest.get("impls", []))


def assign_bench_cases(plugins, bench_cases):
    """obl-bench's cases -> {plugin name: [cases]} for the plug-ins whose plan
    is obl-bench (first match by impl pattern; the rest to the one with
    "fallback": true)."""
    native = [p for p in plugins if p.manifest.get("plan") == "obl-bench"]
    fallback = next((p for p in native if p.manifest.get("fallback")), None)
    out = {p.name: [] for p in native}
    for c in bench_cases:
        owner = next((p for p in native if claims(p, c["impl"])), fallback)
        if owner is not None:
            out[owner.name].append(dict(c, plugin=owner.name, native=True))
    return out
