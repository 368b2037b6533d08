/* Load generator of benchmarks/arbiter.py: N jobs on one loopback tcp connection each, in one
 * process and one epoll loop, each doing BEGIN -> wait for GRANT -> END, then thinking for an
 * exponential time of mean THINK_US (0: the next BEGIN goes with the END) before its next BEGIN.
 *
 *   arbiter_load HOST PORT N THINK_US WARMUP_S SECONDS SEED
 *
 * Job i says HELLO with set i and priority 10^-(i mod 4). Counts the pairs (a GRANT and its END)
 * and the grant latencies (BEGIN sent to GRANT read) of the SECONDS after WARMUP_S; prints one line:
 *   pairs=<n> seconds=<s> p50_us=<x> p99_us=<x> p999_us=<x> max_us=<x> rates=<RATE lines read>
 * Exits 1 with a message on stderr when the arbiter refuses or closes a connection. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int fd;
    int waiting;      /* a BEGIN is out */
    double sent;      /* when it was sent (s) */
    int len;
    char in[512];
} job;

/* The thinking jobs, by wake-up date: a binary min-heap. */
typedef struct {
    double wake;
    int job;
} sleeper;

static sleeper *heap;
static int heap_size;

static void heap_push(double wake, int i)
{
    int k = heap_size++;
    while (k > 0 && heap[(k - 1) / 2].wake > wake) {
        heap[k] = heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    heap[k] = (sleeper){wake, i};
}

static sleeper heap_pop(void)
{
    sleeper top = heap[0], last = heap[--heap_size];
    int k = 0;
    for (;;) {
        int c = 2 * k + 1;
        if (c >= heap_size)
            break;
        if (c + 1 < heap_size && heap[c + 1].wake < heap[c].wake)
            c++;
        if (heap[c].wake >= last.wake)
            break;
        heap[k] = heap[c];
        k = c;
    }
    heap[k] = last;
    return top;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void die(const char *what, int i)
{
    fprintf(stderr, "arbiter_load: job %d: %s%s%s\n", i, what, errno ? ": " : "", errno ? strerror(errno) : "");
    exit(1);
}

static void send_all(job *j, int i, const char *text)
{
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = send(j->fd, text + done, len - done, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            die("send", i);
        }
        done += (size_t)n;
    }
}

/* xorshift64*, seeded per run: the think times */
static uint64_t rng_state;
static double uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return ((rng_state * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
}

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Waits for events until `deadline` (s, absolute) with sub-millisecond precision. */
static int wait_events(int ep, struct epoll_event *events, int max, double timeout)
{
    if (timeout < 0)
        timeout = 0;
    struct timespec t = {(time_t)timeout, (long)((timeout - floor(timeout)) * 1e9)};
    int n = epoll_pwait2(ep, events, max, &t, NULL);
    if (n < 0 && errno == ENOSYS) /* an old kernel: millisecond steps */
        n = epoll_wait(ep, events, max, (int)ceil(timeout * 1e3));
    return n;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: arbiter_load HOST PORT N THINK_US WARMUP_S SECONDS SEED\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]), n = atoi(argv[3]);
    double think = atof(argv[4]) * 1e-6, warmup = atof(argv[5]), seconds = atof(argv[6]);
    rng_state = (uint64_t)strtoull(argv[7], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;

    prctl(PR_SET_TIMERSLACK, 1UL); /* think times of 0.5 ms: the default 50 us of timer slack would stretch them */
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
    job *jobs = calloc((size_t)n, sizeof(job));
    heap = malloc(sizeof(sleeper) * (size_t)n);
    size_t cap = 1 << 22;
    float *latency = malloc(sizeof(float) * cap);
    int ep = epoll_create1(0);
    if (jobs == NULL || heap == NULL || latency == NULL || ep < 0)
        die("setup", -1);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, host, &addr.sin_addr);
    for (int i = 0; i < n; i++) { /* connect and HELLO, blocking */
        job *j = &jobs[i];
        j->fd = socket(AF_INET, SOCK_STREAM, 0);
        int one = 1;
        setsockopt(j->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(j->fd, (struct sockaddr *)&addr, sizeof addr) != 0)
            die("connect", i);
        char hello[128];
        snprintf(hello, sizeof hello, "HELLO 1 load-%d-%d %d %.17g\n", (int)getpid(), i, i, pow(10.0, -(i % 4)));
        send_all(j, i, hello);
        char answer[128];
        ssize_t got = recv(j->fd, answer, sizeof answer - 1, 0);
        if (got <= 0 || strncmp(answer, "OK ", 3) != 0)
            die("HELLO not answered OK", i);
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(ep, EPOLL_CTL_ADD, j->fd, &ev);
    }
    double start = now_s(), measure_from = start + warmup, end = measure_from + seconds;
    for (int i = 0; i < n; i++) { /* every job asks once at the start */
        jobs[i].waiting = 1;
        jobs[i].sent = now_s();
        send_all(&jobs[i], i, "BEGIN 1\n");
    }
    long long pairs = 0, rates = 0;
    size_t samples = 0;
    struct epoll_event events[1024];
    double t = start;
    while (t < end) {
        while (heap_size > 0 && heap[0].wake <= t) { /* the jobs done thinking ask again */
            int i = heap_pop().job;
            jobs[i].waiting = 1;
            jobs[i].sent = now_s();
            send_all(&jobs[i], i, "BEGIN 1\n");
        }
        double next_wake = heap_size > 0 && heap[0].wake < end ? heap[0].wake : end;
        int ready = wait_events(ep, events, 1024, next_wake - now_s());
        if (ready < 0 && errno != EINTR)
            die("epoll", -1);
        for (int e = 0; e < ready; e++) {
            int i = (int)events[e].data.u32;
            job *j = &jobs[i];
            ssize_t got = recv(j->fd, j->in + j->len, sizeof j->in - 1 - (size_t)j->len, 0);
            if (got <= 0)
                die("the arbiter closed the connection", i);
            double arrived = now_s();
            j->len += (int)got;
            char *line = j->in, *newline;
            while ((newline = memchr(line, '\n', (size_t)(j->in + j->len - line))) != NULL) {
                *newline = '\0';
                if (strncmp(line, "GRANT ", 6) == 0 && j->waiting) {
                    j->waiting = 0;
                    if (j->sent >= measure_from && arrived < end) {
                        pairs++;
                        if (samples < cap)
                            latency[samples++] = (float)((arrived - j->sent) * 1e6);
                    }
                    if (think > 0) {
                        send_all(j, i, "END\n");
                        heap_push(arrived - think * log(1.0 - uniform()), i);
                    } else {
                        j->waiting = 1;
                        j->sent = now_s();
                        send_all(j, i, "END\nBEGIN 1\n");
                    }
                } else if (strncmp(line, "RATE ", 5) == 0) {
                    rates++;
                } else {
                    errno = 0;
                    fprintf(stderr, "arbiter_load: job %d: unexpected line '%s'\n", i, line);
                    return 1;
                }
                line = newline + 1;
            }
            j->len = (int)(j->in + j->len - line);
            memmove(j->in, line, (size_t)j->len);
        }
        t = now_s();
    }
    qsort(latency, samples, sizeof(float), by_value);
#define AT(q) (samples ? latency[(size_t)((q) * (double)(samples - 1))] : NAN)
    printf("pairs=%lld seconds=%.6f p50_us=%.2f p99_us=%.2f p999_us=%.2f max_us=%.2f rates=%lld\n", pairs, seconds,
           AT(0.5), AT(0.99), AT(0.999), AT(1.0), rates);
    for (int i = 0; i < n; i++)
        close(jobs[i].fd);
    return 0;
}
