/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the network tests: start obl-server on an ephemeral loopback
 * port, connect and read the hello, send and receive whole frames with a
 * timeout (a test never hangs on a silent server).
 */
#ifndef OBL_TEST_NET_UTIL_H
#define OBL_TEST_NET_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "wire.h"

typedef struct test_server {
    pid_t pid;        /* the child started: obl-server, or mpirun */
    pid_t signal_pid; /* where stop signals go: pid, or the pid the server
                         printed ("obl-server: pid P": rank 0 under mpirun) */
    unsigned port;
} test_server;

/* Starts `path` with `args` (NULL-terminated) plus --port 0; 0 on success
 * once it prints its listening line. */
int net_server_start(test_server *s, const char *path, const char *const *args);
/* The same with the whole command line (argv[0] the program; the caller
 * passes --port 0 where the server's flags go). */
int net_server_start_argv(test_server *s, const char *const *argv);
/* Sends sig to signal_pid and waits up to `seconds` for pid; returns the
 * exit status, or -1 if it did not exit normally in time (then killed). */
int net_server_stop(test_server *s, int sig, double seconds);

/* A connection with the hello read; -1 on failure. Receives time out after
 * 10 seconds. */
int net_connect(unsigned port, serve_hello *h);
int net_send_all(int fd, const void *buf, size_t len);
/* 1: got len bytes; 0: orderly EOF before any byte; -1: error or timeout. */
int net_recv_all(int fd, void *buf, size_t len);

#endif
