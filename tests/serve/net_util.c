/* SPDX-License-Identifier: MIT */
/* Helpers of the network tests (net_util.h). */
#define _GNU_SOURCE
#include "net_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Servers still running at exit are killed, so a failed test leaves none. */
static pid_t started[16];

static void kill_started(void)
{
    for (int i = 0; i < 16; i++)
        if (started[i] > 0 && waitpid(started[i], NULL, WNOHANG) == 0) {
            kill(started[i], SIGKILL);
            waitpid(started[i], NULL, 0);
        }
}

static void remember(pid_t pid)
{
    static int registered;
    if (!registered)
        registered = atexit(kill_started) == 0;
    for (int i = 0; i < 16; i++)
        if (started[i] <= 0 || waitpid(started[i], NULL, WNOHANG) != 0) {
            started[i] = pid;
            return;
        }
}

int net_server_start(test_server *s, const char *path, const char *const *args)
{
    const char *argv[32] = {path, "--port", "0"};
    int n = 3;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    return net_server_start_argv(s, argv);
}

int net_server_start_argv(test_server *s, const char *const *argv)
{
    const char *path = argv[0];
    int p[2];
    if (pipe(p) != 0)
        return -1;
    s->pid = fork();
    if (s->pid < 0)
        return -1;
    if (s->pid == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    remember(s->pid);
    FILE *f = fdopen(p[0], "r");
    char line[256];
    int ok = 0;
    long sp;
    s->signal_pid = s->pid;
    while (f && fgets(line, sizeof(line), f)) {
        char *c = strrchr(line, ':');
        if (sscanf(line, "obl-server: pid %ld", &sp) == 1)
            s->signal_pid = (pid_t)sp;
        if (strstr(line, "listening on") && c && sscanf(c + 1, "%u", &s->port) == 1) {
            ok = 1;
            break;
        }
    }
    if (f)
        fclose(f); /* the server's later stdout writes go nowhere: it writes none */
    if (!ok) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        return -1;
    }
    return 0;
}

int net_server_stop(test_server *s, int sig, double seconds)
{
    kill(s->signal_pid, sig);
    struct timespec ts = {0, 10000000};
    for (double waited = 0; waited < seconds; waited += 0.01) {
        int st;
        pid_t r = waitpid(s->pid, &st, WNOHANG);
        if (r == s->pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        nanosleep(&ts, NULL);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    return -1;
}

int net_connect(unsigned port, serve_hello *h)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {10, 0};
    int one = 1;
    unsigned char buf[SERVE_HELLO_BYTES];
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        net_recv_all(fd, buf, sizeof(buf)) != 1 || serve_hello_decode(h, buf) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int net_send_all(int fd, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    while (len) {
        ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

int net_recv_all(int fd, void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t r = recv(fd, p + got, len - got, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0 && got == 0)
            return 0;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 1;
}
