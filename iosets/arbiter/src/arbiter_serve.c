/* The arbiter's event loop: see arbiter_serve.h.
 *
 * A round is one epoll_wait: each ready connection's bytes are read (at most one line's worth
 * per round, so that no client starves the others), each complete line is applied to the core
 * at once and the core's grants are sent at once; when the round ends, the performing jobs
 * whose rate changed during the round are sent one RATE each (rates that changed and changed
 * back within a round are not sent). A connection whose peer closed, whose send failed or
 * whose client stopped reading (its pending lines overflow OUT_MAX) is "broken": the job
 * leaves the core at once (its set admits its next job) and the memory is freed when the
 * round ends, so that no later event of the round touches freed memory. */
#define _GNU_SOURCE
#include "arbiter_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_EVENTS 512
#define OUT_MAX 2048   /* pending output of a connection: ~60 lines */
#define JOB_ID_MAX 64
#define MAX_TOKENS 6

enum { TAG_LISTENER, TAG_STOP, TAG_CONN };

typedef struct {
    int tag;
    int fd;
} endpoint;

typedef struct conn {
    endpoint ep;              /* first: epoll's data.ptr points here */
    int32_t job;              /* core handle, -1 before HELLO */
    int8_t broken;            /* leaves at the next reap */
    int8_t dead;              /* closed, freed when the round ends */
    int8_t writing;           /* EPOLLOUT armed */
    uint16_t in_len, out_len;
    char in[AS_LINE_MAX];
    char out[OUT_MAX];
    char name[JOB_ID_MAX + 1];
    struct conn *prev, *next; /* live connections */
    struct conn *next_broken; /* broken list, then graveyard */
} conn;

typedef struct {
    const as_config *config;
    as_stats *stats;
    ac_core *core;
    int epoll_fd;
    endpoint *listeners;
    int paused;               /* listeners off after EMFILE, until a connection closes */
    conn *live;               /* doubly linked */
    conn *broken;             /* to leave the core, then closed */
    conn *graveyard;          /* closed, freed when the round ends */
    conn **owner;             /* core handle -> connection */
    int32_t cap_owner;
    conn **names;             /* open addressing by job id, linear probing; NULL: empty */
    int32_t cap_names, n_names;
} server;

/* ------------------------------------------------------------------ job ids */

static uint32_t hash_name(const char *name)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *name; name++)
        h = (h ^ (uint8_t)*name) * 16777619u;
    return h;
}

static conn *find_name(const server *s, const char *name)
{
    if (s->cap_names == 0)
        return NULL;
    uint32_t mask = (uint32_t)s->cap_names - 1;
    for (uint32_t i = hash_name(name) & mask; s->names[i] != NULL; i = (i + 1) & mask)
        if (strcmp(s->names[i]->name, name) == 0)
            return s->names[i];
    return NULL;
}

static void put_name(server *s, conn *c)
{
    uint32_t mask = (uint32_t)s->cap_names - 1;
    uint32_t i = hash_name(c->name) & mask;
    while (s->names[i] != NULL)
        i = (i + 1) & mask;
    s->names[i] = c;
    s->n_names++;
}

/* Keeps the table at most half full; 0 when out of memory. */
static int reserve_name(server *s)
{
    if (2 * (s->n_names + 1) <= s->cap_names)
        return 1;
    int32_t old_cap = s->cap_names, cap = old_cap > 0 ? 2 * old_cap : 64;
    conn **old = s->names, **table = calloc((size_t)cap, sizeof(conn *));
    if (table == NULL)
        return 0;
    s->names = table;
    s->cap_names = cap;
    s->n_names = 0;
    for (int32_t i = 0; i < old_cap; i++)
        if (old[i] != NULL)
            put_name(s, old[i]);
    free(old);
    return 1;
}

/* Removes `c` (present) with backward-shift deletion. */
static void drop_name(server *s, const conn *c)
{
    uint32_t mask = (uint32_t)s->cap_names - 1;
    uint32_t i = hash_name(c->name) & mask;
    while (s->names[i] != c)
        i = (i + 1) & mask;
    for (uint32_t j = (i + 1) & mask; s->names[j] != NULL; j = (j + 1) & mask) {
        uint32_t home = hash_name(s->names[j]->name) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            s->names[i] = s->names[j];
            i = j;
        }
    }
    s->names[i] = NULL;
    s->n_names--;
}

static int valid_job_id(const char *id)
{
    size_t n = strlen(id);
    if (n < 1 || n > JOB_ID_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = id[i];
        int ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                 ch == '.' || ch == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ output */

static void mark_broken(server *s, conn *c)
{
    if (!c->broken) {
        c->broken = 1;
        c->next_broken = s->broken;
        s->broken = c;
    }
}

static void want_writable(server *s, conn *c, int on)
{
    if (c->writing == on)
        return;
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = &c->ep};
    if (epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, c->ep.fd, &ev) == 0)
        c->writing = (int8_t)on;
    else
        mark_broken(s, c);
}

/* Sends what is pending; 0 if the connection broke. */
static int flush(server *s, conn *c)
{
    size_t done = 0;
    while (done < c->out_len) {
        ssize_t n = send(c->ep.fd, c->out + done, c->out_len - done, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            mark_broken(s, c);
            return 0;
        }
        done += (size_t)n;
    }
    memmove(c->out, c->out + done, c->out_len - done);
    c->out_len = (uint16_t)(c->out_len - done);
    want_writable(s, c, c->out_len > 0);
    return !c->broken;
}

static void send_text(server *s, conn *c, const char *text, size_t len)
{
    if (c->broken)
        return;
    if (c->out_len + len > OUT_MAX) {
        s->stats->dropped++; /* its client reads none of its lines */
        mark_broken(s, c);
        return;
    }
    memcpy(c->out + c->out_len, text, len);
    c->out_len = (uint16_t)(c->out_len + len);
    if (!c->writing) /* else EPOLLOUT sends it, in order */
        flush(s, c);
}

static void send_number(server *s, conn *c, const char *word, double value)
{
    char line[64];
    int n = snprintf(line, sizeof line, "%s %.17g\n", word, value);
    send_text(s, c, line, (size_t)n);
}

/* "<reason>\n", the reason cut to fit a line. */
__attribute__((format(printf, 3, 0))) static void send_error(server *s, conn *c, const char *format, va_list args)
{
    char line[AS_LINE_MAX];
    memcpy(line, "ERR ", 4);
    int n = vsnprintf(line + 4, sizeof line - 5, format, args);
    n = n < 0 ? 0 : n > (int)sizeof line - 6 ? (int)sizeof line - 6 : n;
    line[4 + n] = '\n';
    s->stats->errors++;
    send_text(s, c, line, (size_t)n + 5);
}

/* ERR, the connection kept: the job's state is unchanged. */
__attribute__((format(printf, 3, 4))) static void answer_error(server *s, conn *c, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    send_error(s, c, format, args);
    va_end(args);
}

/* ERR, then the connection closes. Unread input is discarded first, so that closing sends a
 * FIN after the answer rather than a reset that could destroy it before the client reads it. */
__attribute__((format(printf, 3, 4))) static void refuse(server *s, conn *c, const char *format, ...)
{
    char sink[4096];
    for (int i = 0; i < 16 && recv(c->ep.fd, sink, sizeof sink, MSG_DONTWAIT) > 0; i++)
        ;
    va_list args;
    va_start(args, format);
    send_error(s, c, format, args);
    va_end(args);
    if (!c->broken)
        flush(s, c);
    shutdown(c->ep.fd, SHUT_WR);
    mark_broken(s, c);
}

/* ------------------------------------------------------------------ the core's answers */

static void send_grants(server *s)
{
    const ac_notice *grants;
    int32_t n = ac_admit(s->core, &grants);
    for (int32_t i = 0; i < n; i++) {
        send_number(s, s->owner[grants[i].job], "GRANT", grants[i].rate);
        s->stats->grants++;
    }
}

static void send_rates(server *s)
{
    const ac_notice *changes;
    int32_t n = ac_rates(s->core, &changes);
    for (int32_t i = 0; i < n; i++)
        send_number(s, s->owner[changes[i].job], "RATE", changes[i].rate);
}

/* Every broken connection leaves the core (its set admits its next job) and is closed. */
static void reap(server *s)
{
    while (s->broken != NULL) {
        conn *c = s->broken;
        s->broken = c->next_broken;
        if (c->job >= 0) {
            ac_leave(s->core, c->job);
            s->owner[c->job] = NULL;
            drop_name(s, c);
            c->job = -1;
            send_grants(s);
        }
        close(c->ep.fd); /* also leaves the epoll set */
        c->dead = 1;
        if (c->prev != NULL)
            c->prev->next = c->next;
        else
            s->live = c->next;
        if (c->next != NULL)
            c->next->prev = c->prev;
        c->next_broken = s->graveyard;
        s->graveyard = c;
        if (s->paused) { /* a descriptor is free again */
            s->paused = 0;
            for (int i = 0; i < s->config->n_listen; i++) {
                struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->listeners[i]};
                epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, s->listeners[i].fd, &ev);
            }
        }
    }
}

/* ------------------------------------------------------------------ lines */

static int split(char *line, char **tokens)
{
    int n = 0;
    char *rest;
    for (char *p = strtok_r(line, " \t", &rest); p != NULL; p = strtok_r(NULL, " \t", &rest))
        if (n < MAX_TOKENS)
            tokens[n++] = p;
        else
            return MAX_TOKENS + 1;
    return n;
}

static int parse_set(const char *text, int64_t *set)
{
    if (*text < '0' || *text > '9')
        return 0;
    char *end;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (*end != '\0' || errno == ERANGE)
        return 0;
    *set = value;
    return 1;
}

static int parse_number(const char *text, double *value)
{
    char *end;
    *value = strtod(text, &end);
    return end != text && *end == '\0' && isfinite(*value);
}

static void hello(server *s, conn *c, char **tok, int n)
{
    int64_t set;
    double priority;
    if (n != 5 || strcmp(tok[0], "HELLO") != 0) {
        refuse(s, c, "expected HELLO 1 <job_id> <set> <priority>");
        return;
    }
    if (strcmp(tok[1], "1") != 0)
        refuse(s, c, "unsupported protocol version '%.16s': this arbiter speaks 1", tok[1]);
    else if (!valid_job_id(tok[2]))
        refuse(s, c, "bad job_id '%.64s': expected 1 to 64 of A-Z a-z 0-9 _ . -", tok[2]);
    else if (!parse_set(tok[3], &set))
        refuse(s, c, "bad set '%.64s': expected an integer >= 0", tok[3]);
    else if (!parse_number(tok[4], &priority) || !(priority > 0))
        refuse(s, c, "bad priority '%.64s': expected a finite number > 0", tok[4]);
    else if (find_name(s, tok[2]) != NULL)
        refuse(s, c, "job %s is already connected", tok[2]);
    else {
        int32_t job;
        int status = reserve_name(s) ? ac_join(s->core, set, priority, &job) : AC_NO_MEMORY;
        if (status == AC_OK && job >= s->cap_owner) {
            int32_t cap = s->cap_owner > 0 ? 2 * s->cap_owner : 64;
            while (cap <= job)
                cap *= 2;
            conn **bigger = realloc(s->owner, sizeof(conn *) * (size_t)cap);
            if (bigger == NULL) {
                ac_leave(s->core, job);
                status = AC_NO_MEMORY;
            } else {
                s->owner = bigger;
                s->cap_owner = cap;
            }
        }
        if (status == AC_BAD_VALUE)
            refuse(s, c, "bad priority '%.64s': the rate B p must be a finite number > 0", tok[4]);
        else if (status != AC_OK)
            refuse(s, c, "the arbiter is out of memory");
        else {
            c->job = job;
            s->owner[job] = c;
            strcpy(c->name, tok[2]);
            put_name(s, c);
            s->stats->jobs++;
            send_number(s, c, "OK", s->config->bandwidth);
        }
    }
}

static void apply_line(server *s, conn *c, char *line)
{
    char *tok[MAX_TOKENS];
    int n = split(line, tok);
    if (n == 0)
        return; /* an empty line */
    if (c->job < 0) {
        hello(s, c, tok, n);
        return;
    }
    double bytes;
    if (strcmp(tok[0], "BEGIN") == 0) {
        if (n != 2 || !parse_number(tok[1], &bytes) || !(bytes >= 0))
            refuse(s, c, "bad BEGIN: expected BEGIN <bytes>, a finite number >= 0");
        else if (ac_begin(s->core, c->job, bytes) == AC_PHASE_OPEN)
            answer_error(s, c, "phase already open");
        else
            send_grants(s);
    } else if (strcmp(tok[0], "END") == 0 && n == 1) {
        if (ac_end(s->core, c->job) == AC_NO_PHASE)
            answer_error(s, c, "no phase open");
        else
            send_grants(s);
    } else if (strcmp(tok[0], "BYE") == 0 && n == 1) {
        mark_broken(s, c);
    } else if (strcmp(tok[0], "HELLO") == 0) {
        refuse(s, c, "HELLO was already said");
    } else {
        refuse(s, c, "unknown line '%.32s': expected BEGIN <bytes>, END or BYE", tok[0]);
    }
}

/* Reads what the connection has (at most a line's worth) and applies its complete lines. */
static void on_readable(server *s, conn *c)
{
    ssize_t got = recv(c->ep.fd, c->in + c->in_len, AS_LINE_MAX - c->in_len, 0);
    if (got <= 0) {
        if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            mark_broken(s, c); /* the peer closed, or the connection failed */
        return;
    }
    c->in_len = (uint16_t)(c->in_len + got);
    size_t start = 0;
    char *newline;
    while (!c->broken && (newline = memchr(c->in + start, '\n', c->in_len - start)) != NULL) {
        *newline = '\0';
        if (newline > c->in + start && newline[-1] == '\r')
            newline[-1] = '\0';
        apply_line(s, c, c->in + start);
        start = (size_t)(newline - c->in) + 1;
    }
    if (c->broken)
        return;
    memmove(c->in, c->in + start, c->in_len - start);
    c->in_len = (uint16_t)(c->in_len - start);
    if (c->in_len == AS_LINE_MAX)
        refuse(s, c, "line too long");
}

/* ------------------------------------------------------------------ accept */

static void pause_listeners(server *s)
{
    s->paused = 1;
    for (int i = 0; i < s->config->n_listen; i++) {
        struct epoll_event ev = {.events = 0, .data.ptr = &s->listeners[i]};
        epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, s->listeners[i].fd, &ev);
    }
}

static void on_accept(server *s, int listen_fd)
{
    for (;;) {
        int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                pause_listeners(s); /* until a connection closes */
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* fails harmlessly on unix sockets */
        conn *c = calloc(1, sizeof(conn));
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        if (c == NULL || epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            free(c);
            close(fd);
            continue;
        }
        c->ep = (endpoint){TAG_CONN, fd};
        c->job = -1;
        c->next = s->live;
        if (s->live != NULL)
            s->live->prev = c;
        s->live = c;
        s->stats->connections++;
    }
}

/* ------------------------------------------------------------------ the loop */

static int fail(char *error, size_t len, const char *what)
{
    snprintf(error, len, "%s: %s", what, strerror(errno));
    return -1;
}

static void end_round(server *s)
{
    for (;;) {
        send_rates(s);
        if (s->broken == NULL)
            break;
        reap(s); /* may change the performing set: rates again */
    }
    while (s->graveyard != NULL) {
        conn *c = s->graveyard;
        s->graveyard = c->next_broken;
        free(c);
    }
}

static int loop(server *s, char *error, size_t error_len)
{
    struct epoll_event events[MAX_EVENTS];
    for (;;) {
        int n = epoll_wait(s->epoll_fd, events, MAX_EVENTS, -1);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return fail(error, error_len, "epoll_wait");
        }
        int stop = 0;
        for (int i = 0; i < n; i++) {
            endpoint *ep = events[i].data.ptr;
            if (ep->tag == TAG_STOP) {
                stop = 1;
            } else if (ep->tag == TAG_LISTENER) {
                on_accept(s, ep->fd);
            } else {
                conn *c = (conn *)ep;
                if (c->dead || c->broken)
                    continue;
                if (events[i].events & EPOLLOUT)
                    flush(s, c);
                if (!c->broken && (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                    on_readable(s, c);
                reap(s);
            }
        }
        end_round(s);
        if (stop)
            return 0;
    }
}

static void close_all(server *s)
{
    while (s->live != NULL) {
        conn *c = s->live;
        s->live = c->next;
        close(c->ep.fd);
        free(c);
    }
}

int as_serve(const as_config *config, as_stats *stats, char *error, size_t error_len)
{
    server s = {.config = config, .stats = stats, .epoll_fd = -1};
    int status = -1;
    s.core = ac_create(config->policy, config->bandwidth);
    s.listeners = calloc((size_t)(config->n_listen > 0 ? config->n_listen : 1), sizeof(endpoint));
    endpoint stop = {TAG_STOP, config->stop_fd};
    if (s.core == NULL || s.listeners == NULL) {
        errno = ENOMEM;
        fail(error, error_len, "arbiter");
        goto done;
    }
    s.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (s.epoll_fd < 0) {
        fail(error, error_len, "epoll_create1");
        goto done;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &stop};
    if (epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, config->stop_fd, &ev) != 0) {
        fail(error, error_len, "the stop descriptor");
        goto done;
    }
    for (int i = 0; i < config->n_listen; i++) {
        int fd = config->listen_fds[i];
        s.listeners[i] = (endpoint){TAG_LISTENER, fd};
        ev = (struct epoll_event){.events = EPOLLIN, .data.ptr = &s.listeners[i]};
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 || epoll_ctl(s.epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
            fail(error, error_len, "a listening socket");
            goto done;
        }
    }
    status = loop(&s, error, error_len);
done:
    close_all(&s);
    if (s.epoll_fd >= 0)
        close(s.epoll_fd);
    ac_destroy(s.core);
    free(s.listeners);
    free(s.owner);
    free(s.names);
    return status;
}
