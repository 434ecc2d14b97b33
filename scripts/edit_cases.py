#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Bulk-edit a case list with a Python expression over each case's fields.

  scripts/edit_cases.py cases.txt 'N >= 2**20 and Value_bytes != 8' --in-place
  scripts/edit_cases.py cases.txt 'bench == "roram"' --select > roram-only.txt

Modes for the cases the expression matches:
  --skip     (default, as the public harness) matching cases become skip;
             the others are left as they are
  --run      matching cases become run; the others are left as they are
  --select   matching cases become run and every other case becomes skip
  --comment  matching cases are commented out (which also skips them)

Fields: bench, impl, name ("bench:impl:params") and every parameter of the
case (N, Key_bytes, Value_bytes, type-specific ones). A parameter that other
cases of the list have but this one lacks is None; a name no case has is an
error. Allowed: literals, comparisons, arithmetic, and/or/not, in, if-else.
Without --in-place the edited list goes to stdout; --in-place validates
everything first and then replaces the file atomically.
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from obllib import plan  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("case_list")
    p.add_argument("expression")
    mode = p.add_mutually_exclusive_group()
    for m in plan.EDIT_MODES:
        mode.add_argument(f"--{m}", dest="mode", action="store_const", const=m)
    p.add_argument("--in-place", action="store_true", help="replace the file instead of printing")
    args = p.parse_args(argv)
    mode_name = args.mode or "skip"
    path = os.path.realpath(args.case_list)
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    new, total, matched, changed = plan.edit_case_list(text, args.expression, mode_name)
    if args.in_place:
        if new != text:
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".cases.")
            try:
                with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
                    f.write(new)
                os.chmod(tmp, os.stat(path).st_mode & 0o7777)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
    else:
        sys.stdout.write(new)
    print(f"edit_cases: {matched}/{total} cases matched; {changed} lines changed ({mode_name})",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError) as e:
        print(f"edit_cases: error: {e}", file=sys.stderr)
        sys.exit(1)
