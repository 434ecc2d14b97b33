#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/spdx.sh on a scratch repository: --check fails and names the
# files without the licence line; a stamp adds it once (after a #! line,
# in the file's comment syntax, the mode kept); a second stamp changes
# nothing; then --check passes. Files outside its patterns stay untouched.
#   check_spdx_script.sh SOURCE_DIR WORK_DIR
set -eu
src=$1 work=$2
rm -rf "$work"
mkdir -p "$work/scripts" "$work/src" "$work/tests"
cp "$src/scripts/spdx.sh" "$work/scripts/"
cd "$work"
fail() { echo "check_spdx_script: FAIL: $*" >&2; exit 1; }
git init -q .
printf 'int x;\n' > src/a.c
printf '#!/bin/sh\necho hi\n' > tests/t.sh
chmod +x tests/t.sh
printf 'import os\n' > tests/t.py
printf 'add_test(x)\n' > tests/CMakeLists.txt
printf 'plain text\n' > src/notes.txt
printf '/* SPDX-License-Identifier: MIT */\nint y;\n' > src/b.h
git add -A
if sh scripts/spdx.sh --check > check.out; then fail "--check passed on unstamped files"; fi
for f in src/a.c tests/t.sh tests/t.py tests/CMakeLists.txt; do
  grep -q "$f" check.out || fail "--check did not name $f"
done
! grep -q "src/b.h\|notes.txt" check.out || fail "--check named a stamped or unrelated file"
sh scripts/spdx.sh
[ "$(head -n 1 src/a.c)" = "/* SPDX-License-Identifier: MIT */" ] || fail "a.c: $(head -n 1 src/a.c)"
[ "$(sed -n 2p tests/t.sh)" = "# SPDX-License-Identifier: MIT" ] || fail "t.sh: line 2 $(sed -n 2p tests/t.sh)"
[ "$(head -n 1 tests/t.sh)" = "#!/bin/sh" ] || fail "t.sh lost its #! line"
[ -x tests/t.sh ] || fail "t.sh lost its mode"
[ "$(head -n 1 tests/CMakeLists.txt)" = "# SPDX-License-Identifier: MIT" ] || fail "CMakeLists.txt"
[ "$(cat src/notes.txt)" = "plain text" ] || fail "notes.txt was changed"
tar cf before.tar src tests
sh scripts/spdx.sh
tar cf after.tar src tests
cmp -s before.tar after.tar || fail "a second stamp changed files"
[ "$(grep -c SPDX src/b.h)" = 1 ] || fail "b.h stamped twice"
sh scripts/spdx.sh --check >/dev/null || fail "--check fails after the stamp"
echo "check_spdx_script: pass"
