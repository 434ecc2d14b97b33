/*
 * obl-load's run state, shared by its loop (load.c) and its report
 * (load_report.c). Times are CLOCK_MONOTONIC ns; the server's timestamps
 * use the same clock, so on one host they are comparable.
 */
#ifndef OBL_SERVE_LOAD_H
#define OBL_SERVE_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "loadgen.h"
#include "wire.h"

/* One request's record. */
typedef struct load_rec {
    uint64_t key_id;
    uint64_t send, recv; /* 0: not yet */
    uint64_t arrival, dispatch, complete;
    uint32_t batch;
    uint8_t status, found, ok;
} load_rec;

typedef struct load_run {
    load_plan plan;
    serve_hello hello;
    unsigned conns;
    double hit_ratio, zipf_s;
    uint64_t t0;       /* the schedule's start (absolute) */
    size_t count;      /* requests scheduled, warm-up included */
    uint64_t *intended; /* offsets from t0 */
    uint16_t *step;
    load_rec *rec;
    uint64_t answered, wrong, errors, duplicates;
    const char *tag;   /* the REPORT line's version field */
} load_run;

/* Prints one REPORT line per step group (warm-up excluded) on stdout and,
 * if summary is not NULL, one JSON record per group and one per second of
 * the schedule to it. Returns 0. */
int load_report(const load_run *r, FILE *summary);

/* Writes every request's record as one JSON line. */
void load_write_raw(const load_run *r, FILE *f);

#endif /* OBL_SERVE_LOAD_H */
