/* The wire protocol's encoders and the served map's contents (wire.h). */
#define _GNU_SOURCE
#include "wire.h"

#include <stdlib.h>
#include <time.h>

uint64_t serve_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int serve_buf_reserve(unsigned char **buf, size_t *cap, size_t *head, size_t len, size_t more)
{
    if (*head + len + more <= *cap)
        return 0;
    if (*head) {
        memmove(*buf, *buf + *head, len);
        *head = 0;
        if (len + more <= *cap)
            return 0;
    }
    size_t n = *cap ? *cap : 4096;
    while (n < len + more)
        n *= 2;
    unsigned char *p = realloc(*buf, n);
    if (!p)
        return -1;
    *buf = p;
    *cap = n;
    return 0;
}

void serve_hello_encode(unsigned char out[SERVE_HELLO_BYTES], const serve_hello *h)
{
    memset(out, 0, SERVE_HELLO_BYTES);
    serve_put32(out, SERVE_MAGIC);
    serve_put32(out + 4, SERVE_VERSION);
    serve_put32(out + 8, h->key_bytes);
    serve_put32(out + 12, h->value_bytes);
    serve_put32(out + 16, h->max_batch);
    serve_put32(out + 20, h->pad);
    serve_put64(out + 24, h->n);
    serve_put64(out + 32, h->capacity);
    serve_put64(out + 40, h->key_seed);
}

int serve_hello_decode(serve_hello *h, const unsigned char in[SERVE_HELLO_BYTES])
{
    if (serve_get32(in) != SERVE_MAGIC || serve_get32(in + 4) != SERVE_VERSION)
        return -1;
    h->key_bytes = serve_get32(in + 8);
    h->value_bytes = serve_get32(in + 12);
    h->max_batch = serve_get32(in + 16);
    h->pad = serve_get32(in + 20);
    h->n = serve_get64(in + 24);
    h->capacity = serve_get64(in + 32);
    h->key_seed = serve_get64(in + 40);
    return h->key_bytes && h->value_bytes && h->max_batch && h->n ? 0 : -1;
}

void serve_req_encode(unsigned char *out, uint64_t id, uint32_t op, const unsigned char *key,
                      size_t k, const unsigned char *value, size_t v)
{
    serve_put32(out, (uint32_t)(12 + k + v));
    serve_put64(out + 4, id);
    serve_put32(out + 12, op);
    memcpy(out + SERVE_REQ_HEAD, key, k);
    if (value)
        memcpy(out + SERVE_REQ_HEAD + k, value, v);
    else
        memset(out + SERVE_REQ_HEAD + k, 0, v);
}

void serve_resp_encode(unsigned char *out, const serve_resp *r, size_t v)
{
    serve_put32(out, (uint32_t)(44 + v));
    serve_put64(out + 4, r->id);
    serve_put32(out + 12, r->status);
    serve_put32(out + 16, r->found);
    serve_put32(out + 20, r->batch);
    serve_put64(out + 24, r->arrival_ns);
    serve_put64(out + 32, r->dispatch_ns);
    serve_put64(out + 40, r->complete_ns);
    if (r->value)
        memcpy(out + SERVE_RESP_HEAD, r->value, v);
    else
        memset(out + SERVE_RESP_HEAD, 0, v);
}

int serve_resp_decode(serve_resp *r, const unsigned char *in, size_t v)
{
    if (serve_get32(in) != 44 + v)
        return -1;
    r->id = serve_get64(in + 4);
    r->status = serve_get32(in + 12);
    r->found = serve_get32(in + 16);
    r->batch = serve_get32(in + 20);
    r->arrival_ns = serve_get64(in + 24);
    r->dispatch_ns = serve_get64(in + 32);
    r->complete_ns = serve_get64(in + 40);
    r->value = in + SERVE_RESP_HEAD;
    return 0;
}

uint64_t serve_key_space(size_t k)
{
    return k >= 8 ? UINT64_MAX : (uint64_t)1 << (8 * k);
}

/* see wire.h */
uint64_t serve_dummy_id(uint64_t n, size_t k)
{
    uint64_t id = n + (UINT64_C(1) << 32);
    return id < serve_key_space(k) ? id : serve_key_space(k) - 1;
}

/* Keys of up to 8 bytes are the id itself (little-endian); longer keys
 * start with a keyed bijection of the id (splitmix64's finaliser is one)
 * and continue with bytes derived from it. */
void serve_key(unsigned char *key, size_t k, uint64_t id, uint64_t seed)
{
    if (k < 8) {
        for (size_t i = 0; i < k; i++)
            key[i] = (unsigned char)(id >> (8 * i));
        return;
    }
    uint64_t w = serve_mix64(id ^ seed);
    memcpy(key, &w, 8);
    for (size_t i = 8; i < k; i += 8) {
        uint64_t x = serve_mix64(w + i);
        memcpy(key + i, &x, k - i < 8 ? k - i : 8);
    }
}

void serve_value(unsigned char *value, size_t v, uint64_t id, uint64_t seed)
{
    uint64_t w = serve_mix64(id ^ serve_mix64(seed ^ 0x76616c7565ULL));
    for (size_t i = 0; i < v; i += 8) {
        uint64_t x = serve_mix64(w + i);
        memcpy(value + i, &x, v - i < 8 ? v - i : 8);
    }
}
