/* SPDX-License-Identifier: MIT */
/*
 * obl-microbench: micro-benchmarks of the constant-time primitives, each
 * answering one question so that design choices can cite a number.
 *
 *   cmov    What does a conditional copy obl_ct_cmov cost per block size
 *           (8 B .. 4 KiB), for each variant: the inline build-time default
 *           and the named out-of-line portable, AVX2 and AVX-512 ones (the
 *           latter two only where the CPU has them)?
 *   lookup  What does a full-table lookup obl_ct_lookup cost against a
 *           direct index, per table size (16 .. 65536 entries of 8 and 64
 *           bytes)? The ct cost against an ORAM access gives the table size
 *           below which a linear scan beats a tree (cited by the ORAMs'
 *           recursion cut-off).
 *   memory  How many random cache lines per microsecond can one core move
 *           from a region of 1 MiB .. 256 MiB, on the pages the trees get
 *           (obl_default_allocator: 2 MiB pages from 4 MiB on), by a chain
 *           of dependent loads (the latency), independent loads, read and
 *           write prefetches, and read-modify-writes (what an eviction does
 *           to every line of its path)? An ORAM access that touches K lines
 *           outside the caches cannot take less than K over that rate
 *           (docs/oram.md, "What limits us: compute plus memory").
 *   layout  Would the tree's paths cost less if its levels were stored as
 *           blocked subtrees of G levels (the van Emde Boas idea: a path's
 *           G consecutive buckets in one 2^G-bucket block) instead of heap
 *           order? Per NRORAM 8/8 access at 2^20 (20 levels of 64-byte
 *           buckets, the top 10 left to the caches as pf_k0 does): three
 *           random paths, their lines prefetched for writing deepest level
 *           first, then each read-modify-written.
 *
 * Method: every number is the median over R repetitions (default 11) with
 * its quartiles and range, never a best-of. A repetition times a loop of
 * many calls with CLOCK_MONOTONIC and divides. Control bits and indices are
 * random and drawn before timing; sizes are passed at run time (as the
 * library's structures pass their block size), so the compiler cannot
 * specialise the call for a constant length. Buffers are small enough to
 * stay in L1/L2 for cmov: it measures the instruction cost, not memory.
 *
 * usage: obl-microbench [cmov|lookup|memory|layout|all] [--reps R] [--max-mib M] [--json FILE]
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <obl/obl.h>

#include "ct.h"
#include "harness.h"

#define MB_CTLS 4096 /* random control bits / indices, cycled */

typedef void (*cmov_fn)(uint64_t ctl, void *dst, const void *src, size_t len);

/* The inline default, in a loop of its own so the call is inlined as the
 * library's code inlines it; len stays a run-time value. */
static __attribute__((noinline)) void mb_cmov_inline_loop(const uint64_t *ctl, unsigned char *dst,
                                                          const unsigned char *src, size_t len,
                                                          size_t nblk_mask, uint64_t calls)
{
    for (uint64_t i = 0; i < calls; i++)
        obl_ct_cmov(ctl[i & (MB_CTLS - 1)], dst + (i & nblk_mask) * len,
                    src + ((i * 7 + 3) & nblk_mask) * len, len);
}

static __attribute__((noinline)) void mb_cmov_fn_loop(cmov_fn f, const uint64_t *ctl,
                                                      unsigned char *dst, const unsigned char *src,
                                                      size_t len, size_t nblk_mask, uint64_t calls)
{
    for (uint64_t i = 0; i < calls; i++)
        f(ctl[i & (MB_CTLS - 1)], dst + (i & nblk_mask) * len,
          src + ((i * 7 + 3) & nblk_mask) * len, len);
}

static __attribute__((noinline)) uint64_t mb_lookup_ct(const unsigned char *table, size_t n,
                                                       size_t es, const uint64_t *idx,
                                                       uint64_t calls, unsigned char *out)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < calls; i++) {
        obl_ct_lookup(table, n, es, idx[i & (MB_CTLS - 1)], out);
        acc += out[0] ^ out[es - 1];
    }
    return acc;
}

static __attribute__((noinline)) uint64_t mb_lookup_ct64(const uint64_t *table, size_t n,
                                                         const uint64_t *idx, uint64_t calls)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < calls; i++)
        acc += obl_ct_lookup64(table, n, idx[i & (MB_CTLS - 1)]);
    return acc;
}

static __attribute__((noinline)) uint64_t mb_lookup_direct(const unsigned char *table, size_t es,
                                                           const uint64_t *idx, uint64_t calls,
                                                           unsigned char *out)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < calls; i++) {
        memcpy(out, table + idx[i & (MB_CTLS - 1)] * es, es);
        acc += out[0] ^ out[es - 1];
    }
    return acc;
}

static uint64_t mb_clamp(uint64_t x, uint64_t lo, uint64_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

static void mb_json_row(FILE *f, const char *bench, const char *variant, uint64_t bytes,
                        uint64_t entries, const char *metric, const double *s, int reps)
{
    if (!f)
        return;
    bench_stats st = bench_summarize(s, reps);
    fputs("{\"schema\": \"obl-microbench/1\", \"bench\": ", f);
    bench_json_string(f, bench);
    fputs(", \"variant\": ", f);
    bench_json_string(f, variant);
    fprintf(f, ", \"bytes\": %" PRIu64 ", \"entries\": %" PRIu64 ", \"metrics\": {", bytes,
            entries);
    bench_json_string(f, metric);
    fputs(": {", f);
    bench_json_stats(f, &st);
    fprintf(f, ", \"reps\": %d}}, \"env\": ", reps);
    bench_json_env(f, bench_get_env());
    fputs("}\n", f);
}

static int mb_cmov(int reps, FILE *json)
{
    static const size_t sizes[] = {8, 16, 32, 64, 128, 256, 512, 1024, 4096};
    struct {
        const char *name;
        cmov_fn f; /* NULL: the inline default */
        int ok;
    } variants[] = {
        {"inline", NULL, 1},
        {"portable", obl_ct_cmov_portable_fn, 1},
        {"avx2", obl_ct_cmov_avx2, obl_ct_cpu_has_avx2()},
        {"avx512", obl_ct_cmov_avx512, obl_ct_cpu_has_avx512()},
    };
    uint64_t ctl[MB_CTLS];
    bench_rng r;
    bench_rng_seed(&r, 42);
    for (int i = 0; i < MB_CTLS; i++)
        ctl[i] = bench_rng_next(&r) & 1;
    unsigned char *dst = aligned_alloc(64, 16384), *src = aligned_alloc(64, 16384);
    if (!dst || !src)
        return 1;
    for (int i = 0; i < 16384; i++) {
        dst[i] = (unsigned char)bench_rng_next(&r);
        src[i] = (unsigned char)bench_rng_next(&r);
    }
    printf("# question: what does a conditional copy obl_ct_cmov cost per block size, per variant?\n"
           "# inline = the build-time default (%s) inlined into the caller; the others are the named\n"
           "# out-of-line functions of src/ct.h called through a pointer. ns per call: median [q1, q3]\n"
           "# over %d repetitions; GB/s = block bytes / median time.\n",
           obl_ct_variant(), reps);
    printf("%-9s %6s %10s %10s %10s %9s\n", "variant", "bytes", "ns/call", "q1", "q3", "GB/s");
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        if (!variants[v].ok) {
            printf("%-9s (not supported by this CPU: skipped)\n", variants[v].name);
            continue;
        }
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t len = sizes[k];
            size_t nblk = 8192 / len < 2 ? 2 : 8192 / len; /* power of two */
            uint64_t calls = mb_clamp((UINT64_C(1) << 24) / len, 1u << 14, 1u << 21);
            double s[BENCH_MAX_REPS];
            for (int rep = -1; rep < reps; rep++) { /* rep -1: warm-up */
                uint64_t t0 = bench_now_ns();
                if (variants[v].f)
                    mb_cmov_fn_loop(variants[v].f, ctl, dst, src, len, nblk - 1, calls);
                else
                    mb_cmov_inline_loop(ctl, dst, src, len, nblk - 1, calls);
                uint64_t t1 = bench_now_ns();
                if (rep >= 0)
                    s[rep] = (double)(t1 - t0) / (double)calls;
            }
            bench_consume(dst[0]);
            bench_stats st = bench_summarize(s, reps);
            printf("%-9s %6zu %10.3f %10.3f %10.3f %9.2f\n", variants[v].name, len, st.median,
                   st.q1, st.q3, (double)len / st.median);
            mb_json_row(json, "cmov", variants[v].name, len, 0, "ns_per_call", s, reps);
        }
    }
    free(dst);
    free(src);
    return 0;
}

static int mb_lookup(int reps, FILE *json)
{
    static const size_t entry_sizes[] = {8, 64};
    /* ORAM access latencies to compare against: the range of tree ORAM
     * accesses at 2^10 .. 2^20 (docs/oram.md, "Measured costs"). */
    static const double oram_us[] = {0.25, 0.5, 1.0, 2.0};
    printf("# question: what does a full-table lookup obl_ct_lookup cost against a direct index,\n"
           "# per table size, and up to which size does it beat an ORAM access of a given cost?\n"
           "# ns per lookup: median [q1, q3] over %d repetitions, random indices drawn before timing;\n"
           "# entry size passed at run time; direct = memcpy from table + i * size.\n",
           reps);
    printf("# ct64_ns: obl_ct_lookup64, the word-sized variant (8-byte entries only).\n");
    printf("%5s %7s %12s %10s %10s %10s %9s %9s %10s\n", "bytes", "entries", "ct_ns", "q1", "q3",
           "direct_ns", "ratio", "ct_GB/s", "ct64_ns");
    unsigned char *table = aligned_alloc(64, (size_t)65536 * 64);
    unsigned char out[64];
    if (!table)
        return 1;
    bench_rng r;
    bench_rng_seed(&r, 7);
    for (size_t i = 0; i < (size_t)65536 * 64; i++)
        table[i] = (unsigned char)bench_rng_next(&r);
    for (size_t e = 0; e < sizeof(entry_sizes) / sizeof(entry_sizes[0]); e++) {
        size_t es = entry_sizes[e];
        size_t crossover[sizeof(oram_us) / sizeof(oram_us[0])] = {0};
        for (size_t n = 16; n <= 65536; n *= 2) {
            uint64_t idx[MB_CTLS];
            for (int i = 0; i < MB_CTLS; i++)
                idx[i] = bench_rng_below(&r, n);
            uint64_t ct_calls = mb_clamp((UINT64_C(1) << 26) / (n * es), 16, 1u << 16);
            uint64_t d_calls = 1u << 20;
            double sc[BENCH_MAX_REPS], sd[BENCH_MAX_REPS], s64[BENCH_MAX_REPS];
            uint64_t acc = 0;
            for (int rep = -1; rep < reps; rep++) {
                uint64_t t0 = bench_now_ns();
                acc += mb_lookup_ct(table, n, es, idx, ct_calls, out);
                uint64_t t1 = bench_now_ns();
                acc += mb_lookup_direct(table, es, idx, d_calls, out);
                uint64_t t2 = bench_now_ns();
                if (es == 8)
                    acc += mb_lookup_ct64((const uint64_t *)table, n, idx, ct_calls);
                uint64_t t3 = bench_now_ns();
                if (rep >= 0) {
                    sc[rep] = (double)(t1 - t0) / (double)ct_calls;
                    sd[rep] = (double)(t2 - t1) / (double)d_calls;
                    s64[rep] = (double)(t3 - t2) / (double)ct_calls;
                }
            }
            bench_consume(acc);
            bench_stats c = bench_summarize(sc, reps), d = bench_summarize(sd, reps);
            printf("%5zu %7zu %12.1f %10.1f %10.1f %10.2f %9.0f %9.2f", es, n, c.median, c.q1,
                   c.q3, d.median, c.median / d.median, (double)(n * es) / c.median);
            if (es == 8) {
                printf(" %10.1f\n", bench_summarize(s64, reps).median);
                mb_json_row(json, "lookup", "ct64", es, n, "ns_per_lookup", s64, reps);
            } else {
                printf(" %10s\n", "-");
            }
            for (size_t t = 0; t < sizeof(oram_us) / sizeof(oram_us[0]); t++)
                if (c.median <= oram_us[t] * 1000.0)
                    crossover[t] = n;
            mb_json_row(json, "lookup", "ct", es, n, "ns_per_lookup", sc, reps);
            mb_json_row(json, "lookup", "direct", es, n, "ns_per_lookup", sd, reps);
        }
        for (size_t t = 0; t < sizeof(oram_us) / sizeof(oram_us[0]); t++) {
            if (crossover[t])
                printf("# answer: %zu-byte entries: obl_ct_lookup stays under %.2f us up to %zu "
                       "entries\n", es, oram_us[t], crossover[t]);
            else
                printf("# answer: %zu-byte entries: obl_ct_lookup exceeds %.2f us already at 16 "
                       "entries\n", es, oram_us[t]);
        }
    }
    free(table);
    return 0;
}

/* The memory patterns: each visits `q` lines of `base`, chosen by idx
 * (or by the chain stored in the lines), and returns something that
 * depends on every load. */
static __attribute__((noinline)) uint64_t mb_mem_chase(const unsigned char *base, uint64_t q)
{
    uint64_t at = 0;
    for (uint64_t i = 0; i < q; i++)
        memcpy(&at, base + at * 64, 8);
    return at;
}

static __attribute__((noinline)) uint64_t mb_mem_load(const unsigned char *base,
                                                      const uint32_t *idx, uint64_t q)
{
    uint64_t acc = 0;
    for (uint64_t i = 0; i < q; i++)
        acc += base[(size_t)idx[i] * 64 + 8];
    return acc;
}

static __attribute__((noinline)) uint64_t mb_mem_prefetch(const unsigned char *base,
                                                          const uint32_t *idx, uint64_t q)
{
    for (uint64_t i = 0; i < q; i++)
        __builtin_prefetch(base + (size_t)idx[i] * 64, 0, 3);
    return 0;
}

static __attribute__((noinline)) uint64_t mb_mem_prefetchw(const unsigned char *base,
                                                           const uint32_t *idx, uint64_t q)
{
    for (uint64_t i = 0; i < q; i++)
        __builtin_prefetch(base + (size_t)idx[i] * 64, 1, 3);
    return 0;
}

static __attribute__((noinline)) uint64_t mb_mem_rmw(unsigned char *base, const uint32_t *idx,
                                                     uint64_t q)
{
    for (uint64_t i = 0; i < q; i++)
        base[(size_t)idx[i] * 64 + 8]++;
    return base[8];
}

/* base's `lines` cache lines as one random cycle (Sattolo's shuffle): each
 * line's first 8 bytes hold the next line's number. 0, or 1 if out of
 * memory. */
static int mb_mem_cycle(unsigned char *base, size_t lines, bench_rng *r)
{
    uint32_t *perm = malloc(lines * sizeof(uint32_t));
    if (!perm)
        return 1;
    for (size_t i = 0; i < lines; i++)
        perm[i] = (uint32_t)i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = (size_t)bench_rng_below(r, i);
        uint32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t i = 0; i < lines; i++) {
        uint64_t next = perm[i];
        memcpy(base + (size_t)i * 64, &next, 8);
    }
    free(perm);
    return 0;
}

enum { MB_MEM_NPAT = 5 }; /* chase, load, prefetch, prefetchw, rmw */

/* reps timed runs (after one warm-up) of each access pattern over base:
 * s[p][rep], ns per line for the chase (qchase lines), lines per us for
 * the others (q lines of idx). */
static void mb_mem_time(unsigned char *base, const uint32_t *idx, uint64_t q, uint64_t qchase,
                        int reps, double s[MB_MEM_NPAT][BENCH_MAX_REPS])
{
    uint64_t acc = 0;
    for (int rep = -1; rep < reps; rep++) {
        for (int p = 0; p < MB_MEM_NPAT; p++) {
            uint64_t t0 = bench_now_ns();
            switch (p) {
            case 0: acc += mb_mem_chase(base, qchase); break;
            case 1: acc += mb_mem_load(base, idx, q); break;
            case 2: acc += mb_mem_prefetch(base, idx, q); break;
            case 3: acc += mb_mem_prefetchw(base, idx, q); break;
            default: acc += mb_mem_rmw(base, idx, q); break;
            }
            double ns = (double)(bench_now_ns() - t0);
            if (rep >= 0)
                s[p][rep] = p == 0 ? ns / (double)qchase : (double)q / ns * 1000.0;
        }
    }
    bench_consume(acc);
}

static int mb_memory(int reps, size_t max_mib, FILE *json)
{
    static const size_t mib[] = {1, 2, 4, 8, 16, 32, 48, 64, 128, 256};
    static const char *names[MB_MEM_NPAT] = {"chase", "load", "prefetch", "prefetchw", "rmw"};
    const uint64_t q = UINT64_C(1) << 20, qchase = UINT64_C(1) << 17;
    obl_allocator al = obl_default_allocator();
    uint32_t *idx = malloc(q * sizeof(uint32_t));
    if (!idx)
        return 1;
    printf("# question: how many random cache lines per microsecond does one core move from a region\n"
           "# of S bytes (obl_default_allocator's pages: 2 MiB ones from 4 MiB on)? chase: ns per\n"
           "# line of a chain of dependent loads (a random cycle through every line); load, prefetch,\n"
           "# prefetchw, rmw (load and store one byte): lines per us for %" PRIu64 " independent random\n"
           "# lines drawn before timing. Medians over %d repetitions [q1, q3].\n",
           q, reps);
    printf("%8s %16s %18s %18s %18s %18s\n", "MiB", "chase ns/line", "load lines/us",
           "prefetch lines/us", "prefetchw lines/us", "rmw lines/us");
    bench_rng r;
    bench_rng_seed(&r, 11);
    double floor_rmw = 0, floor_pf = 0;
    size_t top = 0;
    for (size_t k = 0; k < sizeof(mib) / sizeof(mib[0]) && mib[k] <= max_mib; k++) {
        top = mib[k];
        size_t bytes = mib[k] << 20, lines = bytes / 64;
        unsigned char *base = al.alloc(al.opaque, bytes, 64);
        if (base)
            memset(base, 0, bytes);
        if (!base || mb_mem_cycle(base, lines, &r)) {
            if (base)
                al.free(al.opaque, base, bytes);
            free(idx);
            return 1;
        }
        for (uint64_t i = 0; i < q; i++)
            idx[i] = (uint32_t)bench_rng_below(&r, lines);
        double s[MB_MEM_NPAT][BENCH_MAX_REPS];
        mb_mem_time(base, idx, q, qchase, reps, s);
        printf("%8zu", mib[k]);
        for (int p = 0; p < MB_MEM_NPAT; p++) {
            bench_stats st = bench_summarize(s[p], reps);
            printf(" %7.1f [%.0f-%.0f]", st.median, st.q1, st.q3);
            mb_json_row(json, "memory", names[p], bytes, lines,
                        p == 0 ? "ns_per_line" : "lines_per_us", s[p], reps);
            if (p == 4)
                floor_rmw = st.median; /* the largest region's, at the end */
            if (p == 2)
                floor_pf = st.median;
        }
        printf("\n");
        al.free(al.opaque, base, bytes);
    }
    printf("# answer: from %zu MiB one core moves about %.0f random lines per us by prefetches and %.0f\n"
           "# by read-modify-writes: an access that touches K such lines takes at least K / %.0f us\n",
           top, floor_pf, floor_rmw, floor_pf);
    free(idx);
    return 0;
}

/* The tree layouts of mb_layout: G = 0 is heap order (level k's 2^k
 * buckets contiguous, root first); G > 0 groups the levels by G from the
 * leaves up (the top group takes the remainder) and stores each group as
 * 2^top subtrees of h levels, each in a block of 2^h buckets (one bucket
 * of padding), in heap order inside. */
typedef struct {
    uint32_t D, logL, G, ng;
    uint32_t group[64]; /* group of each level */
    uint32_t top[64];   /* first level of each group */
    uint32_t h[64];     /* levels in each group */
    uint64_t off[64];   /* first bucket of each group */
    uint64_t buckets;   /* buckets in all */
} mb_tree;

static void mb_tree_init(mb_tree *t, uint32_t D, uint32_t G)
{
    memset(t, 0, sizeof(*t));
    t->D = D;
    t->logL = D - 1;
    t->G = G;
    if (!G) {
        t->buckets = (UINT64_C(1) << D) - 1;
        return;
    }
    uint32_t k = 0, rem = D % G;
    if (rem) {
        t->top[0] = 0;
        t->h[0] = rem;
        t->ng = 1;
        k = rem;
    }
    for (; k < D; k += G, t->ng++) {
        t->top[t->ng] = k;
        t->h[t->ng] = G;
    }
    for (uint32_t g = 0; g < t->ng; g++) {
        for (uint32_t j = 0; j < t->h[g]; j++)
            t->group[t->top[g] + j] = g;
        t->off[g] = t->buckets;
        t->buckets += (UINT64_C(1) << t->top[g]) << t->h[g];
    }
}

/* Bucket of level k on the path to `leaf`. */
static inline uint64_t mb_tree_bucket(const mb_tree *t, uint64_t leaf, uint32_t k)
{
    uint64_t node = leaf >> (t->logL - k);
    if (!t->G)
        return ((UINT64_C(1) << k) - 1) + node;
    uint32_t g = t->group[k], r = k - t->top[g];
    uint64_t in = ((UINT64_C(1) << r) - 1) + (node & ((UINT64_C(1) << r) - 1));
    return t->off[g] + ((node >> r) << t->h[g]) + in;
}

/* q accesses of three paths of w levels each, their buckets listed in
 * `bk` (drawn before timing, so every layout runs the same instructions):
 * prefetches for writing (deepest first), then read-modify-writes. */
static __attribute__((noinline)) uint64_t mb_tree_paths(unsigned char *base, const uint32_t *bk,
                                                        uint64_t q, uint32_t w)
{
    for (uint64_t i = 0; i < q; i++, bk += 3 * w) {
        for (uint32_t j = 3 * w; j-- > 0;)
            __builtin_prefetch(base + (size_t)bk[j] * 64, 1, 3);
        for (uint32_t j = 0; j < 3 * w; j++)
            base[(size_t)bk[j] * 64 + 8]++;
    }
    return base[8];
}

static int mb_layout(int reps, size_t max_mib, FILE *json)
{
    static const uint32_t gs[] = {0, 2, 3, 4, 5};
    enum { NL = 5 };
    const uint64_t q = UINT64_C(1) << 16;
    uint32_t D = 20, k0 = 10; /* NRORAM 8/8 at 2^20: 2^19 leaves, pf_k0 = 10 */
    while (D > 12 && ((UINT64_C(1) << D) * 64 * 3 / 2) > ((uint64_t)max_mib << 20))
        D--; /* the test suite's --max-mib 16 */
    obl_allocator al = obl_default_allocator();
    const uint32_t w = D - k0;
    uint32_t *leaves = malloc(3 * q * sizeof(uint32_t));
    uint32_t *bk = malloc(3 * q * w * sizeof(uint32_t));
    if (!leaves || !bk) {
        free(leaves);
        free(bk);
        return 1;
    }
    bench_rng r;
    bench_rng_seed(&r, 13);
    for (uint64_t i = 0; i < 3 * q; i++)
        leaves[i] = (uint32_t)bench_rng_below(&r, UINT64_C(1) << (D - 1));
    printf("# question: do three random paths of a %u-level tree of 64-byte buckets (levels %u..%u;\n"
           "# the top %u levels stay cached) cost less stored as blocked subtrees of G levels than in\n"
           "# heap order (G = 0)? ns per access (3 paths: prefetchw deepest first, then a\n"
           "# read-modify-write of every line), %" PRIu64 " accesses, medians over %d repetitions [q1, q3].\n",
           D, k0, D - 1, k0, q, reps);
    printf("%4s %10s %22s %12s\n", "G", "MiB", "ns per access", "/ heap");
    double heap = 0, best = 0;
    uint32_t best_g = 0;
    for (int l = 0; l < NL; l++) {
        mb_tree t;
        mb_tree_init(&t, D, gs[l]);
        size_t bytes = (size_t)t.buckets * 64 + 64;
        unsigned char *base = al.alloc(al.opaque, bytes, 64);
        if (!base) {
            free(leaves);
            free(bk);
            return 1;
        }
        memset(base, 0, bytes);
        /* each path's buckets deepest level last, as the library's pathb */
        for (uint64_t i = 0; i < 3 * q; i++)
            for (uint32_t k = k0; k < D; k++)
                bk[i * w + (k - k0)] = (uint32_t)mb_tree_bucket(&t, leaves[i], k);
        double s[BENCH_MAX_REPS];
        uint64_t acc = 0;
        for (int rep = -1; rep < reps; rep++) {
            uint64_t t0 = bench_now_ns();
            acc += mb_tree_paths(base, bk, q, w);
            if (rep >= 0)
                s[rep] = (double)(bench_now_ns() - t0) / (double)q;
        }
        bench_consume(acc);
        bench_stats st = bench_summarize(s, reps);
        if (!gs[l])
            heap = st.median;
        else if (!best_g || st.median < best) {
            best = st.median;
            best_g = gs[l];
        }
        char name[16];
        snprintf(name, sizeof(name), gs[l] ? "blocked-%u" : "heap", gs[l]);
        printf("%4u %10.1f %10.1f [%.1f-%.1f] %12.3f\n", gs[l], (double)bytes / 1048576.0, st.median,
               st.q1, st.q3, st.median / heap);
        mb_json_row(json, "layout", name, bytes, t.buckets, "ns_per_access", s, reps);
        al.free(al.opaque, base, bytes);
    }
    printf("# answer: the best blocked layout (G = %u) takes %.3f of heap order's time per access\n",
           best_g, best / heap);
    free(leaves);
    free(bk);
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = "all", *json_path = NULL;
    uint64_t reps = 11, max_mib = 256;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: obl-microbench [cmov|lookup|memory|layout|all] [--reps R] [--max-mib M] [--json FILE]\n"
                   "  cmov    cost of obl_ct_cmov per block size (8 B .. 4 KiB) and variant\n"
                   "  lookup  cost of obl_ct_lookup against a direct index, 16 .. 65536 entries\n"
                   "  memory  random cache lines per us from 1 .. 256 MiB: chain, loads, prefetches,\n"
                   "          read-modify-writes (the memory floor of an ORAM access);\n"
                   "          --max-mib M stops at the largest region of at most M MiB (1..256)\n"
                   "  layout  three random paths of a 2^20 tree (heap order against blocked subtrees of\n"
                   "          G levels), ns per access; --max-mib M shrinks the tree to fit M MiB\n");
            return 0;
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
            char *end;
            reps = strtoull(argv[++i], &end, 10);
            if (*end || reps < 1 || reps > BENCH_MAX_REPS) {
                fprintf(stderr, "obl-microbench: --reps must be in 1..%d\n", BENCH_MAX_REPS);
                return 2;
            }
        } else if (!strcmp(argv[i], "--max-mib") && i + 1 < argc) {
            char *end;
            max_mib = strtoull(argv[++i], &end, 10);
            if (*end || max_mib < 1 || max_mib > 256) {
                fprintf(stderr, "obl-microbench: --max-mib must be in 1..256\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--json") && i + 1 < argc) {
            json_path = argv[++i];
        } else if (!strcmp(argv[i], "cmov") || !strcmp(argv[i], "lookup") ||
                   !strcmp(argv[i], "memory") || !strcmp(argv[i], "layout") ||
                   !strcmp(argv[i], "all")) {
            what = argv[i];
        } else {
            fprintf(stderr, "obl-microbench: unknown argument '%s' (see --help)\n", argv[i]);
            return 2;
        }
    }
    FILE *json = NULL;
    if (json_path && !(json = fopen(json_path, "a"))) {
        fprintf(stderr, "obl-microbench: cannot open %s\n", json_path);
        return 2;
    }
    const bench_env *e = bench_get_env();
    printf("# machine: %s, %ld cores, %" PRIu64 " kB; %s; flags %s; git %s; ct variant %s\n",
           e->cpu, e->cores, e->memory_kb, e->compiler, e->flags, e->git, e->ct_variant);
    int rc = 0;
    if (!strcmp(what, "cmov") || !strcmp(what, "all"))
        rc |= mb_cmov((int)reps, json);
    if (!strcmp(what, "lookup") || !strcmp(what, "all"))
        rc |= mb_lookup((int)reps, json);
    if (!strcmp(what, "memory") || !strcmp(what, "all"))
        rc |= mb_memory((int)reps, (size_t)max_mib, json);
    if (!strcmp(what, "layout") || !strcmp(what, "all"))
        rc |= mb_layout((int)reps, (size_t)max_mib, json);
    if (json)
        fclose(json);
    return rc;
}
