/* The C client of the IO-SETS arbiter: wire protocol v1 (docs/guides/arbiter.md), plain POSIX C. */
#define _POSIX_C_SOURCE 200809L

#include "iosets_arbiter.h"

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define LINE_BYTES 256 /* the protocol's longest line, "\n" included */
#define DEFAULT_CONNECT_S 5.0
#define DEFAULT_GRANT_S 30.0
#define PACER_SLICE_S 1e-3 /* how often a sleeping pacer asks for the rate again */
#define WHY_BYTES 1024     /* an outage's reason: address, job id and the arbiter's line */

struct iosets_arbiter {
    char address[512];
    char job_id[65];
    int set;
    double priority;
    double connect_s, grant_s;
    int fd;             /* -1 while not connected */
    int performing;     /* a phase is granted and not ended */
    int outage_told;    /* the current outage has had its stderr line */
    double rate;        /* bytes/s while performing, else 0 */
    char in[LINE_BYTES + 1];
    size_t in_len;
    iosets_pacer pacer;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_until(double date)
{
    struct timespec t;
    t.tv_sec = (time_t)date;
    t.tv_nsec = (long)((date - (double)t.tv_sec) * 1e9);
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
    }
}

static void say(const char *format, ...)
{
    char text[WHY_BYTES + 64];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    fprintf(stderr, "iosets-arbiter: %s\n", text); /* one write: lines of several processes do not mix */
}

static void disconnect(iosets_arbiter *a)
{
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
    a->in_len = 0;
    a->performing = 0;
    a->rate = 0.0;
}

/* The connection is lost or refused: the phase runs unscheduled, said once per outage. */
static double unscheduled(iosets_arbiter *a, const char *why)
{
    if (!a->outage_told)
        say("%s: proceeding unscheduled", why);
    a->outage_told = 1;
    disconnect(a);
    return 0.0;
}

/* Milliseconds left until `deadline` for poll(), at least 0. */
static int ms_left(double deadline)
{
    double left = deadline - now_s();
    return left <= 0 ? 0 : (int)ceil(left * 1e3);
}

/* Send one whole line. 0, or -1 when the connection failed or stayed full past `deadline`. */
static int send_line(iosets_arbiter *a, const char *line, double deadline)
{
    size_t len = strlen(line), sent = 0;
    while (sent < len) {
        ssize_t n = send(a->fd, line + sent, len - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            struct pollfd p = {a->fd, POLLOUT, 0};
            if (poll(&p, 1, ms_left(deadline)) > 0)
                continue;
        }
        return -1;
    }
    return 0;
}

/* Next line (without its "\n") into `line`: 1, 0 when none came by `deadline` (now: do not wait),
 * -1 when the connection closed, failed or sent a line longer than the protocol allows. */
static int read_line(iosets_arbiter *a, char *line, double deadline)
{
    for (;;) {
        char *end = memchr(a->in, '\n', a->in_len);
        if (end != NULL) {
            size_t n = (size_t)(end - a->in);
            memcpy(line, a->in, n);
            line[n] = '\0';
            a->in_len -= n + 1;
            memmove(a->in, end + 1, a->in_len);
            return 1;
        }
        if (a->in_len >= LINE_BYTES)
            return -1;
        struct pollfd p = {a->fd, POLLIN, 0};
        int ready = poll(&p, 1, ms_left(deadline));
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0)
            return 0;
        ssize_t n = recv(a->fd, a->in + a->in_len, LINE_BYTES - a->in_len, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n <= 0)
            return -1;
        a->in_len += (size_t)n;
    }
}

/* A number after `prefix` in `line` ("GRANT 1e8"), finite and > 0; NAN when the line is not that. */
static double number_after(const char *line, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(line, prefix, n) != 0)
        return NAN;
    char *end;
    double value = strtod(line + n, &end);
    return end != line + n && *end == '\0' && isfinite(value) && value > 0 ? value : NAN;
}

/* A non-blocking stream socket connected to `address` by `deadline`, or -1 with the reason in `why`. */
static int connect_socket(const char *address, double deadline, char *why, size_t why_size)
{
    struct sockaddr_storage storage;
    struct addrinfo *found = NULL, *candidates = NULL, unix_candidate;
    if (strncmp(address, "unix:", 5) == 0) {
        struct sockaddr_un *sun = (struct sockaddr_un *)&storage;
        memset(sun, 0, sizeof *sun);
        sun->sun_family = AF_UNIX;
        strcpy(sun->sun_path, address + 5); /* length checked by iosets_arbiter_open */
        memset(&unix_candidate, 0, sizeof unix_candidate);
        unix_candidate.ai_family = AF_UNIX;
        unix_candidate.ai_socktype = SOCK_STREAM;
        unix_candidate.ai_addr = (struct sockaddr *)sun;
        unix_candidate.ai_addrlen = sizeof *sun;
        candidates = &unix_candidate;
    } else {
        char host[256];
        const char *port = strrchr(address, ':'); /* address is "tcp:HOST:PORT" (checked) */
        size_t len = (size_t)(port - (address + 4));
        memcpy(host, address + 4, len);
        host[len] = '\0';
        if (host[0] == '[' && len >= 2 && host[len - 1] == ']') { /* [::1] */
            memmove(host, host + 1, len - 2);
            host[len - 2] = '\0';
        }
        struct addrinfo hints;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        int rc = getaddrinfo(host, port + 1, &hints, &found);
        if (rc != 0) {
            snprintf(why, why_size, "cannot resolve %s (%s)", address, gai_strerror(rc));
            return -1;
        }
        candidates = found;
    }
    int fd = -1, error = 0;
    for (struct addrinfo *c = candidates; c != NULL && fd < 0; c = c->ai_next) {
        fd = socket(c->ai_family, c->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            error = errno;
            continue;
        }
        int rc = connect(fd, c->ai_addr, c->ai_addrlen);
        if (rc < 0 && (errno == EINPROGRESS || errno == EAGAIN)) {
            struct pollfd p = {fd, POLLOUT, 0};
            socklen_t size = sizeof error;
            error = ETIMEDOUT;
            if (poll(&p, 1, ms_left(deadline)) > 0)
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size);
            rc = error == 0 ? 0 : -1;
        } else if (rc < 0) {
            error = errno;
        }
        if (rc < 0) {
            close(fd);
            fd = -1;
        } else if (c->ai_family != AF_UNIX) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
    }
    if (found != NULL)
        freeaddrinfo(found);
    if (fd < 0)
        snprintf(why, why_size, "cannot connect to %s (%s)", address, strerror(error));
    return fd;
}

/* Connect and say HELLO: 0, or -1 after the outage's stderr line. */
static int connect_arbiter(iosets_arbiter *a)
{
    double deadline = now_s() + a->connect_s;
    char why[WHY_BYTES], line[LINE_BYTES + 1];
    a->fd = connect_socket(a->address, deadline, why, sizeof why);
    if (a->fd < 0) {
        unscheduled(a, why);
        return -1;
    }
    snprintf(line, sizeof line, "HELLO 1 %s %d %.17g\n", a->job_id, a->set, a->priority);
    int got = send_line(a, line, deadline) == 0 ? read_line(a, line, deadline) : -1;
    if (got == 1 && !isnan(number_after(line, "OK ")))
        return 0;
    if (got == 1 && strncmp(line, "ERR ", 4) == 0)
        snprintf(why, sizeof why, "%s refused job %s: %s", a->address, a->job_id, line + 4);
    else if (got == 1)
        snprintf(why, sizeof why, "%s answered HELLO with %.80s", a->address, line);
    else if (got == 0)
        snprintf(why, sizeof why, "no answer from %s within %g s", a->address, a->connect_s);
    else
        snprintf(why, sizeof why, "%s closed the connection", a->address);
    unscheduled(a, why);
    return -1;
}

static int valid_job_id(const char *id)
{
    size_t n = strlen(id);
    if (n < 1 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                 c == '.' || c == '-';
        if (!ok)
            return 0;
    }
    return 1;
}

/* "unix:PATH" or "tcp:HOST:PORT"; 1 when it is one of them. */
static int valid_address(const char *address)
{
    if (strncmp(address, "unix:", 5) == 0)
        return address[5] != '\0' && strlen(address + 5) < sizeof(((struct sockaddr_un *)0)->sun_path);
    if (strncmp(address, "tcp:", 4) != 0)
        return 0;
    const char *port = strrchr(address + 4, ':');
    size_t host_len = port == NULL ? 0 : (size_t)(port - (address + 4));
    return host_len > 0 && host_len < 256 && port[1] != '\0' && strlen(port + 1) <= 5 &&
           strspn(port + 1, "0123456789") == strlen(port + 1);
}

iosets_arbiter *iosets_arbiter_open(const char *address, const char *job_id, int set, double priority,
                                    double timeout_s)
{
    if (address == NULL || strlen(address) >= sizeof(((iosets_arbiter *)0)->address) || !valid_address(address)) {
        say("expected an address unix:PATH or tcp:HOST:PORT, got '%.200s'", address ? address : "(null)");
        return NULL;
    }
    if (job_id == NULL || !valid_job_id(job_id)) {
        say("expected a job id of 1 to 64 characters among A-Z a-z 0-9 _ . -, got '%.100s'",
            job_id ? job_id : "(null)");
        return NULL;
    }
    if (set < 0) {
        say("expected a set >= 0, got %d", set);
        return NULL;
    }
    if (!(isfinite(priority) && priority > 0)) {
        say("expected a finite priority > 0, got %g", priority);
        return NULL;
    }
    iosets_arbiter *a = calloc(1, sizeof *a);
    if (a == NULL) {
        say("out of memory");
        return NULL;
    }
    strcpy(a->address, address);
    strcpy(a->job_id, job_id);
    a->set = set;
    a->priority = priority;
    int defaults = !(timeout_s > 0 && isfinite(timeout_s));
    a->connect_s = defaults ? DEFAULT_CONNECT_S : timeout_s;
    a->grant_s = defaults ? DEFAULT_GRANT_S : timeout_s;
    a->fd = -1;
    connect_arbiter(a); /* unreachable: begin tries again */
    return a;
}

double iosets_arbiter_begin(iosets_arbiter *a, double bytes)
{
    if (a == NULL)
        return 0.0;
    if (a->performing)
        iosets_arbiter_end(a);
    if (!(isfinite(bytes) && bytes >= 0)) {
        say("begin: expected a finite number of bytes >= 0, got %g: the phase runs unscheduled", bytes);
        return 0.0;
    }
    char line[LINE_BYTES + 1], why[WHY_BYTES];
    for (int attempt = 0; attempt < 2; attempt++) {
        int reused = a->fd >= 0; /* a connection from an earlier phase may have died with its arbiter */
        if (!reused && connect_arbiter(a) < 0)
            return 0.0;
        double deadline = now_s() + a->grant_s;
        snprintf(line, sizeof line, "BEGIN %.17g\n", bytes);
        int got = send_line(a, line, deadline) == 0 ? 1 : -1;
        while (got == 1) {
            got = read_line(a, line, deadline);
            if (got != 1)
                break;
            double rate = number_after(line, "GRANT ");
            if (!isnan(rate)) {
                a->performing = 1;
                a->rate = rate;
                a->outage_told = 0;
                iosets_pacer_start(&a->pacer);
                return rate;
            }
            if (!isnan(number_after(line, "RATE "))) /* sent before our last END reached the arbiter */
                continue;
            if (strncmp(line, "ERR ", 4) == 0)
                snprintf(why, sizeof why, "%s refused the phase of job %s: %s", a->address, a->job_id, line + 4);
            else
                snprintf(why, sizeof why, "%s answered BEGIN with %.80s", a->address, line);
            return unscheduled(a, why);
        }
        if (got == 0) {
            snprintf(why, sizeof why, "no grant from %s within %g s", a->address, a->grant_s);
            return unscheduled(a, why);
        }
        disconnect(a); /* closed: once more on a new connection if this one was old */
        if (!reused)
            break;
    }
    snprintf(why, sizeof why, "%s closed the connection", a->address);
    return unscheduled(a, why);
}

double iosets_arbiter_rate(iosets_arbiter *a)
{
    if (a == NULL || !a->performing)
        return 0.0;
    char line[LINE_BYTES + 1], why[WHY_BYTES];
    int got;
    while ((got = read_line(a, line, 0.0)) == 1) {
        double rate = number_after(line, "RATE ");
        if (isnan(rate)) {
            snprintf(why, sizeof why, "%s sent %.80s during a phase", a->address, line);
            return unscheduled(a, why);
        }
        a->rate = rate;
    }
    if (got < 0) {
        snprintf(why, sizeof why, "%s closed the connection", a->address);
        return unscheduled(a, why);
    }
    return a->rate;
}

static double arbiter_rate_of(void *a)
{
    return iosets_arbiter_rate(a);
}

void iosets_arbiter_pace(iosets_arbiter *a, size_t nbytes)
{
    if (a != NULL && a->performing)
        iosets_pacer_wait(&a->pacer, nbytes, arbiter_rate_of, a);
}

void iosets_arbiter_end(iosets_arbiter *a)
{
    if (a == NULL || !a->performing)
        return;
    a->performing = 0;
    a->rate = 0.0;
    if (send_line(a, "END\n", now_s() + a->connect_s) < 0)
        disconnect(a); /* the next begin connects again */
}

void iosets_arbiter_close(iosets_arbiter *a)
{
    if (a == NULL)
        return;
    if (a->fd >= 0)
        send_line(a, "BYE\n", now_s() + a->connect_s);
    disconnect(a);
    free(a);
}

/* ---------------------------------------------------------------- the pacer
 * `due` is when the bytes counted since the start are due at the rates held so far: the bytes never
 * run ahead of the phase model's progress (B p / sum p over time), and a lag behind it (the storage
 * slower for a while) is made up as fast as the storage allows, so that a phase lasts what the model
 * says whenever the storage can keep up on average. */

void iosets_pacer_start(iosets_pacer *p)
{
    p->due = now_s();
    p->rate = 0.0;
}

/* The rate became `rate` at `now`: the bytes still owed at the old rate (or the lag behind it, when `due`
 * is past) are owed at the new one. */
static void retime(iosets_pacer *p, double rate, double now)
{
    if (p->rate > 0 && rate > 0 && rate != p->rate)
        p->due = now + (p->due - now) * p->rate / rate;
    p->rate = rate;
}

void iosets_pacer_wait(iosets_pacer *p, size_t nbytes, double (*rate_of)(void *ctx), void *ctx)
{
    double now = now_s();
    retime(p, rate_of != NULL ? rate_of(ctx) : p->rate, now);
    if (!(p->rate > 0 && isfinite(p->rate))) {
        p->due = now; /* unpaced: no debt carried into a paced stretch */
        return;
    }
    p->due += (double)nbytes / p->rate;
    while (now < p->due) {
        sleep_until(rate_of != NULL && p->due - now > PACER_SLICE_S ? now + PACER_SLICE_S : p->due);
        now = now_s();
        if (rate_of != NULL) {
            retime(p, rate_of(ctx), now);
            if (!(p->rate > 0 && isfinite(p->rate))) {
                p->due = now;
                return;
            }
        }
    }
}
