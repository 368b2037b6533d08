/* WFQ exactly as AGIOS (AGIOS WFQ report, section 2): one queue per set, a byte
 * quantum (weight) plus credit per round, round robin over the sets, credit
 * reset when a queue empties. iosets-wfq adds IO-SETS' exclusivity: inside a
 * set one I/O phase at a time (FCFS by the phase's first request), the sets
 * served by WFQ with weights from their priorities.
 *
 * A request larger than its quantum waits size / weight rounds; rounds in which
 * no queue can send are skipped at once (their quanta added to the credits), with
 * AGIOS's results (exactly so for whole-byte weights and sizes). The round robin
 * visits only the non-empty queues, found through a bitmap per server: visiting an
 * empty queue only resets its credit, which the queue left behind the round robin
 * already had reset (it emptied while current, and was visited empty on leaving),
 * so a pick costs O(non-empty queues) whatever the weights and the classes. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "request_engine.h"
#include "sched_queue.h"

struct re_sched {
    const re_requests *rq;
    const double *weight; /* [n_classes] bytes per round */
    int32_t n_classes;
    req_ring *queue;      /* [n_servers * n_classes] */
    int64_t n_queues;
    int failed;           /* out of memory in enqueue */
    double *amount;       /* [n_servers * n_classes] bytes left in the current round */
    double *credit;       /* [n_servers * n_classes] */
    char *in_round;       /* [n_servers * n_classes] */
    int32_t *current;     /* [n_servers] queue of the round robin */
    uint64_t *busy;       /* [n_servers * n_words] bit c: queue c of the server is not empty */
    int32_t n_words;
    int64_t *pending;     /* [n_servers] requests queued */
    /* iosets-wfq only */
    int exclusive;
    int64_t *phase_left;  /* [n_phases] requests not completed yet */
    req_ring *phase_wait; /* [n_phases] arrived requests of a phase not admitted yet */
    char *phase_seen;     /* [n_phases] */
    int32_t *active;      /* [n_classes] admitted phase of each set, -1 if none */
    int64_t *phase_next;  /* [n_phases] FIFO of waiting phases per set */
    req_queue *set_wait;  /* [n_classes] waiting phases, linked through phase_next (as ids) */
    int32_t *unblocked;   /* [n_servers] servers an admission queued work on since the engine last asked */
    char *is_unblocked;   /* [n_servers] */
    int32_t n_unblocked;
};

static void wfq_destroy(re_sched *s)
{
    for (int64_t q = 0; s->queue != NULL && q < s->n_queues; q++)
        ring_free(&s->queue[q]);
    for (int64_t p = 0; s->phase_wait != NULL && p < s->rq->n_phases; p++)
        ring_free(&s->phase_wait[p]);
    free(s->queue);
    free(s->amount);
    free(s->credit);
    free(s->in_round);
    free(s->current);
    free(s->busy);
    free(s->pending);
    free(s->phase_left);
    free(s->phase_wait);
    free(s->phase_seen);
    free(s->active);
    free(s->phase_next);
    free(s->set_wait);
    free(s->unblocked);
    free(s->is_unblocked);
    free(s);
}

static re_sched *create(const re_context *ctx, int exclusive, int *rc, int64_t *bad)
{
    const re_requests *rq = ctx->rq;
    for (int32_t c = 0; c < rq->n_classes; c++)
        if (!(ctx->weight[c] > 0) || !isfinite(ctx->weight[c])) {
            *rc = RE_BAD_WEIGHT;
            *bad = c;
            return NULL;
        }
    re_sched *s = calloc(1, sizeof(re_sched));
    if (s == NULL) {
        *rc = RE_NOMEM;
        return NULL;
    }
    int64_t nq = (int64_t)rq->n_servers * rq->n_classes;
    s->rq = rq;
    s->weight = ctx->weight;
    s->n_classes = rq->n_classes;
    s->exclusive = exclusive;
    s->queue = calloc(at_least_one(nq), sizeof(req_ring));
    s->n_queues = nq;
    s->amount = calloc(at_least_one(nq), sizeof(double));
    s->credit = calloc(at_least_one(nq), sizeof(double));
    s->in_round = calloc(at_least_one(nq), 1);
    s->current = calloc(at_least_one(rq->n_servers), sizeof(int32_t));
    s->n_words = (rq->n_classes + 63) / 64;
    s->busy = calloc(at_least_one((int64_t)rq->n_servers * s->n_words), sizeof(uint64_t));
    s->pending = calloc(at_least_one(rq->n_servers), sizeof(int64_t));
    int ok = s->queue && s->amount && s->credit && s->in_round && s->current && s->busy && s->pending;
    if (ok && exclusive) {
        s->phase_left = calloc(at_least_one(rq->n_phases), sizeof(int64_t));
        s->phase_wait = calloc(at_least_one(rq->n_phases), sizeof(req_ring));
        s->phase_seen = calloc(at_least_one(rq->n_phases), 1);
        s->phase_next = malloc(sizeof(int64_t) * at_least_one(rq->n_phases));
        s->active = malloc(sizeof(int32_t) * at_least_one(rq->n_classes));
        s->set_wait = malloc(sizeof(req_queue) * at_least_one(rq->n_classes));
        s->unblocked = malloc(sizeof(int32_t) * at_least_one(rq->n_servers));
        s->is_unblocked = calloc(at_least_one(rq->n_servers), 1);
        ok = s->phase_left && s->phase_wait && s->phase_seen && s->phase_next && s->active && s->set_wait &&
             s->unblocked && s->is_unblocked;
    }
    if (!ok) {
        wfq_destroy(s);
        *rc = RE_NOMEM;
        return NULL;
    }
    if (exclusive) {
        rq_init(s->set_wait, rq->n_classes);
        for (int32_t c = 0; c < rq->n_classes; c++)
            s->active[c] = -1;
        for (int64_t i = 0; i < rq->n; i++)
            if (rq->phase[i] >= 0)
                s->phase_left[rq->phase[i]]++;
    }
    return s;
}

static re_sched *wfq_create(const re_context *ctx, int *rc, int64_t *bad)
{
    return create(ctx, 0, rc, bad);
}

static re_sched *iosets_create(const re_context *ctx, int *rc, int64_t *bad)
{
    return create(ctx, 1, rc, bad);
}

static void to_wfq_queue(re_sched *s, int64_t req)
{
    int32_t server = s->rq->server[req], c = s->rq->cls[req];
    req_ring *queue = &s->queue[(int64_t)server * s->n_classes + c];
    if (!ring_push(queue, req))
        s->failed = 1;
    else if (queue->count == 1)
        s->busy[(int64_t)server * s->n_words + c / 64] |= UINT64_C(1) << (c % 64);
    s->pending[server]++;
}

static void wfq_enqueue(re_sched *s, int32_t server, int64_t req, double now)
{
    to_wfq_queue(s, req);
}

/* Admits the next waiting phase of `set`, if any, and queues its arrived requests, noting their servers. */
static void admit_next_phase(re_sched *s, int32_t set)
{
    req_queue *waiting = &s->set_wait[set];
    if (s->active[set] >= 0 || waiting->head < 0)
        return;
    int64_t phase = rq_pop(waiting, s->phase_next);
    s->active[set] = (int32_t)phase;
    while (s->phase_wait[phase].count) {
        int64_t req = ring_pop(&s->phase_wait[phase]);
        int32_t server = s->rq->server[req];
        to_wfq_queue(s, req);
        if (!s->is_unblocked[server]) {
            s->is_unblocked[server] = 1;
            s->unblocked[s->n_unblocked++] = server;
        }
    }
    ring_free(&s->phase_wait[phase]); /* the phase's next requests go straight to the queues */
}

static void iosets_enqueue(re_sched *s, int32_t server, int64_t req, double now)
{
    int32_t phase = s->rq->phase[req], set = s->rq->cls[req];
    if (phase < 0 || s->active[set] == phase) {
        to_wfq_queue(s, req);
        return;
    }
    if (!s->phase_seen[phase]) {
        s->phase_seen[phase] = 1;
        rq_push(&s->set_wait[set], s->phase_next, phase);
    }
    if (!ring_push(&s->phase_wait[phase], req))
        s->failed = 1;
    admit_next_phase(s, set);
}

/* The first non-empty queue of the server from class `from` on, or -1. */
static inline int32_t next_busy(const re_sched *s, int32_t server, int32_t from)
{
    if (s->n_words == 1) { /* up to 64 classes: one word, no loop */
        uint64_t word = from < 64 ? s->busy[server] & (~UINT64_C(0) << from) : 0;
        return word ? __builtin_ctzll(word) : -1;
    }
    const uint64_t *bits = s->busy + (int64_t)server * s->n_words;
    for (int32_t w = from / 64; w < s->n_words; w++) {
        uint64_t word = w == from / 64 ? bits[w] & (~UINT64_C(0) << (from % 64)) : bits[w];
        if (word)
            return w * 64 + __builtin_ctzll(word);
    }
    return -1;
}

/* Sends the head of queue q (class c) if its round's amount covers it. */
static int64_t send_head(re_sched *s, int32_t server, int32_t c, int64_t *out)
{
    int64_t q = (int64_t)server * s->n_classes + c;
    int64_t head = ring_peek(&s->queue[q]);
    if (head < 0 || s->amount[q] - s->rq->size[head] < 0)
        return 0;
    out[0] = ring_pop(&s->queue[q]);
    s->amount[q] -= s->rq->size[head];
    s->pending[server]--;
    s->current[server] = c;
    if (s->queue[q].count == 0)
        s->busy[(int64_t)server * s->n_words + c / 64] &= ~(UINT64_C(1) << (c % 64));
    return 1;
}

/* Adds `rounds` quanta to the credit of every non-empty queue of the server. */
static void skip_rounds(re_sched *s, int32_t server, double rounds)
{
    int64_t base = (int64_t)server * s->n_classes;
    for (int32_t c = next_busy(s, server, 0); c >= 0; c = next_busy(s, server, c + 1))
        s->credit[base + c] += rounds * s->weight[c];
}

/* Class c's visit in a pass of the round robin (q its queue): a round's amount, then its head sent
 * (1: the class stays in its round), or the amount kept as credit and *need set to the rounds the
 * head lets pass before it can go, floor((size - credit) / weight) - 1 (0 returned). */
static inline int visit(re_sched *s, int32_t server, int32_t c, int64_t q, int64_t *out, double *need)
{
    s->amount[q] = s->weight[c] + s->credit[q];
    if (send_head(s, server, c, out)) {
        s->in_round[q] = 1;
        return 1;
    }
    s->credit[q] = s->amount[q];
    *need = floor((s->rq->size[ring_peek(&s->queue[q])] - s->credit[q]) / s->weight[c]) - 1;
    return 0;
}

/* The round robin's passes (below) when the server has one non-empty queue, c, and the pick
 * started at class `from`: every pass visits c alone, so the rounds a wrap may skip are c's own
 * need, added to c's credit alone. The wrap after the first visit may skip when another wrap
 * came before that visit (c <= from), every later one may. The same operations in the same
 * order as the general loop, without its search for the next queue. */
static int64_t lone_queue(re_sched *s, int32_t server, int32_t from, int32_t c, int64_t *out)
{
    int64_t q = (int64_t)server * s->n_classes + c;
    for (int may_skip = c <= from;; may_skip = 1) {
        double need;
        if (visit(s, server, c, q, out, &need))
            return 1;
        double rounds = need < INFINITY ? need : INFINITY;
        if (may_skip && rounds >= 1)
            s->credit[q] += rounds * s->weight[c];
    }
}

/* Round robin over the server's non-empty queues from the current one, which may be
 * in its round. After every whole pass in which no queue could send but the first
 * (from the second wrap on), the rounds in which none could are skipped at once: a head
 * of `size` bytes goes in the k-th round, k the smallest with credit + k weight >= size;
 * floor((size - credit) / weight) - 1 is k - 1, or k - 2 when the quotient is not whole
 * (better one empty round played than one skipped too many). */
__attribute__((noinline)) static int64_t round_robin(re_sched *s, int32_t server, int64_t *out)
{
    int64_t base = (int64_t)server * s->n_classes;
    int32_t c = s->current[server];
    int64_t q = base + c;
    if (!s->in_round[q])
        s->amount[q] = s->weight[c] + s->credit[q];
    s->in_round[q] = 1;
    if (send_head(s, server, c, out))
        return 1;
    s->credit[q] = ring_peek(&s->queue[q]) >= 0 ? s->amount[q] : 0;
    s->in_round[q] = 0;
    uint64_t word = s->n_words == 1 ? s->busy[server] : 0;
    if (word != 0 && (word & (word - 1)) == 0) /* one non-empty queue (up to 64 classes) */
        return lone_queue(s, server, c, __builtin_ctzll(word), out);
    int wraps = 0;
    double rounds = INFINITY; /* rounds to skip, over the pass since the last wrap */
    for (;;) {
        c = next_busy(s, server, c + 1);
        if (c < 0) {
            if (wraps++ > 0 && rounds >= 1)
                skip_rounds(s, server, rounds);
            rounds = INFINITY;
            c = next_busy(s, server, 0);
        }
        q = base + c;
        double need;
        if (visit(s, server, c, q, out, &need))
            return 1;
        rounds = need < rounds ? need : rounds;
    }
}

/* A pick that finds the server's queues empty (iosets-wfq's requests may wait for their phase's
 * admission) stays a few instructions, out of the round robin's frame. */
static int64_t wfq_pick(re_sched *s, int32_t server, double now, int64_t *out, int64_t max, double *wake)
{
    if (s->failed)
        return -1;
    return s->pending[server] == 0 ? 0 : round_robin(s, server, out);
}

static void wfq_complete(re_sched *s, int32_t server, const int64_t *reqs, int64_t count, double dispatched,
                         double started, double now)
{
}

static void iosets_complete(re_sched *s, int32_t server, const int64_t *reqs, int64_t count, double dispatched,
                            double started, double now)
{
    for (int64_t j = 0; j < count; j++) {
        int32_t phase = s->rq->phase[reqs[j]];
        if (phase >= 0 && --s->phase_left[phase] == 0) {
            int32_t set = s->rq->cls[reqs[j]];
            s->active[set] = -1;
            admit_next_phase(s, set);
        }
    }
}

/* Admissions are the only way work reaches a server other than its arrival's: their servers are the
 * ones a completion may unblock. */
static int32_t iosets_unblocked(re_sched *s, const int32_t **servers)
{
    int32_t n = s->n_unblocked;
    for (int32_t i = 0; i < n; i++)
        s->is_unblocked[s->unblocked[i]] = 0;
    s->n_unblocked = 0;
    *servers = s->unblocked;
    return n;
}

const re_sched_ops sched_wfq = {
    .name = "wfq", .idle_when_empty = 1, .create = wfq_create, .destroy = wfq_destroy,
    .enqueue = wfq_enqueue, .pick = wfq_pick, .complete = wfq_complete,
};

const re_sched_ops sched_iosets_wfq = {
    .name = "iosets-wfq", .idle_when_empty = 1, .create = iosets_create, .destroy = wfq_destroy,
    .enqueue = iosets_enqueue, .pick = wfq_pick, .complete = iosets_complete, .unblocked = iosets_unblocked,
};
