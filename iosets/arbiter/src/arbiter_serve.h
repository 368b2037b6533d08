/* The arbiter's event loop: one thread, epoll, non-blocking stream sockets, wire protocol v1
 * (docs/guides/arbiter.md). Plain C and POSIX/Linux; no Python. */
#ifndef IOSETS_ARBITER_SERVE_H
#define IOSETS_ARBITER_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "arbiter_core.h"

/* The longest line, its "\n" included, either way. */
#define AS_LINE_MAX 256

typedef struct {
    const int *listen_fds; /* listening stream sockets (unix or tcp), made non-blocking here */
    int n_listen;
    int stop_fd;           /* serving ends when it becomes readable (a pipe's read end) */
    ac_policy policy;
    double bandwidth;      /* B, bytes/s */
} as_config;

typedef struct {
    int64_t connections; /* accepted */
    int64_t jobs;        /* HELLOs answered OK */
    int64_t grants;      /* GRANT lines sent */
    int64_t errors;      /* ERR lines sent */
    int64_t dropped;     /* connections closed because their client did not read its lines */
} as_stats;

/* Serves until stop_fd is readable. Returns 0, or -1 with a message in `error` (a system call
 * that failed, with its errno's text). Every connection is closed on return. */
int as_serve(const as_config *config, as_stats *stats, char *error, size_t error_len);

#endif
