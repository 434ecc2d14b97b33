# Tests of the non-oblivious baselines and of the obl-bench driver's CLI.
obl_add_test(test_baselines baselines/test_baselines.c)
target_link_libraries(test_baselines PRIVATE obl_baselines)

# The driver's command line and output formats (docs/benchmark-format.md),
# only where obl-bench is built (not in the ct build).
if(TARGET obl-bench)
  add_test(NAME test_bench_cli
           COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:obl-bench>
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/bench_cli
                   -P ${CMAKE_CURRENT_LIST_DIR}/check_bench_cli.cmake)
  set(lab unit)
  if(OBL_SANITIZE)
    set(lab sanitize)
  endif()
  set_tests_properties(test_bench_cli PROPERTIES LABELS "${lab};bench" TIMEOUT 300)
endif()

# obl-ab (bench/ab.c) built against the current library twice over: each
# mode runs and prints its comparison; bad usage fails.
if(TARGET obl-ab)
  add_test(NAME test_bench_ab_self
           COMMAND sh -c "$<TARGET_FILE:obl-ab> nroram 1024 8 8 3 | grep -q 'nroram read us, 3 rounds: old' && $<TARGET_FILE:obl-ab> roram 1024 56 3 | grep -q 'roram read us, 3 rounds: old' && $<TARGET_FILE:obl-ab> umap 1024 56 3 1 | grep -q 'umap get us, 3 rounds: old .* new/old' && OBL_AB_PLACEMENTS=2 $<TARGET_FILE:obl-ab> roram 1024 8 2 | grep -q 'roram read us, 4 rounds in 2 placements: old' && ! $<TARGET_FILE:obl-ab> roram 0 8 3 2>/dev/null && ! OBL_AB_PLACEMENTS=0 $<TARGET_FILE:obl-ab> roram 1024 8 3 2>/dev/null")
  set_tests_properties(test_bench_ab_self PROPERTIES LABELS "${lab};bench" TIMEOUT 120)
endif()

# obl-microbench (bench/microbench.c): every micro-benchmark runs once and
# prints its answer; the memory one, cut at 16 MiB so that the sanitize build
# stays within its time (1 .. 256 MiB took over 120 s there on CI), writes a
# JSON row per region size and pattern (5 x 5), the layout one (shrunk to
# 2^17 buckets by the same cut) a row per layout (5); an unknown argument and an
# out-of-range --max-mib are usage errors (exit 2).
if(TARGET obl-microbench)
  set(mbj ${CMAKE_CURRENT_BINARY_DIR}/microbench.jsonl)
  add_test(NAME test_microbench
           COMMAND sh -c "rm -f ${mbj} && out=$($<TARGET_FILE:obl-microbench> all --reps 1 --max-mib 16 --json ${mbj}) && echo \"$out\" | grep -q '^# answer: 64-byte entries' && echo \"$out\" | grep -q '^# answer: from 16 MiB one core moves about [0-9]* random lines per us' && echo \"$out\" | grep -q '^# answer: the best blocked layout (G = [2-5]) takes [0-9.]* of heap' && test $(grep -c '\"bench\": \"memory\"' ${mbj}) -eq 25 && test $(grep -c '\"bench\": \"layout\"' ${mbj}) -eq 5 && test $(grep -c '\"bench\": \"cmov\"' ${mbj}) -ge 9 && { $<TARGET_FILE:obl-microbench> bogus >/dev/null 2>&1; test $? -eq 2; } && { $<TARGET_FILE:obl-microbench> memory --max-mib 0 >/dev/null 2>&1; test $? -eq 2; }")
  set_tests_properties(test_microbench PROPERTIES LABELS "${lab};bench" TIMEOUT 120)
endif()
