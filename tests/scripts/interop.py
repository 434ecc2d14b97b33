# SPDX-License-Identifier: MIT
"""The public harness's reading of a REPORT line, as its format describes it
(docs/benchmark-format.md): the text between two REPORT_123 markers, split
at '|'; the first two pieces are the type and the implementation; each
further piece is `name := value` (spaces optional around ':=') or, without
':=', free text. Used to check that obl's lines read there as they read here."""


def harness_parse_line(line):
    parts = line.split("REPORT_123")
    if len(parts) != 3:
        return None
    pieces = [p.strip() for p in parts[1].strip().split("|")]
    out = {"benchmark_type": pieces[0], "implementation": pieces[1], "extra": []}
    for piece in pieces[2:]:
        kv = [x.strip() for x in piece.split(":=")]
        if len(kv) not in (1, 2):
            raise ValueError(f"piece {piece!r} has more than one ':='")
        if len(kv) == 1:
            out["extra"].append(kv[0])
        else:
            out[kv[0]] = kv[1]
    return out
