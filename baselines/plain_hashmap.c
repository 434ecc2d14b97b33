/* SPDX-License-Identifier: MIT */
/*
 * The plain hash map baseline (see plain_hashmap.h).
 *
 * Linear probing with backward-shift deletion (Knuth, TAOCP vol. 3, 6.4,
 * Algorithm R): erasing slot i moves each following entry of the run back
 * into the hole when its home slot does not lie cyclically in (hole, j], so
 * that every key stays reachable from its home without tombstones.
 *
 * Why a separate control-byte array rather than a flag inside each slot:
 * the tag test rejects almost every foreign slot without loading its key,
 * and the control array (1 byte per slot) stays cache-resident much longer
 * than the slots; why a load limit of 3/4: linear probing's expected
 * unsuccessful probe count is (1 + 1/(1-a)^2) / 2, 8.5 at a = 3/4 but 32 at
 * 7/8.
 */
#include "plain_hashmap.h"

#include <string.h>

#include "common/alloc.h"

#define PHM_EMPTY 0u
#define PHM_MIN_CAPACITY 8u

struct plain_hashmap {
    obl_alloc_ctx mem;
    uint8_t *ctrl;       /* capacity bytes */
    unsigned char *slots; /* capacity * stride bytes */
    size_t key_size, value_size, stride;
    size_t capacity, mask, size, max_size;
    uint64_t seed;
};

/* 64-bit finaliser of MurmurHash3 (Appleby), a bijection on words. */
static inline uint64_t phm_fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint64_t phm_load64(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

static inline uint64_t phm_hash(const plain_hashmap *m, const unsigned char *key)
{
    size_t k = m->key_size;
    if (k == 8) /* the benchmarks' common case: one word */
        return phm_fmix64(phm_load64(key) ^ m->seed);
    uint64_t h = m->seed ^ ((uint64_t)k * 0x9e3779b97f4a7c15ULL);
    size_t i = 0;
    for (; i + 8 <= k; i += 8)
        h = (h ^ phm_fmix64(phm_load64(key + i))) * 0x9e3779b97f4a7c15ULL;
    if (i < k) {
        uint64_t w = 0;
        memcpy(&w, key + i, k - i);
        h = (h ^ phm_fmix64(w ^ (uint64_t)(k - i))) * 0x9e3779b97f4a7c15ULL;
    }
    return phm_fmix64(h);
}

static inline uint8_t phm_tag(uint64_t h) { return (uint8_t)(0x80u | (h >> 57)); }

/* Fixed-size copies and compares for the common sizes become a few moves
 * instead of a libc call with a variable length. */
static inline void phm_copy(void *dst, const void *src, size_t len)
{
    switch (len) {
    case 8: memcpy(dst, src, 8); break;
    case 16: memcpy(dst, src, 16); break;
    case 32: memcpy(dst, src, 32); break;
    case 56: memcpy(dst, src, 56); break;
    case 64: memcpy(dst, src, 64); break;
    default: memcpy(dst, src, len); break;
    }
}

static inline int phm_key_eq(const plain_hashmap *m, const unsigned char *a,
                             const unsigned char *b)
{
    switch (m->key_size) {
    case 8: return phm_load64(a) == phm_load64(b);
    case 16: return memcmp(a, b, 16) == 0;
    case 32: return memcmp(a, b, 32) == 0;
    default: return memcmp(a, b, m->key_size) == 0;
    }
}

static inline unsigned char *phm_slot(const plain_hashmap *m, size_t i)
{
    return m->slots + i * m->stride;
}

/* Allocate an empty table of cap slots (a power of two). */
static obl_err phm_alloc_table(plain_hashmap *m, size_t cap, uint8_t **ctrl,
                               unsigned char **slots)
{
    size_t bytes;
    if (!obl_mul_ok(cap, m->stride, &bytes))
        return OBL_ERR_TOO_LARGE;
    *ctrl = obl_alloc(&m->mem, cap, 64); /* zeroed: every slot empty */
    if (!*ctrl)
        return OBL_ERR_NOMEM;
    *slots = obl_alloc(&m->mem, bytes, 64);
    if (!*slots) {
        obl_free(&m->mem, *ctrl, cap);
        return OBL_ERR_NOMEM;
    }
    return OBL_OK;
}

/* Smallest power-of-two table holding n entries at load <= 3/4. */
static int phm_capacity_for(size_t n, size_t *cap)
{
    size_t c = PHM_MIN_CAPACITY;
    while (c / 4 * 3 < n) {
        if (c > SIZE_MAX / 2)
            return 0;
        c *= 2;
    }
    *cap = c;
    return 1;
}

obl_err plain_hashmap_create(plain_hashmap **out, const plain_hashmap_params *p)
{
    if (!out || !p || p->key_size == 0 || p->value_size == 0)
        return OBL_ERR_INVALID_ARG;
    size_t stride, cap;
    if (!obl_add_ok(p->key_size, p->value_size, &stride) || !phm_capacity_for(p->capacity, &cap))
        return OBL_ERR_TOO_LARGE;
    obl_alloc_ctx mem;
    obl_alloc_init(&mem, p->alloc);
    plain_hashmap *m = obl_alloc(&mem, sizeof(*m), _Alignof(plain_hashmap));
    if (!m)
        return OBL_ERR_NOMEM;
    m->mem = mem;
    m->key_size = p->key_size;
    m->value_size = p->value_size;
    m->stride = stride;
    m->seed = phm_fmix64(p->seed ^ 0x5bd1e9955bd1e995ULL);
    obl_err e = phm_alloc_table(m, cap, &m->ctrl, &m->slots);
    if (e != OBL_OK) {
        mem = m->mem;
        obl_free(&mem, m, sizeof(*m));
        return e;
    }
    m->capacity = cap;
    m->mask = cap - 1;
    m->size = 0;
    m->max_size = cap / 4 * 3;
    *out = m;
    return OBL_OK;
}

void plain_hashmap_destroy(plain_hashmap *m)
{
    if (!m)
        return;
    obl_free(&m->mem, m->slots, m->capacity * m->stride);
    obl_free(&m->mem, m->ctrl, m->capacity);
    obl_alloc_ctx mem = m->mem;
    obl_free(&mem, m, sizeof(*m));
}

/* Slot index of key (*hit = 1), or of the empty slot that ends its probe
 * sequence, which is where it would be inserted (*hit = 0). */
static inline size_t phm_probe(const plain_hashmap *m, const unsigned char *key, uint64_t h,
                               int *hit)
{
    uint8_t tag = phm_tag(h);
    size_t i = (size_t)h & m->mask;
    for (;;) {
        uint8_t c = m->ctrl[i];
        if (c == PHM_EMPTY) {
            *hit = 0;
            return i;
        }
        if (c == tag && phm_key_eq(m, phm_slot(m, i), key)) {
            *hit = 1;
            return i;
        }
        i = (i + 1) & m->mask;
    }
}

/* Slot index of key, or SIZE_MAX. */
static inline size_t phm_find(const plain_hashmap *m, const unsigned char *key, uint64_t h)
{
    int hit;
    size_t i = phm_probe(m, key, h, &hit);
    return hit ? i : SIZE_MAX;
}

int plain_hashmap_get(const plain_hashmap *m, const void *key, void *value_out)
{
    const unsigned char *k = (const unsigned char *)key;
    size_t i = phm_find(m, k, phm_hash(m, k));
    if (i == SIZE_MAX)
        return 0;
    if (value_out)
        phm_copy(value_out, phm_slot(m, i) + m->key_size, m->value_size);
    return 1;
}

/* Store key and value in the empty slot i. */
static inline void phm_store(plain_hashmap *m, size_t i, const unsigned char *key,
                             const void *value, uint64_t h)
{
    m->ctrl[i] = phm_tag(h);
    unsigned char *s = phm_slot(m, i);
    phm_copy(s, key, m->key_size);
    phm_copy(s + m->key_size, value, m->value_size);
}

/* Place a key known to be absent; the table has room. */
static inline void phm_place(plain_hashmap *m, const unsigned char *key, const void *value,
                             uint64_t h)
{
    size_t i = (size_t)h & m->mask;
    while (m->ctrl[i] != PHM_EMPTY)
        i = (i + 1) & m->mask;
    phm_store(m, i, key, value, h);
}

/* Double the table; on failure nothing changes. */
static obl_err phm_grow(plain_hashmap *m)
{
    if (m->capacity > SIZE_MAX / 2)
        return OBL_ERR_TOO_LARGE;
    size_t ncap = m->capacity * 2;
    uint8_t *nctrl;
    unsigned char *nslots;
    obl_err e = phm_alloc_table(m, ncap, &nctrl, &nslots);
    if (e != OBL_OK)
        return e;
    uint8_t *octrl = m->ctrl;
    unsigned char *oslots = m->slots;
    size_t ocap = m->capacity;
    m->ctrl = nctrl;
    m->slots = nslots;
    m->capacity = ncap;
    m->mask = ncap - 1;
    m->max_size = ncap / 4 * 3;
    for (size_t i = 0; i < ocap; i++) {
        if (octrl[i] == PHM_EMPTY)
            continue;
        const unsigned char *s = oslots + i * m->stride;
        phm_place(m, s, s + m->key_size, phm_hash(m, s));
    }
    obl_free(&m->mem, oslots, ocap * m->stride);
    obl_free(&m->mem, octrl, ocap);
    return OBL_OK;
}

obl_err plain_hashmap_put(plain_hashmap *m, const void *key, const void *value, int *inserted)
{
    const unsigned char *k = (const unsigned char *)key;
    uint64_t h = phm_hash(m, k);
    int hit;
    size_t i = phm_probe(m, k, h, &hit);
    if (hit) {
        phm_copy(phm_slot(m, i) + m->key_size, value, m->value_size);
        if (inserted)
            *inserted = 0;
        return OBL_OK;
    }
    if (m->size >= m->max_size) {
        obl_err e = phm_grow(m);
        if (e != OBL_OK)
            return e;
        phm_place(m, k, value, h); /* the table moved: probe again */
    } else {
        phm_store(m, i, k, value, h);
    }
    m->size++;
    if (inserted)
        *inserted = 1;
    return OBL_OK;
}

int plain_hashmap_erase(plain_hashmap *m, const void *key)
{
    const unsigned char *k = (const unsigned char *)key;
    size_t hole = phm_find(m, k, phm_hash(m, k));
    if (hole == SIZE_MAX)
        return 0;
    size_t j = hole;
    for (;;) {
        j = (j + 1) & m->mask;
        if (m->ctrl[j] == PHM_EMPTY)
            break;
        unsigned char *s = phm_slot(m, j);
        size_t home = (size_t)phm_hash(m, s) & m->mask;
        /* The entry at j may fill the hole unless its home lies cyclically
         * in (hole, j]: then moving it before its home would lose it. */
        if (((j - home) & m->mask) >= ((j - hole) & m->mask)) {
            m->ctrl[hole] = m->ctrl[j];
            phm_copy(phm_slot(m, hole), s, m->stride);
            hole = j;
        }
    }
    m->ctrl[hole] = PHM_EMPTY;
    m->size--;
    return 1;
}

size_t plain_hashmap_size(const plain_hashmap *m) { return m->size; }
size_t plain_hashmap_capacity(const plain_hashmap *m) { return m->capacity; }
size_t plain_hashmap_memory_bytes(const plain_hashmap *m) { return m->mem.bytes; }

int plain_hashmap_validate(const plain_hashmap *m)
{
    size_t count = 0;
    for (size_t i = 0; i < m->capacity; i++) {
        if (m->ctrl[i] == PHM_EMPTY)
            continue;
        count++;
        const unsigned char *s = phm_slot(m, i);
        uint64_t h = phm_hash(m, s);
        if (m->ctrl[i] != phm_tag(h))
            return 0;
        /* reachable: no empty slot between home and i, and the first match
         * on the way is i itself (so the key is not stored twice) */
        if (phm_find(m, s, h) != i)
            return 0;
    }
    return count == m->size && m->size <= m->max_size;
}
