# SPDX-License-Identifier: MIT
"""Symbol hygiene of the production library (libobl.a and libobl.so).

    check_symbols.py [--negative] LIBOBL_A LIBOBL_SO INCLUDE_DIR

Fails (exit 1, one line per finding) when
- a global symbol defined by libobl.a, or exported by libobl.so, lacks the
  obl_ prefix (it could clash with the caller's names);
- the library holds writable data: a symbol in a writable section (.data,
  .bss, thread-local), relocated constants (.data.rel.ro) excepted; in the
  shared library the toolchain's own (crt files, libgcc's CPU-model cache)
  are known by name, and the library's CPU facts (written once at load);
- a function that a public header declares is not exported (a header that
  lost its OBL_API_BEGIN / OBL_API_END, include/obl/obl.h).
Prints the counts it checked, so that a run that checked nothing shows.
--negative (the control, given the test build's archive, which has test
switches and unprefixed internals): exit 0 only if both kinds of finding
show up in the archive, so the check is seen to fail where it must.
"""
import os
import re
import subprocess
import sys
import tempfile

# Writable data the toolchain links into every shared library: crtbeginS.o
# (completed.0, __dso_handle, __TMC_END__) and libgcc's cpuinfo.o, which
# __builtin_cpu_supports reads (__cpu_model, __cpu_features2).
TOOLCHAIN_DATA = {"completed.0", "__dso_handle", "__TMC_END__", "__cpu_model",
                  "__cpu_features2"}
# The library's own: the CPU facts (src/common/cpu.c), written once by a
# load-time constructor before any thread exists, like libgcc's cache above.
LIBRARY_DATA = {"cpu_cached"}


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def defined_globals(path, dynamic):
    """(type letter, name) of every defined global symbol."""
    out = run("nm", "--defined-only", "-g", *(["-D"] if dynamic else []), path)
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3:
            syms.append((f[1], f[2]))
    return syms


def writable_sections(obj):
    """{section index: name} of the object's writable, mutable data sections."""
    secs = {}
    for line in run("readelf", "-SW", obj).splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+\S+\s+\S+\s+(\S+)\s+\S+\s+(\S*)", line)
        if not m:
            continue
        idx, name, _typ, size, flags = m.groups()
        if "W" not in flags or "A" not in flags:
            continue
        if name.startswith(".data.rel.ro"):
            continue
        if re.match(r"\.(data|bss|tdata|tbss)(\.|$)", name) or name.startswith(".gnu.linkonce.d"):
            secs[int(idx)] = (name, int(size, 16))
    return secs


def writable_symbols(obj):
    """(section, symbol, size) of every data symbol in a writable section."""
    secs = writable_sections(obj)
    found = []
    for line in run("readelf", "-sW", obj).splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":"):
            continue
        kind, ndx, name = f[3], f[6], f[7]
        if f[3] in ("SECTION", "FILE") or not ndx.isdigit():
            if ndx == "COM":
                found.append(("COMMON", name, f[2]))
            continue
        if int(ndx) in secs and kind in ("OBJECT", "TLS", "NOTYPE"):
            found.append((secs[int(ndx)][0], name, f[2]))
    return found, secs


def header_functions(include_dir):
    names = set()
    for root, _dirs, files in os.walk(include_dir):
        for fn in files:
            if not fn.endswith(".h"):
                continue
            text = open(os.path.join(root, fn), encoding="utf-8").read()
            text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
            text = re.sub(r"//[^\n]*", " ", text)
            inline = set(re.findall(r"static\s+inline[^;{(]*\b(obl_\w+)\s*\(", text))
            names |= set(re.findall(r"\b(obl_\w+)\s*\(", text)) - inline
    return names


def main(argv):
    negative = argv[1:2] == ["--negative"]
    if negative:
        argv = argv[:1] + argv[2:]
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    lib_a, lib_so, include_dir = argv[1:]
    bad = []
    a_syms = defined_globals(lib_a, False)
    so_syms = defined_globals(lib_so, True)
    for where, syms in ((os.path.basename(lib_a), a_syms), (os.path.basename(lib_so), so_syms)):
        for typ, name in syms:
            if not name.startswith("obl_"):
                bad.append(f"{where}: global symbol without the obl_ prefix: {typ} {name}")
            if typ in "DBGSV":
                bad.append(f"{where}: global writable data: {typ} {name}")
    nobj = 0
    with tempfile.TemporaryDirectory() as tmp:
        run("ar", "x", "--output", tmp, os.path.abspath(lib_a))
        for obj in sorted(os.listdir(tmp)):
            nobj += 1
            found, secs = writable_symbols(os.path.join(tmp, obj))
            for sec, name, size in found:
                if name not in LIBRARY_DATA:
                    bad.append(f"{os.path.basename(lib_a)}({obj}): writable data in {sec}: {name} ({size} bytes)")
            for idx, (name, size) in secs.items():
                if size and not any(s == name for s, _n, _z in found):
                    bad.append(f"{os.path.basename(lib_a)}({obj}): {size} bytes of writable data in {name}")
    found, _secs = writable_symbols(lib_so)
    for sec, name, size in found:
        if name not in TOOLCHAIN_DATA | LIBRARY_DATA and not (size == "0" and name.startswith("_")):
            bad.append(f"libobl.so: writable data in {sec}: {name} ({size} bytes)")
    exported = {name for _t, name in so_syms}
    declared = header_functions(include_dir)
    for name in sorted(declared - exported):
        bad.append(f"libobl.so: {name} is declared in {include_dir} but not exported")
    print(f"check_symbols: {os.path.basename(lib_a)} defines {len(a_syms)} globals in {nobj} object(s), "
          f"libobl.so exports {len(so_syms)}, the headers declare {len(declared)} functions")
    for line in bad:
        print(line)
    if not a_syms or not so_syms or not declared or nobj == 0:
        print("check_symbols: nothing to check (wrong paths?)")
        return 1
    if negative:
        prefix = any("without the obl_ prefix" in b for b in bad)
        data = any("writable data" in b for b in bad)
        print(f"check_symbols --negative: prefix findings {prefix}, writable-data findings {data}")
        return 0 if prefix and data else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
