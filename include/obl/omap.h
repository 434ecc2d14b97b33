/*
 * obl/omap.h: UMAP, an oblivious unordered map with fixed-size keys and
 * values.
 *
 * Design (docs/omap.md): two-table cuckoo hashing (Pagh, Rodler, "Cuckoo
 * hashing", J. Algorithms 2004) with buckets of several slots (Dietzfelbinger,
 * Weidling 2007), both tables held in ONE recursive ORAM (obl/oram.h), so
 * that which table an access touches is hidden too. Keys are hashed with
 * SipHash-2-4 (Aumasson, Bernstein 2012) under a per-map secret key.
 * Insertion is de-amortised through a fixed-size queue (Arbitman, Naor,
 * Segev, "De-amortized cuckoo hashing", ICALP 2009): every
 * `kick_interval`-th operation (by default every one), of any type,
 * performs exactly `kicks_per_op` kick-out steps on the queue; every operation then reads and rewrites one
 * bucket of each table, i.e. 2 ORAM accesses, plus kicks_per_op on the
 * operations that kick, plus full scans of the queue; in the compact layout
 * (below) one more access, of the value ORAM. Which operations kick depends
 * only on how many operations the map has made (public). There is no
 * data-dependent loop.
 *
 * Threat model (as obl/oram.h): the adversary sees every address touched
 * and the time taken, not memory contents. Secret: keys, values, the
 * operation type, whether a key was present, the number of entries and the
 * queue's contents and occupancy. Public: the parameters, the number of
 * operations, the leaf labels the ORAM reveals (uniform by design), and the
 * error codes returned.
 *
 * Capacity events (public): OBL_ERR_FULL is returned by a put of a NEW key
 * that found both of its buckets full while the queue was full too. The map
 * is left unchanged (the key is not inserted; earlier kick-out steps of the
 * same call only moved entries between the queue and the tables). Like an
 * ORAM stash overflow it is a public event: its probability at or below the
 * documented load is tiny (docs/omap.md gives the measured rate), and a
 * caller who needs to hide it must size the map so that it does not occur.
 * That holds for the default kick_interval (1): with a larger one, filling
 * the map by single puts near capacity makes FULL common (docs/omap.md,
 * "Queue failure rate"), and each report reveals a put of a new key.
 * Keys of more than 8 bytes in the compact layout are indexed by a 64-bit
 * fingerprint: a put of a new key whose fingerprint a stored key has also
 * reports FULL (probability about count / 2^64 per put).
 * In the compact layout a put of a new key also reports OBL_ERR_FULL when
 * the map holds `capacity` entries (its value ORAM is sized for that many).
 * That event is not rare: it is the documented hard limit, and it reveals
 * what any full container reveals, that the map holds `capacity` entries
 * at that moment. The inline layout has no such limit (capacity is the
 * load its tables are sized for), so AUTO's choice changes this behaviour;
 * a caller who needs one of them sets the layout.
 *
 * Thread safety: none inside; one map per thread or an outside lock.
 */
#ifndef OBL_OMAP_H
#define OBL_OMAP_H

#include <stddef.h>
#include <stdint.h>

#include <obl/obl.h>
#include <obl/oram.h>

#ifdef __cplusplus
extern "C" {
#endif

#define OBL_OMAP_MAX_KEY_SIZE 1024u
#define OBL_OMAP_MAX_VALUE_SIZE 65536u

/* Defaults (docs/omap.md, "Parameters"). */
#define OBL_OMAP_DEFAULT_SLOTS 4u        /* slots per bucket: the automatic minimum */
#define OBL_OMAP_MAX_SLOTS 8u
#define OBL_OMAP_DEFAULT_LOAD 80u        /* percent of all slots at capacity */
#define OBL_OMAP_DEFAULT_QUEUE 32u       /* queue entries */
#define OBL_OMAP_DEFAULT_KICKS 1u        /* kick-out steps per kicking operation */
/* Kick interval (docs/omap.md, "Queue failure rate"): the default 1 (a kick
 * round on every operation) is what filling a map by single puts up to its
 * capacity needs. A larger interval makes the operations between kick
 * rounds cheaper (interval 2: about 15 % faster gets at 2^20) and is meant
 * for read-mostly maps filled by obl_omap_build; a put-heavy stream near
 * capacity then overflows the queue (OBL_ERR_FULL, no data lost). */
#define OBL_OMAP_DEFAULT_KICK_INTERVAL 1u
#define OBL_OMAP_MAX_KICK_INTERVAL 8u

/* Layouts (docs/omap.md, "Layouts"), obl_omap_params.layout:
 * INLINE: the buckets hold key and value;
 * COMPACT: the buckets hold key and a leaf label; the values live in one
 *   Circuit ORAM (obl_nroram) under the key as block id, so kick-out steps
 *   and both bucket reads move small index entries only, and a get costs
 *   one more (non-recursive) ORAM access. Keys of more than 8 bytes are
 *   replaced in the index by a 64-bit keyed fingerprint, which is the
 *   block id; the block holds key and value, and the stored key is
 *   compared on every access. Capacity at most 2^30.
 * AUTO: COMPACT for keys of at most 8 bytes and values of at least
 *   OBL_OMAP_COMPACT_MIN_VALUE bytes, and for longer keys when key and
 *   value take at least OBL_OMAP_COMPACT_MIN_ENTRY bytes; else INLINE. */
#define OBL_OMAP_LAYOUT_AUTO 0u
#define OBL_OMAP_LAYOUT_INLINE 1u
#define OBL_OMAP_LAYOUT_COMPACT 2u
#define OBL_OMAP_COMPACT_MIN_VALUE 24u
#define OBL_OMAP_COMPACT_MIN_ENTRY 32u

/* Operation codes for obl_omap_access. The code is SECRET: all codes make
 * the same accesses. Any other value behaves as OBL_OMAP_GET. */
#define OBL_OMAP_GET 0u
#define OBL_OMAP_PUT 1u
#define OBL_OMAP_ERASE 2u

typedef struct obl_omap obl_omap;

typedef struct obl_omap_params {
    uint64_t capacity;          /* public: entries the map is sized for, >= 1 */
    size_t key_size;            /* public: 1 .. OBL_OMAP_MAX_KEY_SIZE */
    size_t value_size;          /* public: 1 .. OBL_OMAP_MAX_VALUE_SIZE */
    uint32_t slots_per_bucket;  /* 1 .. OBL_OMAP_MAX_SLOTS; 0 = automatic:
                                   4 .. 8, with a power-of-two bucket count
                                   (docs/omap.md, "Sizing") */
    uint32_t load_percent;      /* 0 = default; 10 .. 95 */
    uint32_t queue_size;        /* 0 = default; 1 .. 1024 */
    uint32_t kicks_per_op;      /* 0 = default; 1 .. 8 */
    uint32_t oram_scan_max;     /* passed to the RORAM (0 = its default) */
    uint32_t layout;            /* OBL_OMAP_LAYOUT_*; 0 = automatic */
    obl_random_fn random;       /* NULL: getrandom(2); seeds the map's PRG */
    void *random_opaque;
    uint64_t seed;              /* used instead of random when use_seed != 0 */
    int use_seed;               /* tests and reproducible benchmarks only */
    const obl_allocator *alloc; /* NULL: the C library */
    uint32_t kick_interval;     /* operations per kick round; 0 = default;
                                   1 .. OBL_OMAP_MAX_KICK_INTERVAL (above);
                                   last, so that older callers' layouts stay */
} obl_omap_params;

/*
 * Creates an empty map. Public: all parameters.
 * Errors: INVALID_ARG, TOO_LARGE, NOMEM, RANDOM.
 */
obl_err obl_omap_create(obl_omap **out, const obl_omap_params *p) OBL_WARN_UNUSED;

/*
 * Bulk build from n pairs (keys: n * key_size bytes, values: n * value_size
 * bytes), n <= capacity, far faster than n puts: the tables are filled in
 * plain memory and the ORAM is built from them directly.
 * Secret: the keys and values. Public: n, the parameters, the error code;
 * and, by design, the bucket-index graph (h1(k_i), h2(k_i)) of the input
 * positions i, which for DISTINCT keys is a list of pseudo-random values
 * independent of the keys (docs/omap.md, "What the build reveals").
 * Errors: INVALID_ARG, TOO_LARGE, NOMEM, RANDOM, DUPLICATE_KEY (the input
 * holds some key twice; nothing is created), FULL (the entries did not fit
 * in the tables and the queue; nothing is created).
 */
obl_err obl_omap_build(obl_omap **out, const obl_omap_params *p, const void *keys,
                       const void *values, uint64_t n) OBL_WARN_UNUSED;

/*
 * The combined operation, one fixed sequence of accesses for every op:
 *   GET:   *value_out = the value (zeros if absent);
 *   PUT:   *value_out = the old value (zeros if absent); value := value_in
 *          (inserted if absent: upsert);
 *   ERASE: *value_out = the old value; the key is removed.
 * *found = 1 if the key was present before the call, else 0.
 * Secret: op, the key, the contents of value_in and value_out, *found.
 * Public: the NULL-ness of value_in (NULL = zeros), value_out and found;
 *         the error code.
 * Errors: INVALID_ARG (m or key NULL), FULL (see top; map unchanged),
 *         STASH_OVERFLOW (an ORAM stash event; the operation was applied),
 *         STATE (the ORAM refused an access; see docs/omap.md).
 */
obl_err obl_omap_access(obl_omap *m, uint64_t op, const void *key, const void *value_in,
                        void *value_out, uint64_t *found);

/* obl_omap_access(m, OBL_OMAP_GET, key, NULL, value_out, found). */
obl_err obl_omap_get(obl_omap *m, const void *key, void *value_out, uint64_t *found);

/* obl_omap_access(m, OBL_OMAP_PUT, key, value, NULL, existed). */
obl_err obl_omap_put(obl_omap *m, const void *key, const void *value, uint64_t *existed);

/* obl_omap_access(m, OBL_OMAP_ERASE, key, NULL, NULL, existed). */
obl_err obl_omap_erase(obl_omap *m, const void *key, uint64_t *existed);

typedef struct obl_omap_stats {
    uint64_t operations;      /* obl_omap_access calls that ran */
    uint64_t full_errors;     /* OBL_ERR_FULL events */
    uint64_t queue_max;       /* largest queue occupancy after an operation */
    uint32_t queue_size;
    uint64_t buckets;         /* buckets in both tables */
    uint32_t slots_per_bucket;
    uint32_t kicks_per_op;
    uint64_t oram_accesses;   /* ORAM accesses made: 2 per op, + kicks_per_op
                                 on kicking ops, + 1 in the compact layout
                                 (not on FULL) */
    uint32_t layout;          /* the layout in use: OBL_OMAP_LAYOUT_INLINE or
                                 OBL_OMAP_LAYOUT_COMPACT */
    uint64_t stash_max;       /* largest stash occupancy seen in the index
                                 ORAM's data level and the value ORAM */
    uint64_t stash_overflows; /* their OBL_ERR_STASH_OVERFLOW events */
    uint32_t kick_interval;   /* operations per kick round, in use */
} obl_omap_stats;

/* Reading queue_max and stash_max reveals the queue's and the stashes'
 * history to the caller, who decides whether that is public; the library
 * never branches on them. */
void obl_omap_get_stats(const obl_omap *m, obl_omap_stats *st);

uint64_t obl_omap_capacity(const obl_omap *m);

/* Bytes the map holds (ORAM, queue, buffers). Public. */
size_t obl_omap_memory_bytes(const obl_omap *m);

/* Frees and wipes everything; NULL is fine. */
void obl_omap_destroy(obl_omap *m);

#ifdef __cplusplus
}
#endif

#endif /* OBL_OMAP_H */
