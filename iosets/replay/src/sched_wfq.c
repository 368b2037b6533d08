/* WFQ exactly as AGIOS (seed 000, section 2): one queue per set, a byte
 * quantum (weight) plus credit per round, round robin over the sets, credit
 * reset when a queue empties. iosets-wfq adds IO-SETS' exclusivity: inside a
 * set one I/O phase at a time (FCFS by the phase's first request), the sets
 * served by WFQ with weights from their priorities.
 *
 * A request larger than its quantum waits size / weight rounds; rounds in which
 * no queue can send are skipped at once (their quanta added to the credits), so a
 * pick costs O(classes) whatever the weights, with AGIOS's results (exactly so
 * for whole-byte weights and sizes). */
#include <math.h>
#include <stdlib.h>

#include "request_engine.h"
#include "sched_queue.h"

struct re_sched {
    const re_requests *rq;
    const double *weight; /* [n_classes] bytes per round */
    int32_t n_classes;
    int64_t *next;        /* [n] links of the phases' waiting requests */
    req_ring *queue;      /* [n_servers * n_classes] */
    int64_t n_queues;
    int failed;           /* out of memory in enqueue */
    double *amount;       /* [n_servers * n_classes] bytes left in the current round */
    double *credit;       /* [n_servers * n_classes] */
    char *in_round;       /* [n_servers * n_classes] */
    int32_t *current;     /* [n_servers] queue of the round robin */
    int64_t *pending;     /* [n_servers] requests queued */
    /* iosets-wfq only */
    int exclusive;
    int64_t *phase_left;  /* [n_phases] requests not completed yet */
    req_queue *phase_wait;/* [n_phases] arrived requests of a phase not admitted yet */
    char *phase_seen;     /* [n_phases] */
    int32_t *active;      /* [n_classes] admitted phase of each set, -1 if none */
    int64_t *phase_next;  /* [n_phases] FIFO of waiting phases per set */
    req_queue *set_wait;  /* [n_classes] waiting phases, linked through phase_next (as ids) */
};

static void wfq_destroy(re_sched *s)
{
    for (int64_t q = 0; s->queue != NULL && q < s->n_queues; q++)
        ring_free(&s->queue[q]);
    free(s->next);
    free(s->queue);
    free(s->amount);
    free(s->credit);
    free(s->in_round);
    free(s->current);
    free(s->pending);
    free(s->phase_left);
    free(s->phase_wait);
    free(s->phase_seen);
    free(s->active);
    free(s->phase_next);
    free(s->set_wait);
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
    s->next = malloc(sizeof(int64_t) * at_least_one(rq->n));
    s->queue = calloc(at_least_one(nq), sizeof(req_ring));
    s->n_queues = nq;
    s->amount = calloc(at_least_one(nq), sizeof(double));
    s->credit = calloc(at_least_one(nq), sizeof(double));
    s->in_round = calloc(at_least_one(nq), 1);
    s->current = calloc(at_least_one(rq->n_servers), sizeof(int32_t));
    s->pending = calloc(at_least_one(rq->n_servers), sizeof(int64_t));
    int ok = s->next && s->queue && s->amount && s->credit && s->in_round && s->current && s->pending;
    if (ok && exclusive) {
        s->phase_left = calloc(at_least_one(rq->n_phases), sizeof(int64_t));
        s->phase_wait = malloc(sizeof(req_queue) * at_least_one(rq->n_phases));
        s->phase_seen = calloc(at_least_one(rq->n_phases), 1);
        s->phase_next = malloc(sizeof(int64_t) * at_least_one(rq->n_phases));
        s->active = malloc(sizeof(int32_t) * at_least_one(rq->n_classes));
        s->set_wait = malloc(sizeof(req_queue) * at_least_one(rq->n_classes));
        ok = s->phase_left && s->phase_wait && s->phase_seen && s->phase_next && s->active && s->set_wait;
    }
    if (!ok) {
        wfq_destroy(s);
        *rc = RE_NOMEM;
        return NULL;
    }
    if (exclusive) {
        rq_init(s->phase_wait, rq->n_phases);
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
    int32_t server = s->rq->server[req];
    if (!ring_push(&s->queue[(int64_t)server * s->n_classes + s->rq->cls[req]], req))
        s->failed = 1;
    s->pending[server]++;
}

static void wfq_enqueue(re_sched *s, int32_t server, int64_t req, double now)
{
    to_wfq_queue(s, req);
}

/* Admits the next waiting phase of `set`, if any, and queues its arrived requests. */
static void admit_next_phase(re_sched *s, int32_t set)
{
    req_queue *waiting = &s->set_wait[set];
    if (s->active[set] >= 0 || waiting->head < 0)
        return;
    int64_t phase = rq_pop(waiting, s->phase_next);
    s->active[set] = (int32_t)phase;
    while (s->phase_wait[phase].head >= 0)
        to_wfq_queue(s, rq_pop(&s->phase_wait[phase], s->next));
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
    rq_push(&s->phase_wait[phase], s->next, req);
    admit_next_phase(s, set);
}

/* Whole rounds in which no queue of the server can send, every queue being between
 * rounds. A head of `size` bytes goes in the k-th round, k the smallest with
 * credit + k weight >= size; floor((size - credit) / weight) - 1 is k - 1, or k - 2
 * when the quotient is not whole (better one empty round played than one skipped
 * too many). */
static double empty_rounds(const re_sched *s, int64_t base)
{
    double rounds = INFINITY;
    for (int32_t c = 0; c < s->n_classes; c++) {
        int64_t head = ring_peek(&s->queue[base + c]);
        if (head >= 0) {
            double need = floor((s->rq->size[head] - s->credit[base + c]) / s->weight[c]) - 1;
            rounds = need < rounds ? need : rounds;
        }
    }
    return rounds;
}

/* Skips the rounds in which no queue of the server can send, at once. */
static void skip_empty_rounds(re_sched *s, int64_t base)
{
    double rounds = empty_rounds(s, base);
    if (!(rounds >= 1))
        return;
    for (int32_t c = 0; c < s->n_classes; c++)
        if (ring_peek(&s->queue[base + c]) >= 0)
            s->credit[base + c] += rounds * s->weight[c];
}

static int64_t wfq_pick(re_sched *s, int32_t server, double now, int64_t *out, int64_t max, double *wake)
{
    if (s->failed)
        return -1;
    if (s->pending[server] == 0)
        return 0;
    int64_t base = (int64_t)server * s->n_classes;
    int passes = 0; /* passes over the classes begun in this call (none sent) */
    for (;;) {
        int32_t c = s->current[server];
        int64_t q = base + c;
        if (!s->in_round[q]) {
            s->amount[q] = s->weight[c] + s->credit[q];
            s->in_round[q] = 1;
        }
        int64_t head = ring_peek(&s->queue[q]);
        if (head >= 0 && s->amount[q] - s->rq->size[head] >= 0) {
            out[0] = ring_pop(&s->queue[q]);
            s->amount[q] -= s->rq->size[head];
            s->pending[server]--;
            return 1;
        }
        s->credit[q] = head >= 0 ? s->amount[q] : 0;
        s->in_round[q] = 0;
        if (c + 1 < s->n_classes) {
            s->current[server] = c + 1;
            continue;
        }
        s->current[server] = 0;
        if (passes++ > 0) /* a whole pass where no queue could send */
            skip_empty_rounds(s, base);
    }
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

const re_sched_ops sched_wfq = {
    .name = "wfq", .create = wfq_create, .destroy = wfq_destroy,
    .enqueue = wfq_enqueue, .pick = wfq_pick, .complete = wfq_complete,
};

const re_sched_ops sched_iosets_wfq = {
    .name = "iosets-wfq", .cross_server = 1, .create = iosets_create, .destroy = wfq_destroy,
    .enqueue = iosets_enqueue, .pick = wfq_pick, .complete = iosets_complete,
};
