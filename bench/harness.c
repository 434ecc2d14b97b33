/* SPDX-License-Identifier: MIT */
/*
 * The obl-bench harness (see harness.h and docs/benchmark-format.md):
 * command line, repetition loop, statistics, REPORT and JSONL output,
 * environment detection, memory measurement and the default plan.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#ifndef OBL_BENCH_FLAGS
#define OBL_BENCH_FLAGS "unknown"
#endif
/* OBL_BENCH_GIT: written at build time by bench/git_rev.cmake into the
 * build's bench/ directory; "unknown" where harness.c is compiled without
 * it (scripts/ab.sh) */
#if defined(__has_include)
#if __has_include("obl_bench_git.h")
#include "obl_bench_git.h"
#endif
#endif
#ifndef OBL_BENCH_GIT
#define OBL_BENCH_GIT "unknown"
#endif

#define BENCH_DEFAULT_MAX_N (UINT64_C(1) << 20)
#define BENCH_LARGE_MAX_N (UINT64_C(1) << 24)
#define BENCH_PLAN_MIN_N (UINT64_C(1) << 10)
#define BENCH_MAX_NS 64

/* ------------------------------------------------------------ timing -- */

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t bench_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    unsigned long size = 0, resident = 0;
    int ok = fscanf(f, "%lu %lu", &size, &resident) == 2;
    fclose(f);
    return ok ? (size_t)resident * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

/* --------------------------------------------------- counting alloc -- */

static void *bench_count_alloc(void *opaque, size_t size, size_t align)
{
    bench_counter *c = (bench_counter *)opaque;
    void *p = c->inner.alloc(c->inner.opaque, size, align);
    if (p) {
        c->live += size;
        c->calls++;
        if (c->live > c->peak)
            c->peak = c->live;
    }
    return p;
}

static void bench_count_free(void *opaque, void *p, size_t size)
{
    bench_counter *c = (bench_counter *)opaque;
    if (!p)
        return;
    c->live -= size;
    c->inner.free(c->inner.opaque, p, size);
}

obl_allocator bench_counting_allocator(bench_counter *c)
{
    c->inner = obl_default_allocator(); /* what users get without one */
    obl_allocator a = {bench_count_alloc, bench_count_free, c};
    return a;
}

/* --------------------------------------------------------- workload -- */

static uint64_t bench_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t bench_splitmix(uint64_t *z)
{
    uint64_t x = (*z += 0x9e3779b97f4a7c15ULL);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void bench_rng_seed(bench_rng *r, uint64_t seed)
{
    uint64_t z = seed;
    for (int i = 0; i < 4; i++)
        r->s[i] = bench_splitmix(&z);
}

uint64_t bench_rng_next(bench_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = bench_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = bench_rotl(s[3], 45);
    return out;
}

uint64_t bench_rng_below(bench_rng *r, uint64_t n)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)bench_rng_next(r) * n) >> 64);
}

/* A keyed bijection on [0, 2^b): add a key, multiply by an odd number,
 * xor-shift; each step is invertible modulo 2^b. Three rounds mix enough
 * for a benchmark's access order (it need not be a PRP). */
typedef struct {
    uint64_t add[3], mul[3], mask;
    unsigned shift, bits;
} bench_perm;

static void bench_perm_init(bench_perm *p, unsigned bits, uint64_t seed)
{
    uint64_t z = seed ^ ((uint64_t)bits << 56);
    p->bits = bits;
    p->mask = bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    p->shift = (bits + 1) / 2;
    for (int i = 0; i < 3; i++) {
        p->add[i] = bench_splitmix(&z);
        p->mul[i] = bench_splitmix(&z) | 1;
    }
}

static uint64_t bench_perm_apply(const bench_perm *p, uint64_t x)
{
    if (p->bits == 0)
        return 0;
    for (int i = 0; i < 3; i++) {
        x = (x + p->add[i]) & p->mask;
        x = (x * p->mul[i]) & p->mask;
        x ^= x >> p->shift;
    }
    return x;
}

void bench_shuffled_indices(uint64_t *out, uint64_t q, uint64_t n, uint64_t seed)
{
    unsigned bits = 0;
    while (bits < 64 && ((uint64_t)1 << bits) < n)
        bits++;
    bench_perm p;
    uint64_t done = 0;
    for (uint64_t pass = 0; done < q; pass++) {
        bench_perm_init(&p, bits, seed + pass * 0x632be59bd9b4e019ULL);
        /* cycle walking: x -> perm(x) until it lands in [0, n); a
         * permutation of [0, 2^b) restricted this way permutes [0, n) */
        for (uint64_t i = 0; i < n && done < q; i++) {
            uint64_t x = bench_perm_apply(&p, i);
            while (x >= n)
                x = bench_perm_apply(&p, x);
            out[done++] = x;
        }
    }
}

void bench_make_key(unsigned char *key, size_t kb, uint64_t id, uint64_t seed)
{
    unsigned bits = kb >= 8 ? 64 : (unsigned)(8 * kb);
    bench_perm p;
    bench_perm_init(&p, bits, seed);
    uint64_t x = bench_perm_apply(&p, id);
    size_t i = 0;
    for (; i < kb && i < 8; i++)
        key[i] = (unsigned char)(x >> (8 * i));
    uint64_t z = x ^ seed;
    while (i < kb) {
        uint64_t w = bench_splitmix(&z);
        for (int j = 0; j < 8 && i < kb; j++, i++)
            key[i] = (unsigned char)(w >> (8 * j));
    }
}

unsigned char *bench_value_pool(uint64_t value_bytes, uint64_t seed)
{
    size_t len = (size_t)value_bytes * BENCH_POOL;
    unsigned char *p = malloc(len);
    if (!p)
        return NULL;
    bench_rng r;
    bench_rng_seed(&r, seed ^ 0x7f4a7c159e3779b9ULL);
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)bench_rng_next(&r);
    return p;
}

int bench_check_memory(const bench_params *p, double need, double fraction, char *msg,
                       size_t len)
{
    double have = (double)bench_get_env()->memory_kb * 1024.0;
    if (have <= 0 || need <= have * fraction)
        return 0;
    snprintf(msg, len, "N=%" PRIu64 " needs about %.0f MiB, the machine has %.0f MiB", p->n,
             need / 1048576.0, have / 1048576.0);
    return 1;
}

int bench_check_key_space(const bench_params *p, char *msg, size_t len)
{
    if (p->key_bytes >= 8 ||
        (double)p->n + (double)p->queries <= (double)(UINT64_C(1) << (8 * p->key_bytes)))
        return 0;
    snprintf(msg, len,
             "N=%" PRIu64 " present and Q=%" PRIu64 " absent keys do not fit in %" PRIu64
             "-byte keys",
             p->n, p->queries, p->key_bytes);
    return 1;
}

void bench_rw_workload_delete(void *state)
{
    bench_rw_workload *w = (bench_rw_workload *)state;
    if (!w)
        return;
    free(w->read_idx);
    free(w->write_idx);
    free(w->pool);
    free(w);
}

bench_rw_workload *bench_rw_workload_new(const bench_params *p)
{
    bench_rw_workload *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->read_idx = malloc(p->queries * sizeof(uint64_t));
    w->write_idx = malloc(p->queries * sizeof(uint64_t));
    w->pool = bench_value_pool(p->value_bytes, p->seed);
    if (!w->read_idx || !w->write_idx || !w->pool) {
        bench_rw_workload_delete(w);
        return NULL;
    }
    bench_shuffled_indices(w->read_idx, p->queries, p->n, p->seed * 3 + 1);
    bench_shuffled_indices(w->write_idx, p->queries, p->n, p->seed * 3 + 2);
    return w;
}

uint64_t bench_erase_count(const bench_params *p)
{
    uint64_t e = p->n / 4;
    e = e < p->queries ? e : p->queries;
    return e ? e : 1;
}

void bench_map_workload_delete(void *state)
{
    bench_map_workload *w = (bench_map_workload *)state;
    if (!w)
        return;
    free(w->keys);
    free(w->hit);
    free(w->miss);
    free(w->upd);
    free(w->era);
    free(w->pool);
    free(w->vals);
    free(w->hit_id);
    free(w);
}

/* dst[i] = keys[ids[i]], i < count: the keys in the order of use. */
static void bench_gather_keys(unsigned char *dst, const unsigned char *keys, const uint64_t *ids,
                              size_t count, size_t kb)
{
    for (size_t i = 0; i < count; i++)
        memcpy(dst + i * kb, keys + ids[i] * kb, kb);
}

bench_map_workload *bench_map_workload_new(const bench_params *p, int keep_values)
{
    size_t kb = (size_t)p->key_bytes, vb = (size_t)p->value_bytes;
    size_t n = (size_t)p->n, q = (size_t)p->queries;
    bench_map_workload *w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->e = (size_t)bench_erase_count(p);
    uint64_t *ids = malloc((n > q ? n : q) * sizeof(uint64_t));
    w->keys = malloc(n * kb);
    w->hit = malloc(q * kb);
    w->miss = malloc(q * kb);
    w->upd = malloc(q * kb);
    w->era = malloc(w->e * kb);
    w->pool = bench_value_pool(p->value_bytes, p->seed);
    if (keep_values) {
        w->vals = malloc(n * vb);
        w->hit_id = malloc(q * sizeof(uint64_t));
    }
    if (!ids || !w->keys || !w->hit || !w->miss || !w->upd || !w->era || !w->pool ||
        (keep_values && (!w->vals || !w->hit_id))) {
        free(ids);
        bench_map_workload_delete(w);
        return NULL;
    }
    uint64_t kseed = p->seed * 0x9e3779b97f4a7c15ULL + 17;
    for (size_t i = 0; i < n; i++)
        bench_make_key(w->keys + i * kb, kb, i, kseed);
    if (w->vals)
        for (size_t i = 0; i < n; i++)
            memcpy(w->vals + i * vb, w->pool + (i % BENCH_POOL) * vb, vb);
    uint64_t *hit_id = w->hit_id ? w->hit_id : ids;
    bench_shuffled_indices(hit_id, q, n, p->seed * 5 + 1);
    bench_gather_keys(w->hit, w->keys, hit_id, q, kb);
    bench_shuffled_indices(ids, q, n, p->seed * 5 + 2);
    bench_gather_keys(w->upd, w->keys, ids, q, kb);
    bench_shuffled_indices(ids, w->e, n, p->seed * 5 + 3); /* e <= n: distinct */
    bench_gather_keys(w->era, w->keys, ids, w->e, kb);
    bench_shuffled_indices(ids, q, q, p->seed * 5 + 4); /* ids n .. n+q-1: absent */
    for (size_t i = 0; i < q; i++)
        bench_make_key(w->miss + i * kb, kb, n + ids[i], kseed);
    free(ids);
    return w;
}

int bench_rep_status(const bench_case *c, int failed, const bench_counter *cnt)
{
    if (failed)
        fprintf(stderr, "obl-bench: %s N=%" PRIu64 ": self-check failed (a wrong result or an "
                "error)\n", c->type->name, c->p.n);
    if (cnt->live != 0)
        fprintf(stderr, "obl-bench: %s N=%" PRIu64 ": %zu bytes still allocated after destroy\n",
                c->type->name, c->p.n, cnt->live);
    return failed || cnt->live != 0;
}

/* ------------------------------------------------------------ stats -- */

static int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double bench_quantile(const double *sorted, int n, double q)
{
    double pos = (n - 1) * q;
    int lo = (int)floor(pos);
    int hi = lo + 1 < n ? lo + 1 : n - 1;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

bench_stats bench_summarize(const double *x, int n)
{
    double tmp[BENCH_MAX_REPS];
    bench_stats s = {0, 0, 0, 0, 0};
    if (n <= 0)
        return s;
    if (n > BENCH_MAX_REPS)
        n = BENCH_MAX_REPS;
    memcpy(tmp, x, (size_t)n * sizeof(double));
    qsort(tmp, (size_t)n, sizeof(double), bench_cmp_double);
    s.min = tmp[0];
    s.max = tmp[n - 1];
    s.median = bench_quantile(tmp, n, 0.5);
    s.q1 = bench_quantile(tmp, n, 0.25);
    s.q3 = bench_quantile(tmp, n, 0.75);
    return s;
}

void bench_record(bench_case *c, const char *name, double value)
{
    bench_metric *m = NULL;
    for (int i = 0; i < c->nmetrics; i++)
        if (!strcmp(c->metrics[i].name, name))
            m = &c->metrics[i];
    if (!m) {
        if (c->nmetrics == BENCH_MAX_METRICS) {
            fprintf(stderr, "obl-bench: too many metrics (%s dropped)\n", name);
            return;
        }
        m = &c->metrics[c->nmetrics++];
        m->name = name;
        m->count = 0;
    }
    if (m->count < BENCH_MAX_REPS)
        m->samples[m->count++] = value;
}

double bench_record_phase(bench_case *c, const char *latency_name, const char *qps_name,
                          uint64_t t0, uint64_t t1, uint64_t ops)
{
    double us = bench_us_per_op(t0, t1, ops);
    bench_record(c, latency_name, us);
    if (qps_name)
        bench_record(c, qps_name, (double)ops * 1e9 / (double)(t1 - t0));
    return us;
}

/* The names of a phase timed from the first operation after a build. */
static const char *const bench_warm_names[][5] = {
    {"Read", "Read_latency_us", "Read_throughput_qps", "Warmup_read_latency_us",
     "Read_steady_latency_us"},
    {"Get", "Get_latency_us", "Get_throughput_qps", "Warmup_get_latency_us",
     "Get_steady_latency_us"},
};

double bench_record_warm_phase(bench_case *c, const char *op, uint64_t t0, uint64_t tw,
                               uint64_t t1, uint64_t ops)
{
    size_t k = 0;
    while (k + 1 < sizeof(bench_warm_names) / sizeof(bench_warm_names[0]) &&
           strcmp(bench_warm_names[k][0], op))
        k++;
    const char *const *nm = bench_warm_names[k];
    double us = bench_record_phase(c, nm[1], nm[2], t0, t1, 2 * ops);
    bench_record(c, nm[3], bench_us_per_op(t0, tw, ops));
    bench_record(c, nm[4], bench_us_per_op(tw, t1, ops));
    return us;
}

void bench_build_start(bench_build *b)
{
    b->rss_before = bench_rss_bytes();
    b->rss_after = 0;
    b->t0 = bench_now_ns();
}

void bench_build_done(bench_case *c, bench_build *b)
{
    uint64_t t1 = bench_now_ns();
    b->rss_after = bench_rss_bytes();
    bench_record(c, "Initialization_time_us", (double)(t1 - b->t0) / 1000.0);
}

/* Memory_kb is the public harness's figure: the growth of the resident set
 * from before the build to now (after the timed operations), as its drivers
 * read VmRSS; Allocated_kb is what the structure holds through its allocator
 * (docs/bench.md, "How a case is measured"). */
void bench_record_memory(bench_case *c, size_t alloc_bytes, const bench_build *b)
{
    size_t now = bench_rss_bytes();
    double rss = now > b->rss_before ? (double)(now - b->rss_before) : 0.0;
    bench_record(c, "Memory_kb", rss / 1024.0);
    bench_record(c, "Allocated_kb", (double)alloc_bytes / 1024.0);
    bench_record(c, "Bytes_per_entry", (double)alloc_bytes / (double)c->p.n);
}

/* ------------------------------------------------------ environment -- */

static void bench_read_cpu(char *out, size_t len)
{
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "model name", 10))
            continue;
        char *v = strchr(line, ':');
        if (!v)
            break;
        v++;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\n")] = 0;
        snprintf(out, len, "%s", v);
        break;
    }
    fclose(f);
}

static uint64_t bench_read_memtotal_kb(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    uint64_t kb = 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "MemTotal: %" SCNu64 " kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

/* A short machine tag for the REPORT line: no '|', no ":=", no spaces. */
static void bench_make_tag(bench_env *e)
{
    char cpu[128];
    size_t j = 0;
    static const char *drop[] = {"(R)", "(TM)", "(tm)", " CPU", " Processor", " with Radeon Graphics"};
    char tmp[128];
    snprintf(tmp, sizeof(tmp), "%s", e->cpu);
    tmp[strcspn(tmp, "@")] = 0;
    for (size_t d = 0; d < sizeof(drop) / sizeof(drop[0]); d++) {
        char *p;
        while ((p = strstr(tmp, drop[d])))
            memmove(p, p + strlen(drop[d]), strlen(p + strlen(drop[d])) + 1);
    }
    for (size_t i = 0; tmp[i] && j + 1 < sizeof(cpu); i++) {
        char ch = tmp[i];
        if (isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_')
            cpu[j++] = ch;
        else if (j && cpu[j - 1] != '-')
            cpu[j++] = '-';
    }
    while (j && cpu[j - 1] == '-')
        j--;
    cpu[j] = 0;
    snprintf(e->tag, sizeof(e->tag), "%s/%ldc/%s/%s", j ? cpu : "cpu", e->cores, e->ct_variant,
             e->git);
}

const bench_env *bench_get_env(void)
{
    static bench_env e;
    static int done;
    if (done)
        return &e;
    done = 1;
    bench_read_cpu(e.cpu, sizeof(e.cpu));
    e.cores = sysconf(_SC_NPROCESSORS_ONLN);
    e.memory_kb = bench_read_memtotal_kb();
#if defined(__clang__)
    snprintf(e.compiler, sizeof(e.compiler), "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(e.compiler, sizeof(e.compiler), "gcc %s", __VERSION__);
#else
    snprintf(e.compiler, sizeof(e.compiler), "unknown");
#endif
    e.flags = OBL_BENCH_FLAGS;
    e.git = OBL_BENCH_GIT;
    e.ct_variant = obl_ct_variant();
    if (gethostname(e.host, sizeof(e.host)) != 0)
        snprintf(e.host, sizeof(e.host), "unknown");
    e.host[sizeof(e.host) - 1] = 0;
    bench_make_tag(&e);
    e.cpu_id = sched_getcpu();
    return &e;
}

/*
 * --cpu K: pins the process to CPU K for the whole run, so that a run is
 * not moved between virtual CPUs that run at different speeds
 * (docs/bench.md, "Which CPU"). Returns 0 on success.
 */
static int bench_pin_cpu(uint64_t k)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (k >= CPU_SETSIZE) {
        errno = EINVAL;
        return -1;
    }
    CPU_SET((int)k, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        return -1;
    bench_env *e = (bench_env *)bench_get_env();
    e->cpu_pinned = 1;
    e->cpu_id = (int)k;
    return 0;
}

/* ------------------------------------------------------------- JSON -- */

void bench_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

void bench_json_number(FILE *f, double x)
{
    if (!isfinite(x))
        fputs("null", f);
    else if (x == floor(x) && fabs(x) < 1e15)
        fprintf(f, "%.0f", x);
    else
        fprintf(f, "%.9g", x);
}

void bench_json_stats(FILE *f, const bench_stats *s)
{
    static const char *const names[] = {"median", "min", "max", "q1", "q3"};
    const double values[] = {s->median, s->min, s->max, s->q1, s->q3};
    for (int i = 0; i < 5; i++) {
        fprintf(f, "%s\"%s\": ", i ? ", " : "", names[i]);
        bench_json_number(f, values[i]);
    }
}

void bench_json_env(FILE *f, const bench_env *e)
{
    fputs("{\"cpu\": ", f);
    bench_json_string(f, e->cpu);
    fprintf(f, ", \"cores\": %ld, \"memory_kb\": %" PRIu64 ", \"compiler\": ", e->cores,
            e->memory_kb);
    bench_json_string(f, e->compiler);
    fputs(", \"flags\": ", f);
    bench_json_string(f, e->flags);
    fputs(", \"git\": ", f);
    bench_json_string(f, e->git);
    fputs(", \"ct_variant\": ", f);
    bench_json_string(f, e->ct_variant);
    fputs(", \"host\": ", f);
    bench_json_string(f, e->host);
    fputs(", \"obl_version\": ", f);
    bench_json_string(f, obl_version());
    fputs(", \"tag\": ", f);
    bench_json_string(f, e->tag);
    if (e->cpu_id >= 0)
        fprintf(f, ", \"cpu_id\": %d", e->cpu_id);
    else
        fputs(", \"cpu_id\": null", f);
    fprintf(f, ", \"cpu_pinned\": %s", e->cpu_pinned ? "true" : "false");
    fputc('}', f);
}

/* ----------------------------------------------------------- output -- */

/* About six significant digits, never exponent notation. */
void bench_fmt(char *buf, size_t len, double x)
{
    if (!isfinite(x)) {
        snprintf(buf, len, "nan");
        return;
    }
    int dec = 0;
    if (x != 0) {
        dec = 5 - (int)floor(log10(fabs(x)));
        dec = dec < 0 ? 0 : dec > 6 ? 6 : dec;
    }
    snprintf(buf, len, "%.*f", dec, x);
}

/* An extra parameter's printed value: the integer, except `fill`, given in
 * percent and printed as the harness's fraction (80 -> 0.8). */
static void bench_param_text(char *buf, size_t len, const char *param, uint64_t v)
{
    if (!strcmp(param, "fill"))
        snprintf(buf, len, "%g", (double)v / 100.0);
    else
        snprintf(buf, len, "%" PRIu64, v);
}

static void bench_report_line(const bench_case *c, char *out, size_t len)
{
    const bench_type *t = c->type;
    size_t at = 0;
#define APPEND(...)                                                                  \
    do {                                                                             \
        int k_ = snprintf(out + at, at < len ? len - at : 0, __VA_ARGS__);           \
        if (k_ > 0)                                                                  \
            at += (size_t)k_;                                                        \
    } while (0)
    APPEND("REPORT_123%s|%s|%s| %s:=%" PRIu64 " | Key_bytes := %" PRIu64
           " | Value_bytes := %" PRIu64,
           t->report_type, t->impl, bench_get_env()->tag, t->n_name ? t->n_name : "N", c->p.n,
           c->p.key_bytes,
           c->p.value_bytes);
    for (int i = 0; i < t->nextra; i++) {
        char num[32];
        bench_param_text(num, sizeof(num), t->extra[i].param, c->p.extra[i]);
        APPEND(" | %s := %s", t->extra[i].param, num);
    }
    for (int i = 0; i < c->nmetrics; i++) {
        char num[64];
        bench_stats s = bench_summarize(c->metrics[i].samples, c->metrics[i].count);
        bench_fmt(num, sizeof(num), s.median);
        APPEND(" | %s := %s", c->metrics[i].name, num);
    }
    APPEND(" REPORT_123");
#undef APPEND
}

/* "bench": .., "report_type": .., "impl": .. of a JSONL record or plan line. */
static void bench_json_type(FILE *f, const bench_type *t)
{
    fputs("\"bench\": ", f);
    bench_json_string(f, t->name);
    fputs(", \"report_type\": ", f);
    bench_json_string(f, t->report_type);
    fputs(", \"impl\": ", f);
    bench_json_string(f, t->impl);
}

/* "params": {"N": .., "Key_bytes": .., "Value_bytes": .. and the extras
 * (extra[i], or the flag's default if extra is NULL); the brace is left open. */
static void bench_json_params(FILE *f, const bench_type *t, uint64_t n, uint64_t key_bytes,
                              uint64_t value_bytes, const uint64_t *extra)
{
    fprintf(f,
            "\"params\": {\"N\": %" PRIu64 ", \"Key_bytes\": %" PRIu64
            ", \"Value_bytes\": %" PRIu64,
            n, key_bytes, value_bytes);
    for (int i = 0; i < t->nextra; i++) {
        fputs(", ", f);
        bench_json_string(f, t->extra[i].param);
        char num[32];
        bench_param_text(num, sizeof(num), t->extra[i].param, extra ? extra[i] : t->extra[i].def);
        fprintf(f, ": %s", num);
    }
}

static void bench_write_json(FILE *f, const bench_case *c, const char *report)
{
    const bench_type *t = c->type;
    fputs("{\"schema\": \"obl-bench/1\", ", f);
    bench_json_type(f, t);
    fputs(", ", f);
    bench_json_params(f, t, c->p.n, c->p.key_bytes, c->p.value_bytes, c->p.extra);
    fprintf(f, ", \"queries\": %" PRIu64 ", \"reps\": %" PRIu64 ", \"seed\": %" PRIu64 "}",
            c->p.queries, c->p.reps, c->p.seed);
    fputs(", \"env\": ", f);
    bench_json_env(f, bench_get_env());
    fputs(", \"metrics\": {", f);
    for (int i = 0; i < c->nmetrics; i++) {
        const bench_metric *m = &c->metrics[i];
        bench_stats s = bench_summarize(m->samples, m->count);
        if (i)
            fputs(", ", f);
        bench_json_string(f, m->name);
        fputs(": {", f);
        bench_json_stats(f, &s);
        fprintf(f, ", \"reps\": %d, \"samples\": [", m->count);
        for (int k = 0; k < m->count; k++) {
            if (k)
                fputs(", ", f);
            bench_json_number(f, m->samples[k]);
        }
        fputs("]}", f);
    }
    fputs("}, \"report\": ", f);
    bench_json_string(f, report);
    fputs("}\n", f);
}

/* ---------------------------------------------------- command line -- */

static int bench_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("obl-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see obl-bench --help)\n", stderr);
    va_end(ap);
    return 2;
}

/* "1024" or "2^10" -> value; 0 on a malformed number. */
int bench_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || !isdigit((unsigned char)*s))
        return 0;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return 0;
    if (*end == '^') {
        if (v != 2 || !isdigit((unsigned char)end[1]))
            return 0;
        unsigned long long e = strtoull(end + 1, &end, 10);
        if (*end || e > 63)
            return 0;
        *out = (uint64_t)1 << e;
        return 1;
    }
    if (*end)
        return 0;
    *out = v;
    return 1;
}

/* "1024", "1024,4096", "2^10..2^20" (powers of two, doubling, inclusive). */
static int bench_parse_n_list(const char *s, uint64_t *ns, int *count)
{
    char buf[512];
    if (strlen(s) >= sizeof(buf))
        return 0;
    snprintf(buf, sizeof(buf), "%s", s);
    *count = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *dots = strstr(tok, "..");
        uint64_t lo, hi;
        if (dots) {
            *dots = 0;
            if (!bench_parse_u64(tok, &lo) || !bench_parse_u64(dots + 2, &hi) || lo == 0 ||
                hi < lo)
                return 0;
        } else {
            if (!bench_parse_u64(tok, &lo))
                return 0;
            hi = lo;
        }
        for (uint64_t n = lo; n <= hi; n *= 2) {
            if (*count == BENCH_MAX_NS)
                return 0;
            ns[(*count)++] = n;
            if (n > UINT64_MAX / 2 || lo == hi)
                break;
        }
    }
    return *count > 0;
}

static void bench_help(const bench_type *const *types, size_t ntypes)
{
    printf("usage: obl-bench <type> [--n LIST] [--key-bytes K] [--value-bytes V] [--queries Q]\n"
           "                        [--reps R] [--warmup W] [--seed S] [--json FILE] [--cpu K]\n"
           "       obl-bench list-types\n"
           "       obl-bench list-cases [--max-n N] [--large]\n"
           "       obl-bench --help | <type> --help\n\n"
           "Runs one benchmark type for each N of LIST and prints one REPORT line per case\n"
           "(the median over R repetitions); --json FILE appends one JSON object per case\n"
           "with every metric's median, min, max, quartiles and samples. See\n"
           "docs/benchmark-format.md.\n\n"
           "  --n LIST         1024 | 1024,4096 | 2^10..2^20 (powers of two, inclusive)\n"
           "  --key-bytes K    key (or address) size in bytes\n"
           "  --value-bytes V  value size in bytes\n"
           "  --queries Q      operations per timed phase (drawn before timing)\n"
           "  --reps R         repetitions, each on a fresh structure (1..%d)\n"
           "  --warmup W       untimed repetitions before them (default 0)\n"
           "  --seed S         workload seed (default 1)\n"
           "  --json FILE      append JSONL records to FILE\n"
           "  --cpu K          pin the process to CPU K (recorded in the JSON env)\n\n"
           "types:\n",
           BENCH_MAX_REPS);
    for (size_t i = 0; i < ntypes; i++)
        printf("  %-10s %-8s %s\n", types[i]->name, types[i]->report_type, types[i]->summary);
    printf("\nexit status: 0 ok, 1 a case failed while running, 2 bad usage or impossible size\n");
}

static void bench_type_help(const bench_type *t)
{
    printf("obl-bench %s: %s\nREPORT type %s, implementation %s.\n"
           "defaults: --key-bytes %" PRIu64 " --value-bytes %" PRIu64 " --queries %" PRIu64
           " --reps %" PRIu64 "\n",
           t->name, t->summary, t->report_type, t->impl, t->default_key_bytes,
           t->default_value_bytes, t->default_queries, t->default_reps);
    for (int i = 0; i < t->nextra; i++)
        printf("  %-16s %s (parameter %s, default %" PRIu64 ", %" PRIu64 "..%" PRIu64 ")\n",
               t->extra[i].flag, t->extra[i].help, t->extra[i].param, t->extra[i].def,
               t->extra[i].min, t->extra[i].max);
}

/* ------------------------------------------------------------- plan -- */

struct bench_plan {
    FILE *out;
    uint64_t max_n;
};

uint64_t bench_plan_max_n(const bench_plan *pl)
{
    return pl->max_n;
}

/* From N = 2^19 on the plan runs obl's cases with BENCH_PLAN_BIG_REPS
 * repetitions and no warm-up (the baselines are cheap and keep theirs):
 * there every repetition builds a fresh structure of tens of MiB or
 * more (fresh pages, cold caches whatever came before), so a warm-up only
 * repeats that work, and these cases took half of the default plan's time
 * (docs/suite.md). --reps on run.py still overrides. */
#define BENCH_PLAN_BIG_N (UINT64_C(1) << 19)
#define BENCH_PLAN_BIG_REPS 3

void bench_plan_add(bench_plan *pl, const bench_type *t, uint64_t n, uint64_t key_bytes,
                    uint64_t value_bytes, const uint64_t *extra, double est_memory_bytes,
                    double est_seconds)
{
    FILE *f = pl->out;
    fputc('{', f);
    bench_json_type(f, t);
    fprintf(f,
            ", \"args\": [\"--n\", \"%" PRIu64 "\", \"--key-bytes\", \"%" PRIu64
            "\", \"--value-bytes\", \"%" PRIu64 "\"",
            n, key_bytes, value_bytes);
    for (int i = 0; i < t->nextra; i++)
        fprintf(f, ", \"%s\", \"%" PRIu64 "\"", t->extra[i].flag, extra ? extra[i] : t->extra[i].def);
    if (n >= BENCH_PLAN_BIG_N && t->default_reps > BENCH_PLAN_BIG_REPS && !strcmp(t->impl, "obl")) {
        fprintf(f, ", \"--reps\", \"%d\", \"--warmup\", \"0\"", BENCH_PLAN_BIG_REPS);
        est_seconds *= (double)BENCH_PLAN_BIG_REPS / (double)(t->default_reps + 1);
    }
    fputs("], ", f);
    bench_json_params(f, t, n, key_bytes, value_bytes, extra);
    fputs("}, \"est_memory_bytes\": ", f);
    bench_json_number(f, ceil(est_memory_bytes));
    fputs(", \"est_seconds\": ", f);
    bench_json_number(f, est_seconds);
    fputs("}\n", f);
}

static int bench_list_cases(int argc, char **argv, const bench_type *const *types, size_t ntypes)
{
    uint64_t max_n = 0;
    int large = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--large"))
            large = 1;
        else if (!strcmp(argv[i], "--max-n") && i + 1 < argc) {
            if (!bench_parse_u64(argv[++i], &max_n) || max_n == 0)
                return bench_usage_error("list-cases: bad --max-n '%s'", argv[i]);
        } else
            return bench_usage_error("list-cases: unknown flag '%s'", argv[i]);
    }
    if (!max_n)
        max_n = large ? BENCH_LARGE_MAX_N : BENCH_DEFAULT_MAX_N;
    bench_plan pl = {stdout, max_n};
    for (size_t t = 0; t < ntypes; t++)
        for (uint64_t n = BENCH_PLAN_MIN_N; n <= max_n; n *= 2)
            types[t]->plan(&pl, n);
    return 0;
}

/* ------------------------------------------------------- run a type -- */

static int bench_check_generic(const bench_params *p, char *msg, size_t len)
{
    if (p->n == 0 || p->n > (UINT64_C(1) << 40))
        snprintf(msg, len, "N must be in 1..2^40, not %" PRIu64, p->n);
    else if (p->key_bytes == 0 || p->key_bytes > 4096)
        snprintf(msg, len, "--key-bytes must be in 1..4096, not %" PRIu64, p->key_bytes);
    else if (p->value_bytes == 0 || p->value_bytes > (1u << 20))
        snprintf(msg, len, "--value-bytes must be in 1..2^20, not %" PRIu64, p->value_bytes);
    else if (p->queries == 0 || p->queries > (UINT64_C(1) << 34))
        snprintf(msg, len, "--queries must be in 1..2^34, not %" PRIu64, p->queries);
    else if (p->reps == 0 || p->reps > BENCH_MAX_REPS)
        snprintf(msg, len, "--reps must be in 1..%d, not %" PRIu64, BENCH_MAX_REPS, p->reps);
    else
        return 0;
    return 1;
}

static int bench_run_case(bench_case *c, uint64_t warmup, FILE *json)
{
    const bench_type *t = c->type;
    uint64_t t0 = bench_now_ns();
    void *state = t->setup(c);
    if (!state) {
        fprintf(stderr, "obl-bench: %s N=%" PRIu64 ": setup failed\n", t->name, c->p.n);
        return 1;
    }
    int rc = 0;
    uint64_t total = warmup + c->p.reps;
    uint64_t last_progress = t0;
    for (uint64_t r = 0; r < total && rc == 0; r++) {
        int is_warmup = r < warmup;
        c->rep = is_warmup ? 0 : r - warmup;
        rc = t->run(c, state);
        if (is_warmup) /* discard what the warm-up recorded, keep the order */
            for (int i = 0; i < c->nmetrics; i++)
                c->metrics[i].count = 0;
        uint64_t now = bench_now_ns();
        if (now - t0 > 1000000000u && now - last_progress > 1000000000u / 2) {
            fprintf(stderr,
                    "obl-bench: %s N=%" PRIu64 " K=%" PRIu64 " V=%" PRIu64
                    ": %s %" PRIu64 "/%" PRIu64 " done, %.1f s\n",
                    t->name, c->p.n, c->p.key_bytes, c->p.value_bytes,
                    is_warmup ? "warm-up" : "rep", is_warmup ? r + 1 : r - warmup + 1,
                    is_warmup ? warmup : c->p.reps, (double)(now - t0) / 1e9);
            last_progress = now;
        }
    }
    t->teardown(state);
    if (rc != 0) {
        fprintf(stderr, "obl-bench: %s N=%" PRIu64 ": repetition failed\n", t->name, c->p.n);
        return 1;
    }
    char report[4096];
    bench_report_line(c, report, sizeof(report));
    printf("%s\n", report);
    fflush(stdout);
    if (json) {
        bench_write_json(json, c, report);
        fflush(json);
    }
    return 0;
}

/* A type's command line, parsed: the case's parameters, the sizes to run,
 * the warm-up repetitions and the JSON file. */
typedef struct bench_args {
    bench_params p;
    uint64_t ns[BENCH_MAX_NS];
    int nn;
    uint64_t warmup; /* the peers time their first repetition too */
    const char *json_path;
} bench_args;

/* Splits argv[*i] into a flag's name and value (--flag VALUE or
 * --flag=VALUE: every flag takes a value); 0 if the value is missing. */
static int bench_flag_split(int argc, char **argv, int *i, char name[64], const char **val)
{
    const char *a = argv[*i];
    const char *eq = strchr(a, '=');
    if (eq && (size_t)(eq - a) < 64) {
        memcpy(name, a, (size_t)(eq - a));
        name[eq - a] = 0;
        *val = eq + 1;
        return 1;
    }
    snprintf(name, 64, "%s", a);
    if (*i + 1 >= argc)
        return 0;
    *val = argv[++*i];
    return 1;
}

/* The integer a numeric flag sets: a common one or the type's own; NULL if
 * the flag is unknown. */
static uint64_t *bench_flag_dst(const bench_type *t, bench_args *a, const char *name)
{
    static const char *const common[] = {"--key-bytes", "--value-bytes", "--queries", "--reps",
                                         "--seed", "--warmup"};
    uint64_t *const dsts[] = {&a->p.key_bytes, &a->p.value_bytes, &a->p.queries,
                              &a->p.reps,      &a->p.seed,        &a->warmup};
    for (size_t k = 0; k < sizeof(common) / sizeof(common[0]); k++)
        if (!strcmp(name, common[k]))
            return dsts[k];
    for (int k = 0; k < t->nextra; k++)
        if (!strcmp(name, t->extra[k].flag))
            return &a->p.extra[k];
    return NULL;
}

/* One flag and its value; 0, or the exit status of a usage error. */
static int bench_flag(const bench_type *t, bench_args *a, const char *name, const char *val)
{
    if (!strcmp(name, "--n") || (t->n_flag && !strcmp(name, t->n_flag))) {
        if (!bench_parse_n_list(val, a->ns, &a->nn))
            return bench_usage_error("%s: bad --n '%s' (e.g. 1024, 1024,4096, 2^10..2^20)",
                                     t->name, val);
        return 0;
    }
    if (!strcmp(name, "--json")) {
        a->json_path = val;
        return 0;
    }
    if (!strcmp(name, "--cpu")) {
        uint64_t k;
        if (!bench_parse_u64(val, &k))
            return bench_usage_error("%s: --cpu needs a CPU number, not '%s'", t->name, val);
        if (bench_pin_cpu(k) != 0)
            return bench_usage_error("%s: cannot pin to CPU %s: %s (--cpu takes a CPU "
                                     "this process may use)",
                                     t->name, val, strerror(errno));
        return 0;
    }
    uint64_t *dst = bench_flag_dst(t, a, name);
    if (!dst)
        return bench_usage_error("%s: unknown flag '%s'", t->name, name);
    if (!bench_parse_u64(val, dst))
        return bench_usage_error("%s: %s needs a non-negative integer, not '%s'", t->name,
                                 name, val);
    return 0;
}

/* The ranges of the parsed arguments, and every case's own check before
 * any runs (a bad size fails fast); 0, or the exit status of a usage error. */
static int bench_args_check(const bench_type *t, bench_args *a)
{
    if (a->warmup > 100)
        return bench_usage_error("%s: --warmup must be in 0..100", t->name);
    for (int k = 0; k < t->nextra; k++)
        if (a->p.extra[k] < t->extra[k].min || a->p.extra[k] > t->extra[k].max)
            return bench_usage_error("%s: %s must be in %" PRIu64 "..%" PRIu64, t->name,
                                     t->extra[k].flag, t->extra[k].min, t->extra[k].max);
    for (int k = 0; k < a->nn; k++) {
        char msg[256];
        a->p.n = a->ns[k];
        if (bench_check_generic(&a->p, msg, sizeof(msg)) ||
            (t->check && t->check(&a->p, msg, sizeof(msg))))
            return bench_usage_error("%s: %s", t->name, msg);
    }
    return 0;
}

/* Runs the cases of every size, appending their JSON lines to the file
 * if one is named; the exit status. */
static int bench_run_cases(const bench_type *t, const bench_args *a)
{
    FILE *json = NULL;
    if (a->json_path) {
        json = fopen(a->json_path, "a");
        if (!json) {
            fprintf(stderr, "obl-bench: cannot open %s: %s\n", a->json_path, strerror(errno));
            return 2;
        }
    }
    bench_case *c = calloc(1, sizeof(*c));
    if (!c)
        fprintf(stderr, "obl-bench: out of memory\n");
    int rc = c ? 0 : 1;
    for (int k = 0; c && k < a->nn && rc == 0; k++) {
        memset(c, 0, sizeof(*c));
        c->type = t;
        c->p = a->p;
        c->p.n = a->ns[k];
        rc = bench_run_case(c, a->warmup, json);
    }
    free(c);
    if (json)
        fclose(json);
    return rc;
}

/* obl-bench TYPE FLAGS...: the exit status (0, 1 on a failed case, 2 on bad usage). */
static int bench_run_type(const bench_type *t, int argc, char **argv)
{
    bench_args a = {.nn = 1, .ns = {1024}};
    a.p.key_bytes = t->default_key_bytes;
    a.p.value_bytes = t->default_value_bytes;
    a.p.queries = t->default_queries;
    a.p.reps = t->default_reps;
    a.p.seed = 1;
    for (int i = 0; i < t->nextra; i++)
        a.p.extra[i] = t->extra[i].def;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            bench_type_help(t);
            return 0;
        }
        char name[64];
        const char *val = NULL;
        if (!bench_flag_split(argc, argv, &i, name, &val))
            return bench_usage_error("%s: flag '%s' needs a value", t->name, argv[i]);
        int rc = bench_flag(t, &a, name, val);
        if (rc)
            return rc;
    }
    int rc = bench_args_check(t, &a);
    return rc ? rc : bench_run_cases(t, &a);
}

int bench_main(int argc, char **argv, const bench_type *const *types, size_t ntypes)
{
    /* A fixed mmap threshold: every large block comes fresh from the kernel
     * in every repetition (glibc's dynamic threshold would otherwise keep
     * blocks of earlier repetitions in the heap, so that only the first
     * repetition paid for page faults and showed an RSS growth). */
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    if (argc < 2)
        return bench_usage_error("missing benchmark type");
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        bench_help(types, ntypes);
        return 0;
    }
    if (!strcmp(cmd, "list-types")) {
        if (argc > 2)
            return bench_usage_error("list-types takes no arguments");
        for (size_t i = 0; i < ntypes; i++)
            printf("%s\t%s\t%s\n", types[i]->name, types[i]->report_type, types[i]->summary);
        return 0;
    }
    if (!strcmp(cmd, "list-cases"))
        return bench_list_cases(argc - 2, argv + 2, types, ntypes);
    for (size_t i = 0; i < ntypes; i++)
        if (!strcmp(cmd, types[i]->name))
            return bench_run_type(types[i], argc - 2, argv + 2);
    return bench_usage_error("unknown benchmark type '%s'", cmd);
}
