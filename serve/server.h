/*
 * obl-server's event loop (docs/server.md): one thread, epoll, no thread
 * per connection. Requests from every connection join one FIFO in arrival
 * order; when the previous batch finishes, whatever has arrived (at most
 * max_batch) is the next batch, padded up to a power of two with dummy GETs
 * when asked, answered by the backend, and the answers go back on their
 * connections with the arrival, dispatch and completion times. With
 * batch_thread batches run on a second thread, which takes the next one
 * itself when one ends (one at a time), and the finished batches' answers
 * go out while it runs; the backend's idle hook runs there too.
 */
#ifndef OBL_SERVE_SERVER_H
#define OBL_SERVE_SERVER_H

#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "wire.h"

typedef struct serve_config {
    const char *host;   /* numeric IPv4 or IPv6 address */
    unsigned port;      /* 0: an ephemeral port, printed when listening */
    uint32_t max_batch; /* 1 .. SERVE_MAX_BATCH */
    uint32_t pad;       /* SERVE_PAD_* */
    uint32_t max_conns;
    int gets_only;      /* public: only GETs are served (--ops get) */
    int batch_thread;   /* batches run on a second thread while the loop writes
                           the previous batch's answers (docs/server.md) */
    uint32_t spin_us;   /* the batch thread polls for work this long after a
                           batch before it sleeps */
    int cpu_loop, cpu_batch; /* CPUs of the loop and the batch thread; -1: any */
    uint64_t n, capacity, key_seed;
} serve_config;

#define SERVE_MAX_BATCH 65536u

/* Batch statistics of a run, printed at shutdown. */
typedef struct serve_totals {
    uint64_t batches, requests, dummies, bad_frames, bad_ops, map_errors, conns;
    uint64_t size_log2[18]; /* batches by executed size: [floor(log2 size)] */
} serve_totals;

/* Blocks SIGTERM and SIGINT in the calling thread and so in every thread it
 * starts afterwards (a backend's workers): serve_run reads them through a
 * signalfd, which only works if no thread takes them. 0 on success. */
int serve_block_signals(void);

/* Runs until SIGTERM or SIGINT (blocked here and read via a signalfd):
 * prints "obl-server: listening on HOST:PORT" on `ready` once accepting,
 * then serves; at the signal stops reading, answers what has arrived,
 * flushes (at most two seconds) and returns 0; -1 if it cannot listen. */
int serve_run(const serve_config *cfg, serve_backend *be, FILE *ready, serve_totals *tot);

#endif /* OBL_SERVE_SERVER_H */
