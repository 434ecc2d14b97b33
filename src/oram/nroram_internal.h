/* SPDX-License-Identifier: MIT */
/*
 * Internals of the Circuit ORAM (src/oram/nroram.c), shared with the
 * recursive ORAM (src/oram/roram.c) and the oblivious tree build
 * (src/oram/build.c).
 *
 * Layout. The tree has L = 2^logL leaves and D = logL + 1 levels of buckets
 * with Z = 2 slots each, stored in heap order (root first; bucket b of level
 * k at index 2^k - 1 + b). A bucket is [Z metadata entries (block id, leaf)
 * | Z data blocks], contiguous: with 8-byte values and 32-bit metadata it is
 * 32 bytes, so a path costs one cache line per level, not two.
 *
 * The path buffer holds the metadata of P + Z * D slots:
 * [stash (P slots) | root bucket | ... | leaf bucket], so that the metadata
 * passes of an eviction read one dense array; an eviction copies the path's
 * metadata in and back (whole-bucket evictions, AVX-512 with 8-byte values
 * in 32- or 64-byte buckets, read the path's metadata from the tree and
 * write whole buckets, so only the stash part is used). The data blocks of
 * the stash (P slots) live in bdata; those of the path stay in the tree,
 * where the eviction's data pass swaps them in place (copying them out and
 * back would move every byte of the path twice more). The read of the
 * accessed block (ReadAndRemove) scans the path in place: it changes one
 * id only.
 *
 * P = stash_size + 2: stash_size blocks may stay in the stash after an
 * access's evictions; one more slot receives the next accessed block, and
 * one more keeps room for it when extra evictions could not drain an
 * overflow (an access's two evictions run at the start of the next
 * access: nr_settle in nroram_impl.h).
 *
 * The code is written once (nroram_impl.h) for 32-bit and once for 64-bit
 * metadata words: NRW = 32 or 64.
 */
#ifndef OBL_SRC_ORAM_NRORAM_INTERNAL_H
#define OBL_SRC_ORAM_NRORAM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <obl/oram.h>

#include "common/alloc.h"
#include "common/prg.h"
#include "common/trace.h"

#define NR_Z 2
#define NR_MAX_LEVELS 64
/* path buffer slots: stash (at most 66) + Z * levels */
#define NR_MAX_SLOTS (66 + NR_Z * NR_MAX_LEVELS)

typedef struct nr_meta32 {
    uint32_t id;   /* NR_DUMMY32 for an empty slot */
    uint32_t leaf;
} nr_meta32;

typedef struct nr_meta64 {
    uint64_t id;
    uint64_t leaf;
} nr_meta64;

/* Trees above this size prefetch every cache line of a bucket, also the
 * line a bucket straddles at its end; smaller ones (mostly in cache) skip
 * it, which measured faster there; above it, the eviction's data pass
 * stalled on the straddled line (docs/oram.md, "NRORAM: Circuit ORAM"). */
#define NR_PF_LINES_BYTES ((size_t)2 << 20)

/* Levels whose buckets together take at most this many bytes are touched
 * by every path, so they stay in cache and are not prefetched. The limit
 * was chosen by measurement of NRORAM, RORAM and map accesses against
 * 16 KiB to 256 KiB (docs/oram.md, "NRORAM: Circuit ORAM"). */
#define NR_PF_HOT_BYTES ((size_t)64 << 10)

#define NR_DUMMY32 UINT32_MAX
#define NR_DUMMY64 UINT64_MAX

/*
 * Tagged trees: obl_nroram_params.pos_bytes = NR_POS_TAGGED (nr_create
 * only; the map's value ORAM). 4-byte metadata for 64-bit ids: a slot keeps
 * a 32-bit id, the id's low word (nr_tag_id), and its leaf word keeps the
 * next 32 - logL bits of the id above the leaf (nr_tag_leaf), which the
 * evictions' reaches shift out. ReadAndRemove matches the id AND the whole
 * leaf word, so a block is found only on its own leaf, and two blocks
 * whose 64 - logL tag bits agree are told apart unless their leaves agree
 * too (probability at most capacity * 2^-63 per access: docs/oram.md,
 * "Tagged trees"). Ids are below 2^64 - 1 (the dummy); bits above the tag
 * are ignored.
 */
#define NR_POS_TAGGED 0x7461u

/* A tagged tree's 32-bit id of id: its low word, the empty marker (all
 * ones) kept for the dummy id only (a real id whose low word is all ones
 * shares all ones - 1). Secret: id. */
static inline uint32_t nr_tag_id(uint64_t id)
{
    uint64_t lo = id & 0xffffffffu;
    /* 1 iff lo is all ones and id is not the dummy: no branch */
    uint64_t d = ((lo + 1) >> 32) & (((id >> 32) + 1) >> 32 ^ 1);
    return (uint32_t)(lo - d);
}

/* Bytes after the tree, the stash and o->tmp that whole-vector loads and
 * stores may touch (nr_reg_words in nr_access.c). */
#define NR_SLACK 64

struct obl_nroram;

/* A variant's operations for one metadata width (nr_access.c; the wrappers
 * below say what they do). */
typedef struct nr_ops {
    uint64_t (*fetch)(struct obl_nroram *o, uint64_t id, uint64_t pos);
    obl_err (*put)(struct obl_nroram *o, uint64_t keep, uint64_t id, uint64_t new_pos);
    obl_err (*recover)(struct obl_nroram *o);
    int (*scan_max16)(const uint16_t in[32], uint16_t out[32]);
} nr_ops;

struct obl_nroram {
    const nr_ops *ops;  /* public: the variant's code for this width, chosen
                           at creation (common/cpu.h) */
    int isa;            /* public: that variant (OBL_ISA_*) */
    int plan_scalar;    /* public; tests only (nr_set_plan_scalar) */
    obl_alloc_ctx ac;
    obl_prg prg;
    uint64_t capacity;
    size_t vs;          /* value (block) size */
    uint32_t pb;        /* metadata word: 4 or 8 bytes */
    int tagged;         /* public: a tagged tree (NR_POS_TAGGED; pb = 4) */
    uint64_t tag_mask;  /* tagged: (1 << (32 - logL)) - 1, the id bits kept
                           above the leaf; else 0 */
    uint32_t S;         /* stash_size: blocks allowed to stay in the stash */
    uint32_t P;         /* physical stash slots, S + 2 */
    uint32_t D;         /* levels, logL + 1 */
    uint32_t logL;
    uint32_t nslots;    /* P + Z * D: slots in the path buffer */
    uint64_t L;         /* leaves */
    uint64_t nbuckets;  /* 2L - 1 */
    uint64_t evict_ctr; /* reverse-lexicographic eviction counter (public) */
    uint64_t pf_next;   /* the leaf prefetched during this eviction: that of
                           the eviction pf_lead after it */
    uint32_t pf_lead;   /* public: 2 for a tree used alone (obl_nroram_create),
                           1 for the trees of a RORAM or a map (nr_create),
                           whose next access comes after the other trees' */
    uint32_t pfq_n, pfq_i; /* prefetch queue: the accessed path's buckets, */
    uint64_t pfq[NR_MAX_LEVELS]; /* issued a level at a time by an
                                    eviction's data pass (trees of lead 1;
                                    else both counts stay 0) */
    int full;           /* public: extra evictions could not drain the stash */
    uint32_t ev;        /* public: evictions per access: 2, or 3 for a tree
                           of more than 2 blocks per leaf (nr_shape) */
    int owed;           /* public: the last access's evictions are still
                           to run (nr_settle) */
    obl_err pend_err;   /* public: an overflow found by nr_settle, reported
                           by the access that ran it */
    int track_hist;
    unsigned char *tree; /* nbuckets buckets of bstride bytes: Z metadata
                            entries, then Z data blocks (at doff); a tree
                            created for nr_build has room after them for
                            its working array (nr_build_slack) */
    int tree_zero;      /* public: every byte of the tree is zero (created
                           for nr_build, which has not run yet) */
    size_t bstride, doff;
    int pf_lines;       /* public: prefetch every line a bucket overlaps */
    uint32_t pf_k0;     /* public: first level prefetched (the levels above
                           stay in cache) */
    void *bmeta;        /* nslots entries: the path buffer's metadata */
    unsigned char *bdata; /* P * vs: the stash's data blocks */
    unsigned char *tmp; /* vs bytes: the block being accessed */
    size_t tree_bytes, bmeta_bytes, bdata_bytes, tmp_bytes;
    /* eviction scratch, D + 1 entries (index 0 = stash, k + 1 = level k) */
    uint64_t deepest[NR_MAX_LEVELS + 1];
    uint64_t target[NR_MAX_LEVELS + 1];
    uint64_t best[NR_MAX_LEVELS + 1];
    uint64_t empty[NR_MAX_LEVELS + 1];
    uint64_t hasempty[NR_MAX_LEVELS + 1];
    uint64_t pathb[NR_MAX_LEVELS];  /* bucket indices of the loaded path */
    obl_oram_stats st;  /* secret fields: stash_max, hist */
};

/* A tagged tree's leaf word of id at leaf `leaf` (< L): the id's bits
 * 32 .. 63 - logL above the leaf; `leaf` alone for other trees.
 * Secret: id, leaf. */
static inline uint64_t nr_tag_leaf(const struct obl_nroram *o, uint64_t id, uint64_t leaf)
{
    return ((id >> 32) & o->tag_mask) << o->logL | leaf;
}

/* Allocates a tree with its own PRG; seeding from p->random / seed. With
 * clear, every slot of the tree is empty (dummy); without, the tree's
 * memory is left as allocated, for a caller that runs nr_build next (it
 * writes every slot): that skips a pass over the whole tree. The stash is
 * empty either way. Internal: no public-argument checks beyond sizes. */
obl_err nr_create(obl_nroram **out, const obl_nroram_params *p, int clear);

/* The most blocks a tree keeps per leaf, NR_LEAF_LOAD_NUM / _DEN (2.5): L
 * is the smallest power of two with capacity <= 2.5 L, so a capacity just
 * above a power of two does not double the tree (docs/oram.md, "Tree and
 * buckets"). Not more: at 2.52 to 2.55 the stash of 24 overflows far more
 * often ("Stash size and overflow"). */
#define NR_LEAF_LOAD_NUM 5
#define NR_LEAF_LOAD_DEN 2

/* A dense tree (obl_nroram_params.dense) keeps up to NR_DENSE_LOAD_NUM /
 * _DEN (2.52) blocks per leaf, for capacities such as a shard's 2.5 L plus
 * its routing margin; above 2.5 its stash tail is heavier ("Stash size and
 * overflow") and takes a default stash of NR_STASH_OVERFULL. */
#define NR_DENSE_LOAD_NUM 63
#define NR_DENSE_LOAD_DEN 25
#define NR_STASH_OVERFULL 36

/* The default stash of a tree of more than 2 blocks per leaf (three
 * evictions per access): its measured tail is heavier than at 2 per leaf,
 * and 24 blocks keep overflows at about one per 10^9 accesses, as 20 do
 * there (docs/oram.md, "Stash size and overflow"). */
#define NR_STASH_LOADED 24

/* log2 of the number of leaves of a tree of `capacity` blocks: the
 * smallest power of two L with capacity * DEN <= NUM * L, the dense limit
 * if dense (no overflow: capacity <= 2^56, nr_check); powers of two keep
 * capacity / 2 leaves. Public. */
static inline uint32_t nr_log_leaves_at(uint64_t capacity, int dense)
{
    const uint64_t num = dense ? NR_DENSE_LOAD_NUM : NR_LEAF_LOAD_NUM;
    const uint64_t den = dense ? NR_DENSE_LOAD_DEN : NR_LEAF_LOAD_DEN;
    uint32_t logL = 0;
    while ((num << logL) < den * capacity)
        logL++;
    return logL;
}

static inline uint32_t nr_log_leaves(uint64_t capacity) { return nr_log_leaves_at(capacity, 0); }

/* Evictions per access of a tree of `capacity` blocks in 2^logL leaves:
 * three above 2 blocks per leaf. Public. */
static inline uint32_t nr_evictions(uint64_t capacity, uint32_t logL)
{
    return capacity > ((uint64_t)2 << logL) ? 3 : 2;
}

/* Its default stash: 20, 24 above 2 blocks per leaf, 36 above 2.5 (only
 * dense trees). Public. */
static inline uint32_t nr_default_stash(uint64_t capacity, uint32_t logL)
{
    if (2 * capacity > ((uint64_t)5 << logL))
        return NR_STASH_OVERFULL;
    return nr_evictions(capacity, logL) == 3 ? NR_STASH_LOADED : OBL_ORAM_DEFAULT_STASH;
}

/*
 * The two halves of one access, so that a caller (the recursive ORAM, the
 * update call) can work on the block in between:
 * nr_fetch reads path `pos` into the buffer and removes block `id`,
 * leaving its value in o->tmp (zeros if absent); returns found (secret).
 * nr_put stores o->tmp as block `id` (a dummy unless keep) with leaf
 * new_pos into the stash; the access's two evictions on the next
 * reverse-lexicographic paths, and the stash check after them, run when
 * the next access fetches its path (or in nr_ready).
 * Returns OBL_OK or OBL_ERR_STASH_OVERFLOW (this call's evictions, those
 * of the previous access, overflowed; the access is complete, see oram.h).
 * The dummy id (all ones) as `id` is harmless: nr_fetch "finds" the empty
 * slots, which stay empty, and leaves unspecified bytes in o->tmp; nr_put
 * then stores nothing. The map (src/omap/op_values_impl.h) relies on this for the
 * 8-byte key 0xff..ff, whose value it keeps outside the ORAM.
 */
static inline uint64_t nr_fetch(obl_nroram *o, uint64_t id, uint64_t pos)
{
    return o->ops->fetch(o, id, pos);
}

static inline obl_err nr_put(obl_nroram *o, uint64_t keep, uint64_t id, uint64_t new_pos)
{
    return o->ops->put(o, keep, id, new_pos);
}

/* Prefetches, to L2, the buckets of path `leaf` below the levels every
 * path shares (pf_k0), deepest first, as an access's own prefetches do
 * (NR_PREFETCH_BUCKET in nroram_impl.h); for writing if wr (an eviction's
 * path). For a caller that knows a tree's next paths early (the map's
 * batched access). Each bucket is one trace event of kind PREFETCH.
 * Public: leaf, wr. */
static inline void nr_prefetch_path(const obl_nroram *o, uint64_t leaf, int wr)
{
    size_t len = o->bstride < 1024 ? o->bstride : 1024;
    for (uint32_t k = o->D; k-- > o->pf_k0;) {
        uint64_t b = (((uint64_t)1 << k) - 1) + (leaf >> (o->logL - k));
        uintptr_t a = (uintptr_t)(o->tree + b * o->bstride), e = a + len;
        OBL_TRACE_TOUCH(OBL_TRACE_REGION_ORAM_TREE, OBL_TRACE_PREFETCH, b, 1);
        if (o->pf_lines) /* public: also the line the bucket's end straddles */
            a &= ~(uintptr_t)63;
        for (; a < e; a += 64) {
            if (wr)
                __builtin_prefetch((const void *)a, 1, 2);
            else
                __builtin_prefetch((const void *)a, 0, 2);
        }
    }
}

/* The path of the second of the two evictions the tree owes (nr_settle
 * runs them at its next access), prefetched for writing: its own
 * prefetch of that path comes during the first eviction, later than a
 * batched caller can (nr_evict_next). Nothing when it owes none. The
 * order is reverse-lexicographic (nr_evict_leaf): public. */
static inline void nr_prefetch_evict(const obl_nroram *o)
{
    if (!o->owed) /* public */
        return;
    uint64_t g = o->evict_ctr + 1, leaf = 0;
    for (uint32_t k = 0; k < o->logL; k++) /* the low logL bits of g, reversed */
        leaf |= ((g >> k) & 1) << (o->logL - 1 - k);
    nr_prefetch_path(o, leaf, 1);
}

/* Before an access: if the structure is in the `full` state, tries extra
 * evictions; OBL_ERR_STATE if the stash still has no free slot. Public. */
static inline obl_err nr_ready(obl_nroram *o)
{
    return o->full ? o->ops->recover(o) : OBL_OK; /* public state */
}

/* A block's id computed from its content (nr_build): called on every slot
 * of the tree and the stash, real or empty, so it must take the same time
 * whatever the content (a constant-time hash). Secret: the block, the id. */
typedef uint64_t (*nr_id_fn)(const void *ctx, const unsigned char *block);

/* Bytes per block of nr_build's working array for blocks of pl bytes (the
 * value, and 8 more with explicit ids): blocks of up to 128 bytes are
 * padded to whole cache lines, larger ones only when that adds at most
 * 1/16 (docs/oram.md, "Build": payload stride). At most pl + 63. Public. */
static inline size_t nr_build_stride(size_t pl)
{
    size_t r = (pl + 63) & ~(size_t)63;
    return pl <= 128 || r - pl <= pl / 16 ? r : pl;
}

/* Bytes a tree created for nr_build (nr_create without clear) has after
 * its buckets, so that nr_build's working array of Z * (nbuckets + 1) + P
 * blocks fits in the tree's own memory when a bucket is at least Z blocks
 * of the working array (nr_build). Public. */
static inline size_t nr_build_slack(uint32_t P, size_t vs)
{
    return ((size_t)NR_Z + P) * (vs + 8 + 63);
}

/* Oblivious tree build (src/oram/build.c): places n <= capacity blocks
 * with fresh uniform leaves, written to leaves_out[i]; the first ss bytes
 * of block i (ss <= vs) are data[i * ss ..], the rest zero; all zeros when
 * data is NULL (data_len bytes are given; the rest is zero). Block i has
 * id i, or ids[i] when ids is not NULL, or id_fn(id_ctx, block i's
 * content) when id_fn is not NULL (64-bit and tagged trees only, at most one of the
 * two; a block whose id is the dummy id takes a slot that is then left
 * empty: it is not stored, and the map relies on that). The tree must be
 * empty (or as nr_create without clear left it, all zeros: then the
 * build's largest array may live in the tree's memory) and have below
 * 2^31 leaves. On an error the tree is left as it was. With id_fn the
 * ids do not travel through the sorts (a 64-byte block keeps a 64-byte
 * stride).
 * Secret: the data, the ids and the leaves. Public: n, vs, ss, data_len,
 * whether ids and id_fn are NULL. */
obl_err nr_build(obl_nroram *o, uint64_t n, const unsigned char *data, size_t ss,
                 size_t data_len, const uint64_t *ids, nr_id_fn id_fn, const void *id_ctx,
                 uint32_t *leaves_out);

/* nr_build with its sorts and expansion on up to `threads` threads (two at
 * most, obl_bsort_sort_par): the same tree, byte for byte, as nr_build's
 * from the same generator state. threads: public. */
obl_err nr_build_par(obl_nroram *o, uint64_t n, const unsigned char *data, size_t ss,
                     size_t data_len, const uint64_t *ids, nr_id_fn id_fn, const void *id_ctx,
                     uint32_t *leaves_out, unsigned threads);

/* The threads a build asked for `asked` threads takes: asked, or with 0 the
 * CPUs this process may run on (sched_getaffinity); at least 1. Public. */
unsigned nr_build_threads(unsigned asked);

/* Tests only, not thread-safe: the cache sizes (bytes) the build's sorts
 * block for, so that small builds take the paths of large ones; 0 restores
 * the default (1 MiB L2, 32 MiB L3: 512 KiB and 8 MiB of elements). */
void nr_build_set_blocks(size_t l2_bytes, size_t l3_bytes);

/* Tests only, not thread-safe: 1 plants a fault in the two-thread sort of
 * nr_build_par (a compare-exchange left out: the tests comparing it with
 * nr_build must fail), 0 removes it. */
void nr_build_set_par_fault(int on);

/* Tests only, not thread-safe: 0 makes nr_build keep the first fit's
 * result in two words (id; slot and leaf) even where one would do (the
 * packed form, for ids, leaves and slot codes of at most 62 bits: every
 * build up to about 2^27 blocks); 1 restores the default. */
void nr_build_set_packing(int allow);

/* Tests only, not thread-safe: the build's leaves are ANDed with mask (0:
 * every block on path 0, so that first fit fills that path and the stash);
 * UINT64_MAX restores uniform leaves. */
void nr_build_set_leaf_mask(uint64_t mask);

/* Tests only: 1 makes every eviction of tree o take the portable form even
 * where the AVX-512 one applies: scalar reaches, metadata passes (level by
 * level, not nr_plan_deepest in nr_access.c) and stash count, no
 * whole-bucket evictions (the path's metadata goes through the buffer),
 * and ReadAndRemove and the stash insertion slot by slot; 0 restores the
 * default. Both must leave the same tree and stash. */
void nr_set_plan_scalar(obl_nroram *o, int on);
/* Tests only: ev evictions per access (2 or 3) in place of nr_shape's
 * choice, for the stash control at 2.5 blocks per leaf. */
void nr_set_evictions(obl_nroram *o, uint32_t ev);

/* Tests only: out[i] = max(in[0..i]) by the vector prefix maximum of the
 * AVX-512 metadata passes; returns 0 (out untouched) when the variant a
 * structure would pick now has none. */
int nr_test_scan_max16(const uint16_t in[32], uint16_t out[32]);

#endif /* OBL_SRC_ORAM_NRORAM_INTERNAL_H */
