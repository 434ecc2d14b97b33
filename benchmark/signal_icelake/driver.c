/* obl's driver for signalapp/ContactDiscoveryService-Icelake (commit c76f88b,
 * the last C-only one), against its public C API (path_oram/path_oram.h,
 * ohtable/ohtable.h).
 *   signal_bench TYPE N=.. Key_bytes=8 Value_bytes=.. [queries=Q] [reps=R]
 *                [method=fixed|public] [seed=S]
 * RORAM: the path ORAM with its recursive position map, values packed into
 * its blocks (168 qwords); a read of address a is oram_get_partial of the
 * V bytes at a, so the value size stored and returned is V. The structure is
 * filled (every block put) before the timed reads, whose addresses are
 * uniformly random and drawn before timing. UnorderedMap: ohtable at
 * capacity N * 5 / 4 (fill 0.8) with N random distinct keys; gets of
 * present keys in random order (Get_latency_us, hits only) and of absent
 * keys on their own (Get_miss_latency_us).
 * UnorderedMap with Shards=S (built with SIGNAL_SHARDED, when the sources
 * hold c/SipHash): sharded_ohtable, signal_icelake_sharded (sharded()).
 * method=public repeats the public driver's method (sequential addresses and
 * keys, the map's latency the mean of the hit and miss averages) under the
 * name signal_icelake_pubmethod. One REPORT line per repetition on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "ohtable/ohtable.h"
#include "path_oram/bucket.h"
#include "path_oram/path_oram.h"
#include "util/util.h"

#include "../common/peer_report.h"

#define STASH_SIZE 100 /* the tests' and the public driver's TEST_STASH_SIZE */

static int g_public;
static int g_threads_left; /* shard threads still waiting: end with _exit */
static const char *g_impl = "signal_icelake";

static const char *arg(int argc, char **argv, const char *key)
{
    size_t k = strlen(key);
    for (int i = 2; i < argc; i++)
        if (!strncmp(argv[i], key, k) && argv[i][k] == '=')
            return argv[i] + k + 1;
    return NULL;
}

static uint64_t num(int argc, char **argv, const char *key, uint64_t dflt)
{
    const char *v = arg(argc, argv, key);
    return v ? strtoull(v, NULL, 10) : dflt;
}

static uint64_t value_word(uint64_t a, uint64_t l) { return a * 1000003u + l + 1; }

/* Distinct keys for i < 2^63, never EMPTY (UINT64_MAX). */
static uint64_t key_of(uint64_t i) { return (i * 0x9e3779b97f4a7c15ull + 0x1234567ull) >> 1; }
#define NOT_WRITTEN (UINT64_MAX - 1) /* no key: key_of's are below 2^63, the public ones N */

static int roram(uint64_t n, uint64_t v, uint64_t q, uint64_t *seed)
{
    uint64_t k = v / 8, bq = BLOCK_DATA_SIZE_QWORDS, blocks = (n * k + bq - 1) / bq;
    uint64_t *addr = malloc(q * sizeof(uint64_t)), buf[BLOCK_DATA_SIZE_QWORDS], out[8];
    if (!addr || k == 0 || k > 8 || bq % k)
        return 2;
    for (uint64_t i = 0; i < q; i++)
        addr[i] = g_public ? i % n : peer_below(seed, n);
    long rss0 = peer_rss_kb();
    uint64_t t0 = peer_now_ns();
    oram *o = oram_create(blocks * bq, STASH_SIZE, getentropy);
    if (!o)
        return 1;
    uint64_t base = oram_allocate_contiguous(o, blocks);
    uint64_t t1 = peer_now_ns();
    for (uint64_t b = 0; b < blocks; b++) { /* fill: every block put */
        for (uint64_t w = 0; w < bq; w++) {
            uint64_t a = (b * bq + w) / k;
            buf[w] = value_word(a, (b * bq + w) % k);
        }
        if (oram_put(o, base + b, buf) != err_SUCCESS)
            return 1;
    }
    uint64_t t2 = peer_now_ns(), bad = 0;
    for (uint64_t i = 0; i < q; i++) {
        uint64_t w = addr[i] * k;
        if (oram_get_partial(o, base + w / bq, w % bq, k, out) != err_SUCCESS)
            return 1;
        bad += out[0] != value_word(addr[i], 0) || out[k - 1] != value_word(addr[i], k - 1);
    }
    uint64_t t3 = peer_now_ns();
    long rss1 = peer_rss_kb();
    oram_destroy(o);
    free(addr);
    if (bad) {
        fprintf(stderr, "signal_bench: RORAM read a wrong value\n");
        return 1;
    }
    double lat = (double)(t3 - t2) / 1e3 / (double)q;
    printf("REPORT_123RORAM|%s|peer| N:=%zu | Key_bytes := 8 | Value_bytes := %zu | "
           "Initialization_zeroed_time_us := %.2f | Initialization_time_us := %.2f | "
           "Read_latency_us := %.4f | Read_throughput_qps := %.2f | Queries := %zu | "
           "Memory_kb := %ld REPORT_123\n",
           g_impl, (size_t)n, (size_t)v, (t1 - t0) / 1e3, (t2 - t0) / 1e3, lat, 1e6 / lat,
           (size_t)q, rss1 - rss0);
    return 0;
}

static int umap(uint64_t n, uint64_t v, uint64_t q, uint64_t *seed)
{
    uint64_t rq = 1 + v / 8, cap = n * 5 / 4, rec[1 + 8], out[1 + 8];
    uint64_t hits = g_public ? n : q, misses = g_public ? cap - n : q / 4;
    uint64_t *hk = malloc(hits * sizeof(uint64_t)), *mk = malloc((misses + 1) * sizeof(uint64_t));
    if (!hk || !mk || rq > 9)
        return 2;
    for (uint64_t i = 0; i < hits; i++)
        hk[i] = g_public ? i : peer_below(seed, n);
    for (uint64_t i = 0; i < misses; i++)
        mk[i] = g_public ? n + i : n + peer_below(seed, 1ull << 40);
    long rss0 = peer_rss_kb();
    uint64_t t0 = peer_now_ns();
    ohtable *t = ohtable_create(cap, rq, STASH_SIZE, getentropy);
    if (!t)
        return 1;
    for (uint64_t i = 0; i < n; i++) {
        rec[0] = g_public ? i : key_of(i);
        for (uint64_t l = 1; l < rq; l++)
            rec[l] = value_word(i, l);
        if (ohtable_put(t, rec) != err_SUCCESS)
            return 1;
    }
    /* ohtable_get leaves the record unwritten, rather than UINT64_MAX as its
     * header says, when an absent key's probe window holds no empty slot
     * (docs/suite.md, "Peers"): every get starts from a record no key has
     * (NOT_WRITTEN), and a miss left so is counted (Miss_unwritten_ratio): the
     * key is absent, so the answer is right, but the caller must pre-set it. */
    uint64_t t1 = peer_now_ns(), bad = 0, unwritten = 0;
    for (uint64_t i = 0; i < hits; i++) {
        uint64_t key = g_public ? hk[i] : key_of(hk[i]);
        out[0] = NOT_WRITTEN;
        if (ohtable_get(t, key, out) != err_SUCCESS)
            return 1;
        bad += out[0] != key || out[rq - 1] != value_word(hk[i], rq - 1);
    }
    uint64_t t2 = peer_now_ns();
    for (uint64_t i = 0; i < misses; i++) {
        out[0] = NOT_WRITTEN;
        if (ohtable_get(t, g_public ? mk[i] : key_of(mk[i]), out) != err_SUCCESS)
            return 1;
        unwritten += out[0] == NOT_WRITTEN;
        bad += out[0] != UINT64_MAX && out[0] != NOT_WRITTEN;
    }
    uint64_t t3 = peer_now_ns();
    long rss1 = peer_rss_kb();
    ohtable_destroy(t);
    free(hk);
    free(mk);
    /* A wrong answer is the peer's result, not a failure of the driver: it
     * is reported (Wrong_answers_ratio, of all gets) and the case goes on. */
    if (bad)
        fprintf(stderr, "signal_bench: %zu of %zu gets answered wrongly\n", (size_t)bad,
                (size_t)(hits + misses));
    double hit = (double)(t2 - t1) / 1e3 / (double)hits;
    double miss = misses ? (double)(t3 - t2) / 1e3 / (double)misses : 0;
    double get = g_public ? (hit + miss) / 2 : hit;
    printf("REPORT_123UnorderedMap|%s|peer| N:=%zu | Key_bytes := 8 | Value_bytes := %zu | "
           "fill:=0.8 | Initialization_time_us := %.2f | Get_latency_us := %.4f | "
           "Get_throughput_qps := %.2f | Get_miss_latency_us := %.4f | Queries := %zu | "
           "Memory_kb := %ld | Wrong_answers_ratio := %.6f | Miss_unwritten_ratio := %.6f "
           "REPORT_123\n",
           g_impl, (size_t)n, (size_t)v, (t1 - t0) / 1e3, get, 1e6 / get, miss, (size_t)hits,
           rss1 - rss0, (double)bad / (double)(hits + misses),
           misses ? (double)unwritten / (double)misses : 0.0);
    return 0;
}

#ifdef SIGNAL_SHARDED
/* Sharded map: sharded_ohtable with S shard threads (run until stopped),
 * capacity N * 5 / 4, N records put in batches of B, then `batches` batches
 * of B gets (80 % present keys, random, drawn before timing); latency per
 * batch as the harness, throughput per query. */
#include <pthread.h>

#include "sharded_ohtable/sharded_ohtable.h"

typedef struct {
    sharded_ohtable *t;
    size_t id;
} shard_arg;

static void *shard_main(void *p)
{
    shard_arg *a = p;
    sharded_ohtable_run_shard(a->t, a->id);
    return NULL;
}

/* A sharded get returns the found records only, compacted, in shard order:
 * each record's value words are derived from its key, so a returned record
 * is checked against itself. */
static uint64_t key_word(uint64_t key, uint64_t l) { return key * 0x100000001b3ull + l; }

/* The sharded table's records are 7 qwords (its RESPONSE_QUERY_BYTES): an
 * 8-byte key and 48 bytes of value, whatever the caller asks. */
#define SHARDED_RECORD_QWORDS 7

static int sharded(uint64_t n, uint64_t v, uint64_t shards, uint64_t b, uint64_t batches,
                   uint64_t *seed)
{
    uint64_t rq = 1 + v / 8, cap = n * 5 / 4, nq = b * batches;
    if (rq != SHARDED_RECORD_QWORDS) {
        fprintf(stderr, "signal_bench: the sharded table stores 48-byte values only\n");
        return 2;
    }
    u8 hash_key[8];
    for (int i = 0; i < 8; i++)
        hash_key[i] = (u8)peer_rand(seed);
    uint64_t *rec = calloc(b * rq, sizeof(uint64_t)), *keys = malloc(nq * sizeof(uint64_t));
    uint64_t *want = malloc(nq * sizeof(uint64_t)), *res = malloc(b * rq * sizeof(uint64_t));
    pthread_t tid[64];
    shard_arg args[64];
    if (!rec || !keys || !want || !res || shards > 64 || rq > 9)
        return 2;
    for (uint64_t i = 0; i < nq; i++) {
        uint64_t hit = peer_below(seed, 5) < 4, idx = peer_below(seed, n);
        keys[i] = key_of(hit ? idx : n + peer_below(seed, 1ull << 40));
        want[i] = hit;
    }
    long rss0 = peer_rss_kb();
    uint64_t t0 = peer_now_ns();
    sharded_ohtable *t = sharded_ohtable_create(rq, cap, shards, hash_key, STASH_SIZE, getentropy);
    if (!t)
        return 1;
    for (size_t i = 0; i < shards; i++) {
        args[i] = (shard_arg){t, i};
        pthread_create(&tid[i], NULL, shard_main, &args[i]);
    }
    for (uint64_t i = 0; i < n; i += b) {
        uint64_t m = n - i < b ? n - i : b;
        for (uint64_t j = 0; j < m; j++) {
            rec[j * rq] = key_of(i + j);
            for (uint64_t l = 1; l < rq; l++)
                rec[j * rq + l] = key_word(key_of(i + j), l);
        }
        if (sharded_ohtable_put_batch(t, m, rec) != err_SUCCESS)
            return 1;
    }
    uint64_t t1 = peer_now_ns(), bad = 0, unwritten = 0, misses = 0;
    for (uint64_t k = 0; k < batches; k++) {
        if (sharded_ohtable_get_batch(t, b, keys + k * b, res) != err_SUCCESS)
            return 1;
        uint64_t found = 0, hits = 0;
        for (uint64_t j = 0; j < b; j++) {
            hits += want[k * b + j];
            /* key 0 (no key_of): a shard's response the ohtable left unwritten
             * (umap()), which get_batch takes for a record of key 0 */
            unwritten += res[j * rq] == 0;
            if (res[j * rq] != UINT64_MAX && res[j * rq] != 0) {
                found++;
                bad += res[j * rq + rq - 1] != key_word(res[j * rq], rq - 1);
            }
        }
        bad += found > hits ? found - hits : 0; /* a miss answered (duplicates may merge hits) */
        misses += b - hits;
    }
    uint64_t t2 = peer_now_ns();
    long rss1 = peer_rss_kb();
    /* The shard threads are left waiting and the table is kept: stopping
     * races in the peer (shard_stop clears keep_alive before it queues the
     * stop, so a shard between two requests can leave its loop without
     * answering, and the stop waits forever: the public driver's hang).
     * main() ends the process with _exit after the last repetition. */
    for (size_t i = 0; i < shards; i++)
        pthread_detach(tid[i]);
    g_threads_left = 1;
    if (bad)
        fprintf(stderr, "signal_bench: %zu of %zu gets answered wrongly\n", (size_t)bad, (size_t)nq);
    double per_batch = (double)(t2 - t1) / 1e3 / (double)batches;
    printf("REPORT_123UnorderedMap|signal_icelake_sharded|peer| N:=%zu | Key_bytes := 8 | "
           "Value_bytes := %zu | Shards := %zu | Batch_size := %zu | fill:=0.8 | "
           "Initialization_time_us := %.2f | Get_latency_us := %.2f | Get_throughput_qps := %.2f | "
           "Memory_kb := %ld | Wrong_answers_ratio := %.6f | Miss_unwritten_ratio := %.6f "
           "REPORT_123\n",
           (size_t)n, (size_t)v, (size_t)shards, (size_t)b, (t1 - t0) / 1e3, per_batch,
           (double)b * 1e6 / per_batch, rss1 - rss0, (double)bad / (double)nq,
           misses ? (double)unwritten / (double)misses : 0.0);
    free(rec);
    free(keys);
    free(want);
    free(res);
    return 0;
}
#endif

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: signal_bench TYPE N=.. Key_bytes=8 Value_bytes=.. ...\n");
        return 2;
    }
    const char *method = arg(argc, argv, "method");
    g_public = method && !strcmp(method, "public");
    if (g_public)
        g_impl = "signal_icelake_pubmethod";
    uint64_t n = num(argc, argv, "N", 1024), v = num(argc, argv, "Value_bytes", 8);
    uint64_t q = num(argc, argv, "queries", 100000), reps = num(argc, argv, "reps", 1);
    uint64_t seed = num(argc, argv, "seed", 1);
    if (num(argc, argv, "Key_bytes", 8) != 8 || v % 8 || v == 0 || v > 64) {
        fprintf(stderr, "signal_bench: unsupported sizes (8-byte keys, values of 8..64 bytes)\n");
        return 2;
    }
    for (uint64_t r = 0; r < reps; r++) {
        int rc = 2;
        uint64_t shards = num(argc, argv, "Shards", 0);
        if (!strcmp(argv[1], "RORAM"))
            rc = roram(n, v, q, &seed);
        else if (!strcmp(argv[1], "UnorderedMap") && !shards)
            rc = umap(n, v, q, &seed);
#ifdef SIGNAL_SHARDED
        else if (!strcmp(argv[1], "UnorderedMap"))
            rc = sharded(n, v, shards, num(argc, argv, "Batch_size", 1024),
                         num(argc, argv, "batches", 4), &seed);
#else
        else if (!strcmp(argv[1], "UnorderedMap"))
            fprintf(stderr, "signal_bench: built without the sharded table: its SipHash "
                            "sources were not found (benchmark/signal_icelake/setup.sh)\n");
#endif
        if (rc == 2)
            fprintf(stderr, "signal_bench: unsupported case %s\n", argv[1]);
        if (rc)
            return rc;
        fflush(stdout);
    }
    if (g_threads_left)
        _exit(0);
    return 0;
}
