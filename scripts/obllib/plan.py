# SPDX-License-Identifier: MIT
"""Cases, case names and editable case lists.

A case is one object of `obl-bench list-cases`:
  {"bench", "report_type", "impl", "args", "params", "est_memory_bytes", "est_seconds"}
Its identity is (bench, impl, params); its name is "bench:impl:k=v,k=v".

Case list (cases.txt), one case per line, fields separated by tabs or spaces:
  <action> <bench> <impl> <k=v,k=v,...>   [# comment]
action: run or yes (the case runs), skip or no (it does not). A line that is
a case entry commented out with '#' is skipped; any other line starting
with '#' is a comment. Cases of the plan that the list does not mention are
skipped with a warning, as in the public harness.
"""
import ast
import re

from .parse import parse_value

RUN_ACTIONS = {"run", "yes"}
SKIP_ACTIONS = {"skip", "no"}
ACTIONS = RUN_ACTIONS | SKIP_ACTIONS


def params_text(params):
    return ",".join(f"{k}={v}" for k, v in params.items())


def parse_params(text):
    out = {}
    for part in text.split(","):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"bad parameter {part!r} (expected key=value)")
        if key in out:
            raise ValueError(f"duplicate parameter {key!r}")
        out[key] = parse_value(value)
    return out


def identity(bench, impl, params):
    return (bench, impl, tuple(sorted((k, repr(parse_value(str(v)))) for k, v in params.items())))


def case_identity(case):
    return identity(case["bench"], case["impl"], case["params"])


def case_name(case):
    return f"{case['bench']}:{case['impl']}:{params_text(case['params'])}"


def case_comment(case):
    bits = [case.get("report_type", "")]
    if case.get("est_memory_bytes") is not None:
        from .stats import fmt_bytes
        bits.append(f"est. {fmt_bytes(case['est_memory_bytes'])}")
    if case.get("est_seconds") is not None:
        bits.append(f"{case['est_seconds']:.1f} s")
    return ", ".join(b for b in bits if b)


def format_line(action, case, comment=None):
    comment = case_comment(case) if comment is None else comment
    line = f"{action}\t{case['bench']}\t{case['impl']}\t{params_text(case['params'])}"
    return line + (f"\t# {comment}" if comment else "")


HEADER = """\
# obl benchmark case list: one case per line
#   <action> <bench> <impl> <params>   [# comment]
# action: run/yes runs the case, skip/no does not; commenting a line out skips it.
# Run the selection with: BENCHMARK_SELECTOR=<this file> scripts/run.py
# Bulk edit with:         scripts/edit_cases.py <this file> '<expression>' --in-place
"""


def format_case_list(entries, header=HEADER, extra_header=""):
    """entries: iterable of (action, case[, comment])."""
    lines = [header.rstrip("\n")]
    if extra_header:
        lines += ["# " + h for h in extra_header.splitlines()]
    for entry in entries:
        lines.append(format_line(*entry))
    return "\n".join(lines) + "\n"


def parse_line(line):
    """-> (action, bench, impl, params, commented) or None for no entry.

    Raises ValueError for a line that is neither a comment nor an entry."""
    body = line.strip()
    if not body:
        return None
    commented = body.startswith("#")
    if commented:
        body = body.lstrip("#").strip()
    code, _, _comment = body.partition("#")
    fields = code.split()
    try:
        if len(fields) != 4 or fields[0] not in ACTIONS:
            raise ValueError("expected: <run|yes|skip|no> <bench> <impl> <k=v,...>")
        params = parse_params(fields[3])
    except ValueError:
        if commented:
            return None  # an ordinary comment
        raise
    return fields[0], fields[1], fields[2], params, commented


def parse_case_list(text):
    """-> list of entries {line, action, bench, impl, params, run} in file order."""
    entries, seen = [], {}
    for number, line in enumerate(text.split("\n"), 1):
        try:
            parsed = parse_line(line)
        except ValueError as e:
            raise ValueError(f"case list line {number}: {e}") from None
        if parsed is None:
            continue
        action, bench, impl, params, commented = parsed
        key = identity(bench, impl, params)
        if key in seen:
            raise ValueError(f"case list line {number}: duplicate of line {seen[key]}")
        seen[key] = number
        entries.append({"line": number, "action": action, "bench": bench, "impl": impl,
                        "params": params,
                        "run": action in RUN_ACTIONS and not commented})
    return entries


def selection(text):
    """identity -> True (run) / False (skip)."""
    return {identity(e["bench"], e["impl"], e["params"]): e["run"]
            for e in parse_case_list(text)}


# ---- bulk edit -------------------------------------------------------------

_ALLOWED = (ast.Expression, ast.Constant, ast.Name, ast.Load, ast.BoolOp, ast.And,
            ast.Or, ast.UnaryOp, ast.Not, ast.UAdd, ast.USub, ast.BinOp, ast.Add,
            ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.LShift,
            ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor, ast.Compare, ast.Eq,
            ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In,
            ast.NotIn, ast.List, ast.Tuple, ast.Set, ast.IfExp)


def compile_expression(expression, known):
    """Compile a predicate over case fields; only plain expressions are allowed."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as e:
        raise ValueError(f"invalid expression: {e.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"unsupported syntax in expression: {type(node).__name__}")
        if isinstance(node, ast.Name) and node.id not in known and node.id not in ("True", "False", "None"):
            raise ValueError(f"unknown field {node.id!r}; fields in this list: "
                             + ", ".join(sorted(known)))
    return compile(tree, "<case expression>", "eval")


def entry_fields(entry):
    fields = {"bench": entry["bench"], "impl": entry["impl"],
              "name": f"{entry['bench']}:{entry['impl']}:{params_text(entry['params'])}"}
    fields.update(entry["params"])
    return fields


EDIT_MODES = ("skip", "run", "select", "comment")


def _set_action(line, action):
    body = line.lstrip()
    indent = line[:len(line) - len(body)]
    if body.startswith("#"):
        body = body.lstrip("#").lstrip()
    fields = re.split(r"(\s+)", body, maxsplit=1)
    rest = fields[1] + fields[2] if len(fields) == 3 else ""
    return indent + action + rest


def edit_case_list(text, expression, mode="skip"):
    """Apply a predicate to every case entry.

    mode skip:    matching cases -> skip, others unchanged (the default, as the
                  public harness's edit_cases.py)
    mode run:     matching cases -> run, others unchanged
    mode select:  matching cases -> run, all others -> skip
    mode comment: matching cases are commented out (skipped)
    A field that some case of the list has but this one lacks is None; a
    field no case has is an error (catches typos). Returns
    (new_text, total, matched, changed)."""
    if mode not in EDIT_MODES:
        raise ValueError(f"mode must be one of {EDIT_MODES}")
    entries = parse_case_list(text)
    known = {"bench", "impl", "name"}
    for e in entries:
        known.update(e["params"])
    code = compile_expression(expression, known)
    lines = text.split("\n")
    matched = changed = 0
    for e in entries:
        fields = dict.fromkeys(known)
        fields.update(entry_fields(e))
        try:
            result = eval(code, {"__builtins__": {}}, fields)
        except Exception as exc:  # noqa: BLE001 - reported with the line
            raise ValueError(f"line {e['line']}: {type(exc).__name__}: {exc}") from None
        if not isinstance(result, bool):
            raise ValueError(f"line {e['line']}: expression gave {result!r}, not True/False")
        old = lines[e["line"] - 1]
        if result:
            matched += 1
        if mode == "comment":
            new = old if not result or old.lstrip().startswith("#") else "# " + old
        elif mode == "skip":
            new = _set_action(old, "skip") if result else old
        elif mode == "run":
            new = _set_action(old, "run") if result else old
        else:
            new = _set_action(old, "run" if result else "skip")
        changed += new != old
        lines[e["line"] - 1] = new
    return "\n".join(lines), len(entries), matched, changed
