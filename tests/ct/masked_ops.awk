# Scanner of the masked-operand audit (masked_ops.sh): reads an objdump -d
# listing twice (awk -f masked_ops.awk LISTING LISTING) and prints, once
# per instruction, the function of every instruction with a {%kN} mask on
# an instruction with a memory operand (other than %rip-relative), unless
# kN is known to hold all ones there.
# kN is known all ones from a `kxnor kA,kA,kN` (both sources the same
# register) until anything writes kN (any instruction whose last operand
# is kN, masked or not, comments ignored; a scatter or gather, which clears
# its mask), a branch, call or return, or a jump target: the knowledge
# never crosses a basic block boundary.
# With -v detail=1 it prints `function:mnemonic:load` or
# `function:mnemonic:store` instead (store: the memory operand is the
# destination, the last operand), so that an allowlist can name the kind
# of masked operand a function may have, not only the function.
# Pass 1 collects the jump targets of each object file of the listing
# (numbered in order: an archive may hold two members of one name).
FNR == 1 { nobj = 0 }
/file format/ { obj = ++nobj; next }
NR == FNR {
  if (match($0, /\t(j[a-z]+|call[a-z]*|loop[a-z]*) +[0-9a-f]+ </)) {
    t = substr($0, RSTART, RLENGTH)
    sub(/^\t[a-z]+ +/, "", t)
    sub(/ <$/, "", t)
    target[obj SUBSEP t] = 1
  }
  next
}
/^[0-9a-f]+ <[^>]*>:$/ { fn = $2; gsub(/[<>:]/, "", fn); split("", ones); next }
/^ *[0-9a-f]+:\t/ {
  addr = $1
  sub(/:$/, "", addr)
  if ((obj SUBSEP addr) in target)
    split("", ones)
  line = $0
  sub(/#.*/, "", line)
  sub(/[ \t]+$/, "", line)
  if (match(line, /kxnor[bwdq] +%k[0-7],%k[0-7],%k[0-7]$/)) {
    n = split(substr(line, RSTART, RLENGTH), a, /[ ,]+/)
    if (a[n - 2] == a[n - 1]) { ones[a[n]] = 1; next }
    delete ones[a[n]]
    next
  }
  if (match(line, /\{%k[1-7]\}/)) {
    k = substr(line, RSTART + 1, RLENGTH - 2)
    if (line ~ /\(%/ && line !~ /\(%rip\)/ && !(k in ones)) {
      if (detail) {
        ins = line
        sub(/^ *[0-9a-f]+:\t/, "", ins)
        mn = ins
        sub(/[ \t].*/, "", mn)
        last = ins
        sub(/\{%k[0-7]\}(\{z\})?$/, "", last)
        sub(/.*,/, "", last)
        print fn ":" mn ":" (last ~ /\(/ ? "store" : "load")
      } else
        print fn
    }
    if (line ~ /scatter|gather/)
      delete ones[k]
  }
  # the destination: the last operand
  d = line
  sub(/.*,/, "", d)
  sub(/.*[ \t]/, "", d)
  if (match(d, /^%k[0-7]/))
    delete ones[substr(d, 1, 3)]
  if (line ~ /\t(j[a-z]+|call[a-z]*|ret[a-z]*|loop[a-z]*)( |$)/)
    split("", ones)
}
