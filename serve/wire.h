/*
 * The wire protocol of obl-server and obl-load (docs/server.md), and the
 * deterministic contents of the served map that both sides derive from the
 * server's hello: key i and its value are functions of (i, key seed), so a
 * client can check every answer without holding the map.
 *
 * All integers are little-endian. Frame sizes are fixed by the map's key
 * size K and value size V, announced in the hello:
 *   hello    (server -> client, once, on accept)        SERVE_HELLO_BYTES
 *   request  u32 len = 12+K+V, u64 id, u32 op, key[K], value[V]
 *   response u32 len = 44+V, u64 id, u32 status, u32 found, u32 batch,
 *            u64 arrival_ns, u64 dispatch_ns, u64 complete_ns, value[V]
 * Timestamps are the server's CLOCK_MONOTONIC in nanoseconds.
 */
#ifndef OBL_SERVE_WIRE_H
#define OBL_SERVE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SERVE_MAGIC 0x534c424fu /* "OBLS" */
#define SERVE_VERSION 1u
#define SERVE_HELLO_BYTES 48u
#define SERVE_REQ_HEAD 16u  /* len, id, op */
#define SERVE_RESP_HEAD 48u /* len .. complete_ns */

/* Request ops: the map's (OBL_OMAP_GET, _PUT, _ERASE). */
#define SERVE_OP_GET 0u
#define SERVE_OP_PUT 1u
#define SERVE_OP_ERASE 2u

/* Response status. BAD_FRAME is sent with id 0 before the server closes the
 * connection (a stream with a wrong length cannot be resynchronised). */
#define SERVE_OK 0u
#define SERVE_BAD_OP 1u
#define SERVE_BAD_FRAME 2u
#define SERVE_MAP_ERROR 3u /* the map returned an obl error (e.g. FULL) */

/* Padding policies (hello.pad). */
#define SERVE_PAD_NONE 0u
#define SERVE_PAD_POW2 1u

typedef struct serve_hello {
    uint32_t key_bytes, value_bytes, max_batch, pad;
    uint64_t n, capacity, key_seed;
} serve_hello;

typedef struct serve_resp {
    uint64_t id;
    uint32_t status, found, batch;
    uint64_t arrival_ns, dispatch_ns, complete_ns;
    const unsigned char *value; /* V bytes inside the frame */
} serve_resp;

static inline size_t serve_req_bytes(size_t k, size_t v) { return SERVE_REQ_HEAD + k + v; }
static inline size_t serve_resp_bytes(size_t v) { return SERVE_RESP_HEAD + v; }

static inline void serve_put32(unsigned char *p, uint32_t x) { memcpy(p, &x, 4); }
static inline void serve_put64(unsigned char *p, uint64_t x) { memcpy(p, &x, 8); }
static inline uint32_t serve_get32(const unsigned char *p)
{
    uint32_t x;
    memcpy(&x, p, 4);
    return x;
}
static inline uint64_t serve_get64(const unsigned char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    return x;
}

void serve_hello_encode(unsigned char out[SERVE_HELLO_BYTES], const serve_hello *h);
/* 0 on success; -1 if the magic or version is wrong or a size is 0. */
int serve_hello_decode(serve_hello *h, const unsigned char in[SERVE_HELLO_BYTES]);

/* Writes one request frame (serve_req_bytes(k, v) bytes); value NULL = zeros. */
void serve_req_encode(unsigned char *out, uint64_t id, uint32_t op, const unsigned char *key,
                      size_t k, const unsigned char *value, size_t v);
/* Writes one response frame (serve_resp_bytes(v) bytes); value NULL = zeros. */
void serve_resp_encode(unsigned char *out, const serve_resp *r, size_t v);
/* Reads one response frame; -1 if its length field is not 44+V. */
int serve_resp_decode(serve_resp *r, const unsigned char *in, size_t v);

/* The served map's key number id (< 256^min(k, 8)) and its value: distinct
 * ids give distinct keys. Ids >= n are the keys a client uses for misses. */
void serve_key(unsigned char *key, size_t k, uint64_t id, uint64_t seed);
void serve_value(unsigned char *value, size_t v, uint64_t id, uint64_t seed);
/* The largest id + 1 that serve_key can encode in k bytes. */
uint64_t serve_key_space(size_t k);
/* The id of the padding's dummy key: past every stored id (< n) and every
 * miss a client of this header draws (n .. n + 2^32 - 1) where k allows. */
uint64_t serve_dummy_id(uint64_t n, size_t k);

/* Room for `more` bytes after the len bytes at *buf + *head (an output
 * queue): moves them to the front or grows the buffer. 0, or -1 out of
 * memory (the buffer unchanged). */
int serve_buf_reserve(unsigned char **buf, size_t *cap, size_t *head, size_t len, size_t more);

/* CLOCK_MONOTONIC in nanoseconds (the clock of every timestamp). */
uint64_t serve_now_ns(void);

/* splitmix64 (Steele, Lea, Flood 2014): the workload's mixer and RNG. */
static inline uint64_t serve_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

#endif /* OBL_SERVE_WIRE_H */
