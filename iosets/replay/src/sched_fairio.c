/* FAIRIO (FAIRIO paper, section II): proportional sharing of disk time in cycles.
 *
 * Each server runs its own FAIRIO over its device (Service_cycle =
 * Cycle_length, one disk). At the start of a cycle every backlogged class
 * gets a ServiceShare of the cycle's disk time, turned into credits
 * (ServiceShare / TimePerRequest, the mean disk time of the class's requests
 * completed in the previous cycle). Requests go oldest first among the
 * classes with credit left (> 0); a class's credits are revoked once the disk
 * time of the requests it dispatched in the cycle reaches its share.
 *
 * Mode 0 (section II-B) takes the shares from the window of the cycles that
 * ended in the last r * Cycle_length seconds (at most 4 r + 4 of them): Step 1
 * turns the disk time each class completed in a cycle into its effective
 * utilization, Step 2 compares the window's sum with the class's weight share
 * of the window's total, Step 3 compensates the under-serviced classes
 * (Compensation Mode) or else shares by inverse deviation or weights
 * (Proportional Mode); a deviation within one request's disk time counts as
 * zero. Mode 1 has no history: weight shares every cycle, the fraction of a
 * request over- or under-spent carried to the next cycle.
 *
 * A class takes part in the window while it is backlogged. The paper forgives
 * the under-use of a class with no pending request; compensate_idle = 1
 * instead keeps an idle class in the window for up to r * Cycle_length
 * seconds after its last request, so it is owed its share of that time.
 *
 * Optimizations (II-C): a class whose credits fall below Class_threshold is
 * deferred and its share goes to the others; fast-forwarding starts the next
 * cycle at once when the device holds fewer than StorageLoad_threshold units,
 * nothing may be dispatched and requests wait, which keeps FAIRIO
 * work-conserving (and subsumes the end-of-cycle batch dispatch).
 */
#include <math.h>
#include <stdlib.h>

#include "request_engine.h"
#include "sched_queue.h"

enum { P_CYCLE, P_WINDOW, P_MODE, P_CLASS_THRESHOLD, P_STORAGE_LOAD, P_COMPENSATE_IDLE, N_PARAM };

static const re_param PARAMS[] = {
    [P_CYCLE] = {"cycle_length", 1.0, "Cycle_length = Service_cycle, seconds", RE_ABOVE(0)},
    [P_WINDOW] = {"window_cycles", 20.0, "r: the history window spans r cycles", RE_INTEGER(1, 1e6)},
    [P_MODE] = {"mode", 0.0, "0 = window history (compensation and proportional modes), 1 = weight shares every cycle",
                RE_FLAG},
    [P_CLASS_THRESHOLD] = {"class_threshold", 1.0, "Class_threshold: credits (requests) below which a class is deferred",
                           RE_AT_LEAST(0)},
    [P_STORAGE_LOAD] = {"storage_load", 0.0, "StorageLoad_threshold, units at the device (0 = its queue_depth)",
                        RE_INTEGER(0, 1e9)},
    [P_COMPENSATE_IDLE] = {"compensate_idle", 0.0, "1 = idleness within the window counts as under-service (paper: 0)",
                           RE_FLAG},
};
_Static_assert(sizeof(PARAMS) / sizeof(PARAMS[0]) == N_PARAM, "one entry per parameter");

typedef struct {
    double start, end;     /* current cycle; start < 0 before the first */
    int64_t id;            /* cycles started so far */
    int64_t pending;       /* requests queued at the scheduler */
    int32_t outstanding;   /* requests at the device */
    int32_t ring_head, ring_size;
} server_state;

struct re_sched {
    const re_requests *rq;
    const double *weight;
    int32_t nc;
    double cycle;          /* Cycle_length = Service_cycle (s) */
    double window;         /* r * Cycle_length */
    int mode, compensate_idle;
    double class_threshold;
    int32_t storage_load;
    int32_t ring_cap;      /* cycles kept in a window */
    int64_t *next;         /* [n] queue links */
    req_queue *queue;      /* [ns * nc] FIFO of each class */
    int64_t *pending;      /* [ns * nc] */
    int32_t *outstanding;  /* [ns * nc] */
    double *share;         /* [ns * nc] ServiceShare of the current cycle (s) */
    double *credit;        /* [ns * nc] requests left in the cycle */
    double *used;          /* [ns * nc] disk time completed in the cycle */
    double *own;           /* [ns * nc] of it, by requests dispatched in the cycle */
    int64_t *sent_in;      /* [n] cycle a request was dispatched in */
    double *tpr;           /* [ns * nc] TimePerRequest (s) */
    double *tsum;          /* [ns * nc] disk time of the cycle's completions */
    int64_t *tcount;       /* [ns * nc] and their number */
    double *carry;         /* [ns * nc] disk time (s) owed to (> 0) or by (< 0) a class (mode 1) */
    char *active;          /* [ns * nc] active in the current cycle */
    double *last_seen;     /* [ns * nc] last arrival or completion of the class (s) */
    double *win_u, *win_e; /* [ns * nc] window sums of utilization and rightful share */
    double *ring_u, *ring_e; /* [ns * ring_cap * nc] per cycle of the window */
    double *ring_end;      /* [ns * ring_cap] */
    double *dev;           /* [nc] scratch */
    server_state *srv;     /* [ns] */
};

static void fairio_destroy(re_sched *s)
{
    free(s->next);
    free(s->queue);
    free(s->pending);
    free(s->outstanding);
    free(s->share);
    free(s->credit);
    free(s->used);
    free(s->own);
    free(s->sent_in);
    free(s->tpr);
    free(s->tsum);
    free(s->tcount);
    free(s->carry);
    free(s->active);
    free(s->last_seen);
    free(s->win_u);
    free(s->win_e);
    free(s->ring_u);
    free(s->ring_e);
    free(s->ring_end);
    free(s->dev);
    free(s->srv);
    free(s);
}

/* Credit_i without a prior cycle: the device's time for the class's mean request size. */
static void initial_time_per_request(re_sched *s, const re_context *ctx)
{
    const re_requests *rq = ctx->rq;
    const re_device *dev = ctx->device;
    double *bytes = s->tsum;
    int64_t *count = s->tcount;
    for (int64_t i = 0; i < rq->n; i++) {
        bytes[rq->cls[i]] += rq->size[i];
        count[rq->cls[i]]++;
    }
    for (int32_t c = 0; c < s->nc; c++) {
        double mean = count[c] ? bytes[c] / (double)count[c] : 0;
        double t = dev->iops > 0 ? 1.0 / dev->iops : dev->overhead + mean / dev->bandwidth;
        for (int32_t sv = 0; sv < rq->n_servers; sv++)
            s->tpr[(int64_t)sv * s->nc + c] = t > 0 ? t : 1e-9;
        bytes[c] = 0;
        count[c] = 0;
    }
}

static re_sched *fairio_create(const re_context *ctx, int *rc, int64_t *bad)
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
    const double *p = ctx->param;
    int32_t r = (int32_t)p[P_WINDOW];
    s->rq = rq;
    s->weight = ctx->weight;
    s->nc = rq->n_classes;
    s->cycle = p[P_CYCLE];
    s->window = r * p[P_CYCLE];
    s->mode = (int)p[P_MODE];
    s->class_threshold = p[P_CLASS_THRESHOLD];
    s->storage_load = p[P_STORAGE_LOAD] > 0 ? (int32_t)p[P_STORAGE_LOAD] : ctx->device->queue_depth;
    s->compensate_idle = (int)p[P_COMPENSATE_IDLE];
    /* fast-forwarded cycles are shorter: keep up to 4 r of them */
    s->ring_cap = 4 * r + 4;
    int64_t nq = (int64_t)rq->n_servers * s->nc;
    int64_t nr = (int64_t)rq->n_servers * s->ring_cap;
    size_t q = at_least_one(nq);
    s->next = malloc(sizeof(int64_t) * at_least_one(rq->n));
    s->queue = malloc(sizeof(req_queue) * q);
    s->pending = calloc(q, sizeof(int64_t));
    s->outstanding = calloc(q, sizeof(int32_t));
    s->share = calloc(q, sizeof(double));
    s->credit = calloc(q, sizeof(double));
    s->used = calloc(q, sizeof(double));
    s->own = calloc(q, sizeof(double));
    s->sent_in = malloc(sizeof(int64_t) * at_least_one(rq->n));
    s->tpr = calloc(q, sizeof(double));
    s->tsum = calloc(q, sizeof(double));
    s->tcount = calloc(q, sizeof(int64_t));
    s->carry = calloc(q, sizeof(double));
    s->active = calloc(q, 1);
    s->last_seen = malloc(q * sizeof(double));
    s->win_u = calloc(q, sizeof(double));
    s->win_e = calloc(q, sizeof(double));
    s->ring_u = calloc(at_least_one(nr * s->nc), sizeof(double));
    s->ring_e = calloc(at_least_one(nr * s->nc), sizeof(double));
    s->ring_end = calloc(at_least_one(nr), sizeof(double));
    s->dev = calloc(at_least_one(s->nc), sizeof(double));
    s->srv = calloc(at_least_one(rq->n_servers), sizeof(server_state));
    if (!s->next || !s->queue || !s->pending || !s->outstanding || !s->share || !s->credit || !s->used ||
        !s->own || !s->sent_in || !s->tpr || !s->tsum || !s->tcount || !s->carry || !s->active ||
        !s->last_seen || !s->win_u || !s->win_e || !s->ring_u || !s->ring_e || !s->ring_end || !s->dev ||
        !s->srv) {
        fairio_destroy(s);
        *rc = RE_NOMEM;
        return NULL;
    }
    rq_init(s->queue, nq);
    for (int64_t k = 0; k < nq; k++)
        s->last_seen[k] = -INFINITY;
    for (int32_t sv = 0; sv < rq->n_servers; sv++)
        s->srv[sv].start = -1;
    initial_time_per_request(s, ctx);
    return s;
}

/* Drops the window's oldest cycle of server `sv`. */
static void ring_drop(re_sched *s, int32_t sv)
{
    server_state *st = &s->srv[sv];
    int64_t row = ((int64_t)sv * s->ring_cap + st->ring_head) * s->nc;
    int64_t base = (int64_t)sv * s->nc;
    for (int32_t c = 0; c < s->nc; c++) {
        s->win_u[base + c] -= s->ring_u[row + c];
        s->win_e[base + c] -= s->ring_e[row + c];
    }
    st->ring_head = (st->ring_head + 1) % s->ring_cap;
    if (--st->ring_size == 0)
        for (int32_t c = 0; c < s->nc; c++) /* no drift once the window is empty */
            s->win_u[base + c] = s->win_e[base + c] = 0;
}

/* Whether class `k` takes part in the cycle ending at `now`: it was backlogged
 * in it, or (compensate_idle) it was seen within the window, so that its
 * idleness counts as under-service for at most a window. */
static int counts(const re_sched *s, int64_t k, double now)
{
    return s->active[k] || (s->compensate_idle && s->last_seen[k] > now - s->window);
}

/* Ends the current cycle of `sv` at `now`: Step 1 (effective utilization),
 * then the cycle joins the window with each class's rightful share of it. */
static void close_cycle(re_sched *s, int32_t sv, double now)
{
    server_state *st = &s->srv[sv];
    int64_t base = (int64_t)sv * s->nc;
    int under = 0; /* a backlogged class used less than its share */
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t k = base + c;
        if (counts(s, k, now) && s->pending[k] + s->outstanding[k] > 0 && s->used[k] < s->share[k])
            under = 1;
    }
    /* a cycle cut short offered only part of its shares to an idle class */
    double part = now - st->start < s->cycle ? (now - st->start) / s->cycle : 1;
    double total = 0, weights = 0;
    double *u = s->dev;
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t k = base + c;
        u[c] = 0;
        if (!counts(s, k, now))
            continue;
        int backlogged = s->pending[k] + s->outstanding[k] > 0;
        u[c] = s->used[k];
        if (!s->compensate_idle && u[c] < s->share[k] * part && !backlogged)
            u[c] = s->share[k] * part; /* its own idleness: no compensation */
        else if (u[c] > s->share[k] && !under)
            u[c] = s->share[k]; /* spare disk time nobody else could use: no penalty */
        total += u[c];
        weights += s->weight[c];
    }
    for (int32_t c = 0; c < s->nc; c++)
        if (s->tcount[base + c] > 0)
            s->tpr[base + c] = s->tsum[base + c] / (double)s->tcount[base + c];
    if (total <= 0 && now <= st->start)
        return; /* an empty instant: nothing to remember */
    while (st->ring_size > 0 && (st->ring_size == s->ring_cap ||
                                 s->ring_end[(int64_t)sv * s->ring_cap + st->ring_head] <= now - s->window))
        ring_drop(s, sv);
    int32_t slot = (st->ring_head + st->ring_size) % s->ring_cap;
    int64_t row = ((int64_t)sv * s->ring_cap + slot) * s->nc;
    s->ring_end[(int64_t)sv * s->ring_cap + slot] = now;
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t k = base + c;
        double e = counts(s, k, now) && weights > 0 ? s->weight[c] / weights * total : 0;
        s->ring_u[row + c] = u[c];
        s->ring_e[row + c] = e;
        s->win_u[k] += u[c];
        s->win_e[k] += e;
    }
    st->ring_size++;
}

/* Step 3: ServiceShare of each backlogged class from the window's deviations. */
static void allocate(re_sched *s, int32_t sv)
{
    int64_t base = (int64_t)sv * s->nc;
    double S = s->cycle;
    double under = 0, inverse = 0, zero_weights = 0, weights = 0;
    int n_zero = 0;
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t k = base + c;
        s->share[k] = 0;
        if (s->pending[k] == 0)
            continue;
        /* no share is finer than a request: a deviation within one request's
         * disk time counts as zero */
        double d = s->win_u[k] - s->win_e[k], tol = s->tpr[k];
        s->dev[c] = fabs(d) <= tol ? 0 : d;
        weights += s->weight[c];
        if (s->dev[c] < 0)
            under += -d;
        else if (s->dev[c] > 0)
            inverse += 1 / d;
        else {
            n_zero++;
            zero_weights += s->weight[c];
        }
    }
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t k = base + c;
        if (s->pending[k] == 0)
            continue;
        double d = s->dev[c];
        if (s->mode == 1)
            s->share[k] = s->weight[c] / weights * S + s->carry[k];
        else if (under > 0) /* Compensation Mode */
            s->share[k] = d < 0 ? -d / under * S : 0;
        else if (n_zero == 0) /* Proportional Mode, rule 1 */
            s->share[k] = (1 / d) / inverse * S;
        else /* Proportional Mode, rule 2 */
            s->share[k] = d == 0 ? s->weight[c] / zero_weights * S : 0;
        s->carry[k] = 0;
    }
}

/* Step 4 and Class_threshold: credits from the shares; a class below the
 * threshold is deferred and its share spread over the others by their shares. */
static void give_credits(re_sched *s, int32_t sv)
{
    int64_t base = (int64_t)sv * s->nc;
    double kept = 0, deferred = 0, best = -1;
    int64_t best_k = -1;
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t k = base + c;
        s->credit[k] = s->share[k] / s->tpr[k];
        if (s->share[k] <= 0)
            continue;
        if (s->credit[k] > best) {
            best = s->credit[k];
            best_k = k;
        }
        if (s->credit[k] < s->class_threshold)
            deferred += s->share[k];
        else
            kept += s->share[k];
    }
    if (best_k < 0)
        return;
    if (kept <= 0) { /* nobody reaches the threshold: the closest class goes alone */
        kept = s->share[best_k];
        deferred -= kept;
        s->credit[best_k] = INFINITY;
    }
    double scale = (kept + deferred) / kept;
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t k = base + c;
        if (s->share[k] <= 0)
            continue;
        if (s->credit[k] < s->class_threshold) {
            if (s->mode == 1)
                s->carry[k] = s->share[k]; /* dispatch deferred to a later cycle */
            s->share[k] = 0;
            s->credit[k] = 0;
        } else {
            s->share[k] *= scale;
            s->credit[k] = s->share[k] / s->tpr[k];
        }
    }
}

/* Ends the current cycle (if any) and starts the next one at `now`. */
static void new_cycle(re_sched *s, int32_t sv, double now)
{
    server_state *st = &s->srv[sv];
    int64_t base = (int64_t)sv * s->nc;
    /* without history (mode 1), a request sent on the last fraction of a
     * credit (or a negative share) is paid in the next cycle */
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t k = base + c;
        if (s->mode == 1 && s->pending[k] > 0 && s->credit[k] < 0)
            s->carry[k] += s->credit[k] * s->tpr[k];
    }
    if (st->start >= 0)
        close_cycle(s, sv, now);
    st->start = now;
    st->end = now + s->cycle;
    st->id++;
    allocate(s, sv);
    give_credits(s, sv);
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t k = base + c;
        s->used[k] = s->own[k] = s->tsum[k] = 0;
        s->tcount[k] = 0;
        s->active[k] = s->pending[k] + s->outstanding[k] > 0;
    }
}

static void fairio_enqueue(re_sched *s, int32_t server, int64_t req, double now)
{
    int64_t k = (int64_t)server * s->nc + s->rq->cls[req];
    rq_push(&s->queue[k], s->next, req);
    s->pending[k]++;
    s->last_seen[k] = now;
    s->active[k] = 1;
    s->srv[server].pending++;
}

/* Oldest queued request among the classes with credits, or -1. */
static int32_t oldest_eligible(const re_sched *s, int32_t sv)
{
    int64_t base = (int64_t)sv * s->nc, best = -1;
    int32_t best_c = -1;
    for (int32_t c = 0; c < s->nc; c++) {
        int64_t head = s->queue[base + c].head;
        if (head < 0 || !(s->credit[base + c] > 0))
            continue;
        if (best < 0 || s->rq->arrival[head] < s->rq->arrival[best] ||
            (s->rq->arrival[head] == s->rq->arrival[best] && head < best)) {
            best = head;
            best_c = c;
        }
    }
    return best_c;
}

static int64_t fairio_pick(re_sched *s, int32_t server, double now, int64_t *out, int64_t max, double *wake)
{
    server_state *st = &s->srv[server];
    if (st->pending == 0)
        return 0;
    if (st->start < 0 || now >= st->end)
        new_cycle(s, server, now);
    int32_t c = oldest_eligible(s, server);
    /* fast-forwarding; a few cycles may pass at once while a debt is paid (mode 1) */
    for (int i = 0; c < 0 && st->outstanding < s->storage_load && i < 64; i++) {
        new_cycle(s, server, now);
        c = oldest_eligible(s, server);
    }
    if (c < 0) {
        *wake = st->end;
        return 0;
    }
    int64_t k = (int64_t)server * s->nc + c;
    out[0] = rq_pop(&s->queue[k], s->next);
    s->sent_in[out[0]] = st->id;
    s->credit[k] -= 1;
    s->pending[k]--;
    s->outstanding[k]++;
    st->pending--;
    st->outstanding++;
    return 1;
}

/* Completions measure disk time: ServiceUtilized and TimePerRequest. */
static void fairio_complete(re_sched *s, int32_t server, const int64_t *reqs, int64_t count, double dispatched,
                            double started, double now)
{
    double each = (now - started) / (double)count;
    for (int64_t j = 0; j < count; j++) {
        int64_t k = (int64_t)server * s->nc + s->rq->cls[reqs[j]];
        s->outstanding[k]--;
        s->srv[server].outstanding--;
        s->last_seen[k] = now;
        s->used[k] += each;
        s->tsum[k] += each;
        s->tcount[k]++;
        if (s->sent_in[reqs[j]] != s->srv[server].id)
            continue; /* paid with the credits of an earlier cycle */
        s->own[k] += each;
        if (s->own[k] >= s->share[k] && s->credit[k] > 0)
            s->credit[k] = 0; /* share used up: the rest of the credits is revoked */
    }
}

const re_sched_ops sched_fairio = {
    .name = "fairio", .params = PARAMS, .n_params = N_PARAM, .create = fairio_create, .destroy = fairio_destroy,
    .enqueue = fairio_enqueue, .pick = fairio_pick, .complete = fairio_complete,
};
