# SPDX-License-Identifier: MIT
"""Shared helpers of the tooling tests: paths and synthetic records."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(ROOT, "scripts")
FAKE = os.path.join(HERE, "fake_obl_bench.py")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
sys.path.insert(0, SCRIPTS)


def script(name, *args, env=None, cwd=None, timeout=120):
    full_env = dict(os.environ)
    full_env.pop("BENCHMARK_MODE", None)
    full_env.pop("BENCHMARK_SELECTOR", None)
    full_env.pop("OBL_PEERS", None)
    # no plug-ins unless a test gives its own: obl-bench's plan alone
    full_env["OBL_PLUGINS_DIR"] = os.path.join(HERE, "no-plugins")
    full_env.update(env or {})
    return subprocess.run([PY, os.path.join(SCRIPTS, name)] + list(args), capture_output=True,
                          text=True, env=full_env, cwd=cwd, timeout=timeout)


def record(rtype, impl, n, k=8, v=8, origin="run", **metrics):
    """A normalised record with the given medians (spread ±2 %)."""
    return {"report_type": rtype, "impl": impl, "params": {"N": n, "Key_bytes": k, "Value_bytes": v},
            "metrics": {m: {"median": x, "min": x * 0.98, "max": x * 1.02, "q1": x * 0.99,
                            "q3": x * 1.01, "reps": 5} for m, x in metrics.items()},
            "env": {}, "source": "synthetic", "origin": origin}


def write_results(path, records, noise=None):
    with open(path, "w") as f:
        json.dump({"records": records, "noise": noise, "run": None}, f)
