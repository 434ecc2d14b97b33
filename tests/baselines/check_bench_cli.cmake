# SPDX-License-Identifier: MIT
# The obl-bench command line against docs/benchmark-format.md:
#   cmake -DBENCH=<path to obl-bench> -DWORK=<scratch dir> -P check_bench_cli.cmake
# Runs tiny cases of every registered type, checks the REPORT lines and the
# JSONL records (valid JSON, the schema's fields, spread over R repetitions),
# list-types, list-cases, and that bad usage exits with status 2.
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(failures 0)
macro(fail msg)
  message(SEND_ERROR "check_bench_cli: ${msg}")
  math(EXPR failures "${failures} + 1")
endmacro()

function(run_bench out_var rc_var)
  execute_process(COMMAND ${BENCH} ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc TIMEOUT 120)
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
  set(last_err "${err}" PARENT_SCOPE)
endfunction()

# list-types: one line per type, name TAB report type TAB summary
run_bench(types rc list-types)
if(NOT rc EQUAL 0 OR NOT types MATCHES "array\tRORAM\t" OR NOT types MATCHES "hashmap\tUnorderedMap\t")
  fail("list-types: rc=${rc} out=${types}")
endif()

# list-cases: every line a JSON object with the plan's fields
run_bench(plan rc list-cases --max-n 2048)
string(REGEX REPLACE "\n$" "" plan "${plan}")
string(REPLACE "\n" ";" plan_lines "${plan}")
list(LENGTH plan_lines nplan)
# at least the baselines' 14 cases (array at the ORAM plans' sizes 4/8, 8/8,
# 8/32, 8/56; hashmap 8/8, 8/56, 32/32; N = 1024, 2048); every registered
# type adds its own
string(REGEX MATCHALL "\"bench\": *\"(array|hashmap)\"" base_cases "${plan}")
list(LENGTH base_cases nbase)
if(NOT rc EQUAL 0 OR NOT nbase EQUAL 14 OR nplan LESS 14)
  fail("list-cases --max-n 2048: rc=${rc}, ${nplan} lines, ${nbase} baseline cases")
endif()
foreach(line IN LISTS plan_lines)
  foreach(key bench report_type impl args params est_memory_bytes est_seconds)
    string(JSON v ERROR_VARIABLE jerr GET "${line}" ${key})
    if(jerr)
      fail("list-cases line lacks ${key}: ${line}")
    endif()
  endforeach()
endforeach()

# one small case of each type: REPORT line on stdout, one JSONL record
foreach(type_rt array:RORAM:baseline_array hashmap:UnorderedMap:baseline_hashmap)
  string(REPLACE ":" ";" parts ${type_rt})
  list(GET parts 0 type)
  list(GET parts 1 rt)
  list(GET parts 2 impl)
  set(json ${WORK}/${type}.jsonl)
  run_bench(out rc ${type} --n 1024,2^11 --reps 2 --queries 1000 --json ${json})
  if(NOT rc EQUAL 0)
    fail("${type}: exit ${rc}: ${last_err}")
    continue()
  endif()
  string(REGEX MATCHALL "REPORT_123${rt}\\|${impl}\\|[^|]+\\| N:=[0-9]+ \\| Key_bytes := 8 \\| Value_bytes := 8 (\\| fill := 0.8 )?\\| Initialization_time_us := [0-9.]+ \\|[^\n]* Bytes_per_entry := [0-9.]+[^\n]* REPORT_123"
         reports "${out}")
  list(LENGTH reports nrep)
  if(NOT nrep EQUAL 2)
    fail("${type}: expected 2 REPORT lines, got ${nrep}: ${out}")
  endif()
  file(STRINGS ${json} records)
  list(LENGTH records nrec)
  if(NOT nrec EQUAL 2)
    fail("${type}: expected 2 JSONL records, got ${nrec}")
    continue()
  endif()
  list(GET records 1 rec)
  string(JSON schema ERROR_VARIABLE jerr GET "${rec}" schema)
  if(jerr OR NOT schema STREQUAL "obl-bench/1")
    fail("${type}: record is not valid obl-bench/1 JSON: ${jerr}")
    continue()
  endif()
  string(JSON n GET "${rec}" params N)
  string(JSON bench GET "${rec}" bench)
  string(JSON rtype GET "${rec}" report_type)
  string(JSON cpu GET "${rec}" env cpu)
  string(JSON git GET "${rec}" env git)
  if(NOT n EQUAL 2048 OR NOT bench STREQUAL type OR NOT rtype STREQUAL rt OR cpu STREQUAL "" OR git STREQUAL "")
    fail("${type}: record fields N=${n} bench=${bench} report_type=${rtype} cpu=${cpu} git=${git}")
  endif()
  # Memory_kb (resident-set growth) may be 0 when the allocator reuses
  # resident pages: Allocated_kb is the measured memory checked here
  set(metrics Initialization_time_us Read_latency_us Read_throughput_qps Write_latency_us Allocated_kb Bytes_per_entry)
  if(type STREQUAL "hashmap")
    set(metrics Initialization_time_us Get_latency_us Get_throughput_qps Write_latency_us Allocated_kb
        Bytes_per_entry Get_miss_latency_us Put_latency_us Erase_latency_us)
  endif()
  foreach(m IN LISTS metrics)
    string(JSON reps ERROR_VARIABLE jerr GET "${rec}" metrics ${m} reps)
    string(JSON nsamp ERROR_VARIABLE jerr2 LENGTH "${rec}" metrics ${m} samples)
    string(JSON med ERROR_VARIABLE jerr3 GET "${rec}" metrics ${m} median)
    string(JSON lo ERROR_VARIABLE jerr4 GET "${rec}" metrics ${m} min)
    string(JSON hi ERROR_VARIABLE jerr5 GET "${rec}" metrics ${m} max)
    if(jerr OR jerr2 OR jerr3 OR jerr4 OR jerr5 OR NOT reps EQUAL 2 OR NOT nsamp EQUAL 2)
      fail("${type}: metric ${m} missing or without 2 repetitions")
    elseif(med LESS lo OR med GREATER hi OR NOT med GREATER 0)
      fail("${type}: metric ${m}: median ${med} outside [${lo}, ${hi}] or not positive")
    endif()
  endforeach()
  # memory is measured: 2048 entries of 8 bytes need at least 16 KiB
  string(JSON mem GET "${rec}" metrics Allocated_kb median)
  string(JSON rss ERROR_VARIABLE jerr GET "${rec}" metrics Memory_kb median)
  if(mem LESS 16 OR jerr)
    fail("${type}: Allocated_kb ${mem} below the payload, or no Memory_kb")
  endif()
endforeach()

# the oblivious types time their baseline in the same run: the plain array
# on the same reads (nroram, roram) or the plain hash map on the same gets
# (umap); each record carries the baseline's latency and the ratio, which
# must be above 1 (no ORAM access is as cheap as a plain read)
foreach(spec "nroram:Baseline_read_latency_us:Read_slowdown_ratio"
             "roram:Baseline_read_latency_us:Read_slowdown_ratio"
             "umap:Baseline_get_latency_us:Get_slowdown_ratio")
  string(REPLACE ":" ";" parts ${spec})
  list(GET parts 0 type)
  list(GET parts 1 base)
  list(GET parts 2 ratio)
  set(json ${WORK}/${type}.jsonl)
  file(REMOVE ${json})
  run_bench(out rc ${type} --n 1024 --reps 2 --queries 1000 --json ${json})
  if(NOT rc EQUAL 0)
    fail("${type}: exit ${rc}: ${last_err}")
    continue()
  endif()
  if(NOT out MATCHES "\\| ${base} := [0-9.]+ \\| ${ratio} := [0-9.]+")
    fail("${type}: REPORT line lacks ${base} and ${ratio}: ${out}")
  endif()
  file(STRINGS ${json} rec LIMIT_COUNT 1)
  set(extra "")
  if(type STREQUAL "nroram")
    # the same reads without the harness's position prefetch (docs/bench.md)
    set(extra Read_latency_plain_caller_us)
  endif()
  foreach(m ${base} ${ratio} ${extra})
    string(JSON nsamp ERROR_VARIABLE jerr LENGTH "${rec}" metrics ${m} samples)
    if(jerr OR NOT nsamp EQUAL 2)
      fail("${type}: metric ${m} missing or without 2 repetitions")
    endif()
  endforeach()
  string(JSON r ERROR_VARIABLE jerr GET "${rec}" metrics ${ratio} median)
  if(jerr OR NOT r GREATER 1)
    fail("${type}: ${ratio} ${r} is not above 1")
  endif()
endforeach()

# the load balancer and its baseline: REPORT type LOADBALANCE with the
# public harness's fields (B, Key_bytes, Value_bytes, Shards, Latency_us,
# Throughput_qps), --batch as --n, the derived split, in the plan
foreach(type_impl lb:obl lb-baseline:baseline_lb)
  string(REPLACE ":" ";" parts ${type_impl})
  list(GET parts 0 type)
  list(GET parts 1 impl)
  set(json ${WORK}/${type}.jsonl)
  run_bench(out rc ${type} --batch 1000,2^10 --shards 3 --threads 2 --reps 2 --queries 4096
            --json ${json})
  set(want "REPORT_123LOADBALANCE\\|${impl}\\|[^|]*\\| B:=1024 \\| Key_bytes := 8 \\| "
           "Value_bytes := 8 \\| Shards := 3 \\| Threads := 2 \\|.* Latency_us := [0-9.]+ \\| "
           "Throughput_qps := [0-9.]+ ")
  string(CONCAT want ${want})
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${want}" OR NOT out MATCHES "B:=1000 ")
    fail("${type}: exit ${rc}, REPORT lines: ${out} ${last_err}")
  endif()
  if(type STREQUAL "lb" AND NOT out MATCHES "Split_sort_us := [0-9.]+ .*Split_routing_us")
    fail("lb: no derived split in ${out}")
  endif()
  file(STRINGS ${json} recs)
  list(LENGTH recs nrec)
  if(NOT nrec EQUAL 2)
    fail("${type}: ${nrec} JSONL records, expected 2")
  endif()
endforeach()
run_bench(plan rc list-cases)
if(NOT plan MATCHES "\"bench\": *\"lb\".*\"--n\", \"262144\"" OR
   plan MATCHES "\"bench\": *\"lb\", [^\n]*\"--n\", \"524288\"")
  fail("list-cases: lb should run up to B = 2^18 by default")
endif()
run_bench(plan rc list-cases --large)
if(NOT plan MATCHES "\"bench\": *\"lb\", [^\n]*\"--n\", \"1048576\"")
  fail("list-cases --large: lb should reach B = 2^20")
endif()

# bad usage and impossible sizes: a message and exit status 2
foreach(bad "array;--bogus;1" "array;--n;0" "array;--n;banana" "array;--reps;0"
            "array;--key-bytes;1;--n;100000" "hashmap;--key-bytes;1;--n;1024"
            "hashmap;--value-bytes" "nosuchtype" "list-cases;--max-n;x" ""
            "lb;--batch;1024;--value-bytes;16" "lb;--batch;2^25" "lb;--shards;0")
  run_bench(out rc ${bad})
  if(NOT rc EQUAL 2)
    fail("'${bad}' exited ${rc}, expected 2")
  elseif(NOT bad STREQUAL "" AND last_err STREQUAL "")
    fail("'${bad}' gave no message on stderr")
  endif()
endforeach()

if(failures GREATER 0)
  message(FATAL_ERROR "check_bench_cli: ${failures} failure(s)")
endif()
message(STATUS "check_bench_cli: all checks passed")
