# SPDX-License-Identifier: MIT
"""Lines of code per structure, counted from the source tree.

Counting rule (the same for every module, applied by a small C scanner):
  * Blank lines and lines holding only comments are not counted.
  * definition: lines of struct, union and enum definitions and typedefs,
    and every other line of a header (.h), except the bodies of functions
    defined in headers (static inline), which are algorithm.
  * algorithm: lines of function bodies (the signature line through the
    closing brace), in .c and .h files.
  * other: the remaining lines of .c files: #include and other preprocessor
    lines outside functions, prototypes, static tables and initialisers.
Modules: src/<dir>/ is the module <dir>; src/<file> is the module named by
the file's stem; include/obl/<name>.h belongs to the module <name> (the
public definition); baselines/<file> is the module baseline_<stem>. Tests,
benchmarks and scripts are not counted.
"""
import os
import re

STRUCT_RE = re.compile(r"\b(struct|union|enum)\b")
FUNC_HEAD_RE = re.compile(r"\)\s*(__attribute__\s*\(\(.*\)\)\s*)*$", re.S)


def strip_comments(text):
    """Comments -> spaces and string/char literals -> "", newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)  # keep a token so the line counts as code
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def classify(text, header=False):
    """-> list with one entry per line: "def", "alg", "other" or None."""
    lines = strip_comments(text).split("\n")
    cats = [None] * len(lines)
    stack = []            # kinds of open blocks
    pending, head = [], ""  # depth-0 lines of the statement being read
    in_directive = False
    for idx, line in enumerate(lines):
        code = line.strip()
        if not code:
            in_directive = False
            continue
        if in_directive or (code.startswith("#") and not stack):
            cats[idx] = stack[0] if stack else ("def" if header else "other")
            in_directive = code.endswith("\\")
            continue
        if code.startswith("#"):
            cats[idx] = stack[0]
            in_directive = code.endswith("\\")
            continue
        line_kind = stack[0] if stack else None
        if not stack:
            pending.append(idx)
        for ch in line:
            if ch == "{":
                if not stack:
                    if STRUCT_RE.search(head) and not FUNC_HEAD_RE.search(head.strip()):
                        kind = "def"
                    elif FUNC_HEAD_RE.search(head.strip()):
                        kind = "alg"
                    else:
                        kind = "def" if header else "other"
                    for p in pending:
                        cats[p] = kind
                    pending, head = [], ""
                    line_kind = kind
                stack.append(stack[0] if stack else line_kind)
            elif ch == "}":
                if stack:
                    stack.pop()
            elif ch == ";" and not stack:
                kind = "def" if header or re.match(r"\s*typedef\b", head) else "other"
                for p in pending:
                    cats[p] = cats[p] or kind
                pending, head = [], ""
            elif not stack:
                head += ch
        if not stack:
            head += " "
        if line_kind is not None and cats[idx] is None:
            cats[idx] = line_kind
    for p in pending:
        cats[p] = cats[p] or ("def" if header else "other")
    return cats


def module_of(rel):
    parts = rel.split("/")
    stem = os.path.splitext(parts[-1])[0]
    if parts[0] == "src":
        return parts[1] if len(parts) > 2 else stem
    if parts[:2] == ["include", "obl"]:
        return stem
    if parts[0] == "baselines":
        return stem if stem.startswith("baseline") else f"baseline_{stem}"
    return None


def count_tree(root):
    """-> {module: {"def", "alg", "other", "files"}}"""
    out = {}
    for top in ("src", "include/obl", "baselines"):
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames.sort()
            for fn in sorted(filenames):
                if not fn.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                mod = module_of(rel)
                if mod is None:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    cats = classify(f.read(), header=fn.endswith(".h"))
                slot = out.setdefault(mod, {"def": 0, "alg": 0, "other": 0, "files": 0})
                slot["files"] += 1
                for c in cats:
                    if c:
                        slot[c] += 1
    return out


def loc_table(root):
    from .tables import Table
    counts = count_tree(root)
    if not counts:
        return None
    rows = []
    for mod in sorted(counts):
        c = counts[mod]
        rows.append([mod, str(c["def"]), str(c["alg"]), str(c["other"]),
                     str(c["def"] + c["alg"] + c["other"]), str(c["files"])])
    note = ("Counted by scripts/obllib/loc.py from the source tree: blank and comment-only "
            "lines excluded; definition = headers and struct/union/enum/typedef lines; "
            "algorithm = function bodies (static inline ones in headers included); other = "
            "the rest of the .c files (includes, prototypes, tables). Tests and benchmarks "
            "are not counted. See docs/suite.md.")
    return Table("LOC", "Lines of code", "", "Lines of code per structure",
                 ["Module", "Definition", "Algorithm", "Other", "Total", "Files"], rows, note)
