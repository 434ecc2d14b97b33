# SPDX-License-Identifier: MIT
"""What the suite's runners (runner.py, ramp.py) do with the processes they
start: stop a process group, read the tail of an output file."""
import os
import signal
import subprocess


def stop_group(proc, sig=signal.SIGTERM, grace=15.0, pid=None):
    """Signals the process group (or only pid: rank 0 of an MPI deployment,
    which then stops the others; mpirun would kill every rank on SIGTERM),
    waits grace seconds, kills the group if needed; -> exit code."""
    if proc.poll() is None:
        try:
            if pid is not None:
                os.kill(pid, sig)
            else:
                os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode


def tail(path, limit=2000):
    """The last limit bytes of the file, as text ("" if it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
