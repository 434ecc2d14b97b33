/*
 * obl-load's report (load.h): per step group, the offered and achieved
 * rate, latency from the intended send time (average, p50, p90, p99,
 * p99.9, max by exact sort), the batches the server ran while the group's
 * requests were due (size average, p50, p99, max and a histogram), lost
 * and failed requests, how late the generator itself sent (its p99 lag)
 * and the server's own time per request. REPORT lines follow the public
 * harness's envelope, with obl-bench's version field and environment
 * (bench/harness.c); --summary adds JSON records and a per-second timeline.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <obl/obl.h>

#include "harness.h"
#include "load.h"


#define NMETRICS 20
#define HIST_BINS 18

typedef struct batch {
    uint64_t dispatch;
    uint32_t size;
} batch;

typedef struct group_stats {
    double m[NMETRICS];
    uint64_t hist[HIST_BINS];
} group_stats;

static const char *const metric_names[NMETRICS] = {
    "Offered_qps", "Achieved_qps", "Latency_avg_us", "Latency_p50_us", "Latency_p90_us",
    "Latency_p99_us", "Latency_p999_us", "Latency_max_us", "Batch_size_avg", "Batch_size_p50",
    "Batch_size_p99", "Batch_size_max", "Batches", "Requests", "Answered", "Lost", "Errors",
    "Send_lag_p99_us", "Server_avg_us", "Server_p99_us"};

static int cmp_batch(const void *a, const void *b)
{
    const batch *x = a, *y = b;
    return (x->dispatch > y->dispatch) - (x->dispatch < y->dispatch);
}

/* The distinct batches seen in the answers, by dispatch time. */
static size_t collect_batches(const load_run *r, batch **out)
{
    batch *b = malloc((r->answered + 1) * sizeof(batch));
    size_t n = 0;
    for (size_t i = 0; b && i < r->count; i++)
        if (r->rec[i].recv && r->rec[i].status == SERVE_OK)
            b[n++] = (batch){r->rec[i].dispatch, r->rec[i].batch};
    if (!b)
        return 0;
    qsort(b, n, sizeof(batch), cmp_batch);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (!u || b[i].dispatch != b[u - 1].dispatch)
            b[u++] = b[i];
    *out = b;
    return u;
}

/* The step whose stretch holds absolute time t (bounds: nsteps + 1 step
 * starts, absolute ns), or -1 outside them. */
static int step_at(const uint64_t *bounds, unsigned nsteps, uint64_t t)
{
    if (t < bounds[0] || t >= bounds[nsteps])
        return -1;
    unsigned lo = 0, hi = nsteps - 1; /* the last step starting at or before t */
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (bounds[mid] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return (int)lo;
}

static int group_at(const load_run *r, const uint64_t *bounds, uint64_t t)
{
    int s = step_at(bounds, r->plan.nsteps, t);
    return s < 0 ? -1 : (int)r->plan.steps[s].group;
}

static unsigned hist_bin(uint32_t size)
{
    unsigned lg = 0;
    while (lg + 1 < HIST_BINS && ((uint64_t)2 << lg) <= size)
        lg++;
    return lg;
}

/* Sorts x[0..n) and stores avg, p50, p90, p99, p999, max at out[0..6). */
static void summarize(double *x, size_t n, double *out)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    load_sort(x, n);
    out[0] = n ? sum / (double)n : NAN;
    out[1] = load_quantile(x, n, 0.5);
    out[2] = load_quantile(x, n, 0.9);
    out[3] = load_quantile(x, n, 0.99);
    out[4] = load_quantile(x, n, 0.999);
    out[5] = n ? x[n - 1] : NAN;
}

static void group_requests(const load_run *r, unsigned g, group_stats *gs, double *lat,
                           double *lag, double *srv)
{
    size_t nl = 0, ng = 0, req = 0, lost = 0, errs = 0;
    double srv_sum = 0;
    for (size_t i = 0; i < r->count; i++) {
        if (r->step[i] == LOAD_WARMUP || r->plan.steps[r->step[i]].group != g)
            continue;
        const load_rec *x = &r->rec[i];
        req++;
        if (x->send)
            lag[ng++] = (double)(x->send - r->t0 - r->intended[i]) / 1e3;
        if (!x->recv) {
            lost++;
            continue;
        }
        errs += !x->ok;
        lat[nl] = (double)(x->recv - r->t0 - r->intended[i]) / 1e3;
        srv[nl] = (double)(x->complete - x->arrival) / 1e3;
        srv_sum += srv[nl++];
    }
    double q[6];
    summarize(lat, nl, &gs->m[2]);
    summarize(lag, ng, q);
    gs->m[17] = q[3];
    summarize(srv, nl, q);
    gs->m[18] = nl ? srv_sum / (double)nl : NAN;
    gs->m[19] = q[3];
    gs->m[13] = (double)req;
    gs->m[14] = (double)nl;
    gs->m[15] = (double)lost;
    gs->m[16] = (double)errs;
}

/* Offered and achieved rate (answers received while the group's steps
 * ran, per second of them); the batches dispatched meanwhile. */
static void group_rates_batches(const load_run *r, unsigned g, uint64_t got, const batch *b,
                                const int *bgroup, size_t nb, group_stats *gs, double *sizes)
{
    double dur = 0, offered = 0;
    for (unsigned i = 0; i < r->plan.nsteps; i++)
        if (r->plan.steps[i].group == g) {
            dur += r->plan.steps[i].seconds;
            offered += r->plan.steps[i].rate * r->plan.steps[i].seconds;
        }
    gs->m[0] = offered / dur;
    gs->m[1] = (double)got / dur;
    size_t n = 0;
    for (size_t i = 0; i < nb; i++)
        if (bgroup[i] == (int)g) {
            sizes[n++] = b[i].size;
            gs->hist[hist_bin(b[i].size)]++;
        }
    double q[6];
    summarize(sizes, n, q);
    gs->m[8] = q[0];
    gs->m[9] = q[1];
    gs->m[10] = q[3];
    gs->m[11] = q[5];
    gs->m[12] = (double)n;
}

/* ------------------------------------------------------------ output -- */

/* The plan's public description: first and last rate, seconds, steps. */
static void plan_shape(const load_run *r, double *from, double *to, double *secs)
{
    *from = r->plan.steps[0].rate;
    *to = r->plan.steps[r->plan.nsteps - 1].rate;
    *secs = load_step_start(&r->plan, r->plan.nsteps);
}

static void report_line(const load_run *r, unsigned g, const group_stats *gs, char *out,
                        size_t len)
{
    double from, to, secs;
    plan_shape(r, &from, &to, &secs);
    size_t at = (size_t)snprintf(
        out, len,
        "REPORT_123Ramp-UMAP|obl|%s| N:=%" PRIu64 " | Key_bytes := %u | Value_bytes := %u"
        " | Max_batch := %u | Pad := %u | Connections := %u | Hit_pct := %.0f"
        " | Rate_from := %.0f | Rate_to := %.0f | Seconds := %.0f | Steps := %u | Step := %u",
        bench_get_env()->tag, r->hello.n, r->hello.key_bytes, r->hello.value_bytes, r->hello.max_batch,
        r->hello.pad, r->conns, r->hit_ratio * 100, from, to, secs, r->plan.nsteps, g + 1);
    for (int i = 0; i < NMETRICS && at < len; i++) {
        char num[64];
        bench_fmt(num, sizeof(num), gs->m[i]);
        at += (size_t)snprintf(out + at, len - at, " | %s := %s", metric_names[i], num);
    }
    if (at < len)
        snprintf(out + at, len - at, " REPORT_123");
}

/* The head of an obl-bench/1 record up to "metrics": {; `what`/`value`
 * name the row (Step or Second). */
static void json_head(FILE *f, const load_run *r, const char *type, const char *what,
                      unsigned value, double queries)
{
    double from, to, secs;
    plan_shape(r, &from, &to, &secs);
    fprintf(f,
            "{\"schema\": \"obl-bench/1\", \"bench\": \"ramp\", \"report_type\": \"%s\", "
            "\"impl\": \"obl\", \"params\": {\"N\": %" PRIu64 ", \"Key_bytes\": %u, "
            "\"Value_bytes\": %u, \"Max_batch\": %u, \"Pad\": %u, \"Connections\": %u, "
            "\"Hit_pct\": %.0f, \"Rate_from\": %.0f, \"Rate_to\": %.0f, \"Seconds\": %.0f, "
            "\"Steps\": %u, \"%s\": %u}, \"queries\": %.0f, \"reps\": 1, \"seed\": %" PRIu64,
            type, r->hello.n, r->hello.key_bytes, r->hello.value_bytes, r->hello.max_batch,
            r->hello.pad, r->conns, r->hit_ratio * 100, from, to, secs, r->plan.nsteps, what,
            value, queries, r->plan.seed);
    fputs(", \"env\": ", f);
    bench_json_env(f, bench_get_env()); /* the machine and build, as obl-bench */
    fputs(", \"metrics\": {", f);
}

/* One metric of one sample, as obl-bench writes it; a metric without a
 * value (no request answered in a step) is left out. *count: metrics
 * written so far in this record. */
static void json_metric(FILE *f, int *count, const char *name, double x)
{
    if (!isfinite(x))
        return;
    fprintf(f, "%s\"%s\": {", (*count)++ ? ", " : "", name);
    const char *k[] = {"median", "min", "max", "q1", "q3"};
    for (int j = 0; j < 5; j++) {
        fprintf(f, "\"%s\": ", k[j]);
        bench_json_number(f, x);
        fputs(", ", f);
    }
    fputs("\"reps\": 1, \"samples\": [", f);
    bench_json_number(f, x);
    fputs("]}", f);
}

/* The group's record: its metrics, and the batch-size histogram as
 * Batches_size_<lo> metrics (batches of lo .. 2 lo - 1). */
static void json_record(FILE *f, const load_run *r, unsigned g, const group_stats *gs,
                        const char *report)
{
    json_head(f, r, "Ramp-UMAP", "Step", g + 1, gs->m[13]);
    int count = 0;
    for (int i = 0; i < NMETRICS; i++)
        json_metric(f, &count, metric_names[i], gs->m[i]);
    for (unsigned b = 0; b < HIST_BINS; b++)
        if (gs->hist[b]) {
            char name[48];
            snprintf(name, sizeof(name), "Batches_size_%u", 1u << b);
            json_metric(f, &count, name, (double)gs->hist[b]);
        }
    fprintf(f, "}, \"report\": \"%s\"}\n", report);
}

/* One record per second of the schedule (type Ramp-UMAP-timeline, warm-up
 * included as Step 0; -1: a second with no request due): the offered rate, requests due and answered, latency
 * p50/p99/max of those due, and the batches dispatched in that second. */
static void timeline(FILE *f, const load_run *r, const batch *b, size_t nb, double *lat)
{
    size_t nsec = (size_t)(r->intended[r->count - 1] / 1000000000u) + 1, i = 0, j = 0;
    uint64_t *got = calloc(nsec, sizeof(uint64_t)); /* answers received per second */
    if (!got)
        return;
    for (size_t k = 0; k < r->count; k++)
        if (r->rec[k].recv >= r->t0 && (r->rec[k].recv - r->t0) / 1000000000u < nsec)
            got[(r->rec[k].recv - r->t0) / 1000000000u]++;
    for (unsigned sec = 0; i < r->count; sec++) {
        /* the step of the second's first request (a second may hold none) */
        int s = r->intended[i] >= (uint64_t)sec * 1000000000u + 1000000000u ? -2
                : r->step[i] == LOAD_WARMUP                             ? -1
                                                                        : r->step[i];
        uint64_t lo = sec * UINT64_C(1000000000), hi = lo + 1000000000u;
        size_t due = 0, nl = 0, nbat = 0;
        double bsum = 0;
        for (; i < r->count && r->intended[i] < hi; i++, due++)
            if (r->rec[i].recv)
                lat[nl++] = (double)(r->rec[i].recv - r->t0 - r->intended[i]) / 1e3;
        for (; j < nb && b[j].dispatch < r->t0 + hi; j++)
            if (b[j].dispatch >= r->t0 + lo) {
                nbat++;
                bsum += b[j].size;
            }
        double q[6];
        summarize(lat, nl, q);
        json_head(f, r, "Ramp-UMAP-timeline", "Second", sec, (double)due);
        int count = 0;
        json_metric(f, &count, "Step", s + 1);
        json_metric(f, &count, "Offered_qps", s >= 0 ? r->plan.steps[s].rate
                                         : s == -1 ? r->plan.steps[0].rate : 0);
        json_metric(f, &count, "Due", (double)due);
        json_metric(f, &count, "Answered", (double)nl);
        json_metric(f, &count, "Received", (double)got[sec]);
        json_metric(f, &count, "Latency_p50_us", q[1]);
        json_metric(f, &count, "Latency_p99_us", q[3]);
        json_metric(f, &count, "Latency_max_us", q[5]);
        json_metric(f, &count, "Batches", (double)nbat);
        json_metric(f, &count, "Batch_size_avg", nbat ? bsum / (double)nbat : NAN);
        fputs("}}\n", f);
    }
    free(got);
}

int load_report(const load_run *r, FILE *summary)
{
    char line[4096];
    unsigned ns = r->plan.nsteps, ng = r->plan.ngroups;
    uint64_t *bounds = malloc((ns + 1) * sizeof(uint64_t));
    uint64_t *got = calloc(ng, sizeof(uint64_t));
    double *lat = malloc((r->count + 1) * sizeof(double));
    double *lag = malloc((r->count + 1) * sizeof(double));
    double *srv = malloc((r->count + 1) * sizeof(double));
    batch *b = NULL;
    size_t nb = collect_batches(r, &b);
    int *bgroup = malloc((nb + 1) * sizeof(int));
    double *sizes = malloc((nb + 1) * sizeof(double));
    if (!bounds || !got || !lat || !lag || !srv || !b || !bgroup || !sizes) {
        fprintf(stderr, "obl-load: out of memory for the report\n");
    } else {
        for (unsigned i = 0; i <= ns; i++)
            bounds[i] = r->t0 + (uint64_t)llround((r->plan.warmup_s + load_step_start(&r->plan, i)) * 1e9);
        for (size_t i = 0; i < r->count; i++) {
            int g = r->rec[i].recv ? group_at(r, bounds, r->rec[i].recv) : -1;
            if (g >= 0)
                got[g]++;
        }
        for (size_t i = 0; i < nb; i++)
            bgroup[i] = group_at(r, bounds, b[i].dispatch);
        for (unsigned g = 0; g < ng; g++) {
            group_stats gs = {0};
            group_requests(r, g, &gs, lat, lag, srv);
            group_rates_batches(r, g, got[g], b, bgroup, nb, &gs, sizes);
            report_line(r, g, &gs, line, sizeof(line));
            printf("%s\n", line);
            if (summary)
                json_record(summary, r, g, &gs, line);
        }
        fflush(stdout);
        if (summary)
            timeline(summary, r, b, nb, lat);
    }
    free(bounds);
    free(got);
    free(lat);
    free(lag);
    free(srv);
    free(b);
    free(bgroup);
    free(sizes);
    return 0;
}

void load_write_raw(const load_run *r, FILE *f)
{
    for (size_t i = 0; i < r->count; i++) {
        const load_rec *x = &r->rec[i];
        fprintf(f,
                "{\"id\": %zu, \"step\": %d, \"key_id\": %" PRIu64 ", \"hit\": %d, "
                "\"intended_ns\": %" PRIu64 ", \"send_ns\": %" PRIu64 ", \"recv_ns\": %" PRIu64
                ", \"arrival_ns\": %" PRIu64 ", \"dispatch_ns\": %" PRIu64
                ", \"complete_ns\": %" PRIu64 ", \"batch\": %u, \"status\": %d, \"found\": %d"
                ", \"ok\": %d}\n",
                i, r->step[i] == LOAD_WARMUP ? 0 : r->step[i] + 1, x->key_id,
                x->key_id < r->hello.n, r->t0 + r->intended[i], x->send, x->recv, x->arrival,
                x->dispatch, x->complete, x->batch, x->recv ? x->status : -1, x->found, x->ok);
    }
}
