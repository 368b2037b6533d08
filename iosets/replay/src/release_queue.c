/* The closed loop's pending releases: see release_queue.h. */
#include "release_queue.h"

#include <math.h>
#include <stdlib.h>

typedef struct {
    double date;
    int64_t req;
} pending;

/* An array of request indices (or counts of them): 32-bit while the requests fit, which halves
 * the memory the loop touches per request; 64-bit beyond. */
typedef struct {
    int32_t *narrow;
    int64_t *wide;
} indices;

/* `count` entries, narrow when indices below `n` (the requests) fit in 32 bits; 0 when out of memory. */
static int indices_new(indices *a, int64_t count, int64_t n)
{
    if (n < INT32_MAX)
        a->narrow = malloc(at_least_one(count) * sizeof(int32_t));
    else
        a->wide = malloc(at_least_one(count) * sizeof(int64_t));
    return a->narrow != NULL || a->wide != NULL;
}

static inline int64_t at(const indices *a, int64_t i)
{
    return a->narrow != NULL ? a->narrow[i] : a->wide[i];
}

static inline void set(indices *a, int64_t i, int64_t value)
{
    if (a->narrow != NULL)
        a->narrow[i] = (int32_t)value;
    else
        a->wide[i] = value;
}

static inline void prefetch_at(const indices *a, int64_t i)
{
    if (a->narrow != NULL)
        __builtin_prefetch(&a->narrow[i]);
    else if (a->wide != NULL)
        __builtin_prefetch(&a->wide[i]);
}

static void indices_free(indices *a)
{
    free(a->narrow);
    free(a->wide);
}

/* What each completion or phase end releases, as linked lists in index order (-1 ends one):
 * the requests gated by g are gated[g], then sibling[] from there; the roots of phase p are
 * roots[p], then sibling[]; the phases after p are successor[p], then next_successor[].
 * Built in one backward pass (link_children), with no count, prefix or shift pass. */
struct release_queue {
    const re_requests *rq;
    const re_chains *ch;
    double *release, *phase_start, *phase_end;
    indices gated;       /* [n] the first request each request gates, or -1 */
    indices roots;       /* [n_phases] the first request each phase's opening releases, or -1 */
    indices sibling;     /* [n] the next request of the same gate, or of the same phase's roots */
    int32_t *successor;  /* [n_phases] the first phase whose prev is each phase, or -1 */
    int32_t *next_successor; /* [n_phases] the next phase of the same prev */
    int64_t *left;   /* [n_phases] requests not yet completed */
    indices part_link;   /* [n] with parts: a later part's first part; at a first part, -(its parts not completed) */
    int parts;           /* part_link is built */
    double *link_free;   /* [n_jobs] with client rates: when each job's client link is free */
    char *on_link;       /* [n] with client rates: the request already holds its date on the link */
    pending *heap;   /* by (date, req): memory follows the outstanding requests */
    int64_t size, capacity;
};

/* Builds the lists: for each request, its gate's list (gate >= 0) or its phase's roots;
 * for each phase, its prev's successors. */
static void link_children(release_queue *q)
{
    const re_requests *rq = q->rq;
    const re_chains *ch = q->ch;
    for (int64_t i = 0; i < rq->n; i++)
        set(&q->gated, i, -1);
    for (int32_t p = 0; p < rq->n_phases; p++) {
        set(&q->roots, p, -1);
        q->successor[p] = -1;
    }
    for (int64_t i = rq->n - 1; i >= 0; i--) {
        int64_t gate = ch->gate[i];
        indices *list = gate >= 0 ? &q->gated : &q->roots;
        int64_t head = gate >= 0 ? gate : rq->phase[i];
        set(&q->sibling, i, at(list, head));
        set(list, head, i);
    }
    for (int32_t p = rq->n_phases - 1; p >= 0; p--)
        if (ch->prev[p] >= 0) {
            q->next_successor[p] = q->successor[ch->prev[p]];
            q->successor[ch->prev[p]] = p;
        }
}

static int less(const pending *a, const pending *b)
{
    return a->date < b->date || (a->date == b->date && a->req < b->req);
}

/* 0 when out of memory. */
static int push(release_queue *q, double date, int64_t req)
{
    if (q->size == q->capacity) {
        int64_t grown = 2 * q->capacity;
        pending *heap = realloc(q->heap, (size_t)grown * sizeof(pending));
        if (heap == NULL)
            return 0;
        q->heap = heap;
        q->capacity = grown;
    }
    q->release[req] = date;
    prefetch_request(q->rq, req); /* read when it is taken, a think time from now */
    prefetch_at(&q->part_link, req); /* and these when it completes */
    prefetch_at(&q->gated, req);
    pending item = {date, req};
    int64_t i = q->size++;
    while (i > 0 && less(&item, &q->heap[(i - 1) / 2])) {
        q->heap[i] = q->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->heap[i] = item;
    return 1;
}

/* Removes the earliest pending release and returns its request. */
static int64_t pop(release_queue *q)
{
    int64_t top = q->heap[0].req;
    pending last = q->heap[--q->size];
    int64_t i = 0;
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= q->size)
            break;
        if (child + 1 < q->size && less(&q->heap[child + 1], &q->heap[child]))
            child++;
        if (!less(&q->heap[child], &last))
            break;
        q->heap[i] = q->heap[child];
        i = child;
    }
    if (q->size > 0)
        q->heap[i] = last;
    return top;
}

/* Asks the cache for what the completion of `req` reads (rl_complete): its phase's count and,
 * for a first part, the think time and sibling link of the first request it gates (its gate list,
 * prefetched at its release, is in cache by its arrival). */
static inline void prefetch_completion(const release_queue *q, int64_t req)
{
    __builtin_prefetch(&q->left[q->rq->phase[req]]);
    int64_t child = at(&q->gated, req);
    if (child >= 0) {
        __builtin_prefetch(&q->ch->think[child]);
        prefetch_at(&q->sibling, child);
    }
}

double rl_next(const release_queue *q)
{
    return q->size ? q->heap[0].date : INFINITY;
}

int64_t rl_take(release_queue *q, double now)
{
    while (q->size && q->heap[0].date <= now) {
        double due = q->heap[0].date;
        int64_t req = pop(q);
        prefetch_completion(q, req);
        if (q->link_free == NULL || q->on_link[req])
            return req;
        int32_t job = q->ch->job[q->rq->phase[req]];
        double rate = q->ch->client_rate[job];
        if (rate == 0.0)
            return req;
        double *link = &q->link_free[job];
        double leaves = *link > due ? *link : due;
        *link = leaves + q->rq->size[req] / rate;
        if (!(leaves > due))
            return req;
        q->on_link[req] = 1;
        push(q, leaves, req); /* cannot fail: it takes the place it left */
    }
    return -1;
}

static int open_phase(release_queue *q, int64_t phase, double date)
{
    q->phase_start[phase] = date;
    for (int64_t req = at(&q->roots, phase); req >= 0; req = at(&q->sibling, req))
        if (!push(q, date + q->ch->think[req], req))
            return 0;
    return 1;
}

int rl_complete(release_queue *q, int64_t req, double now)
{
    int64_t first = req;
    int released = 1;
    if (q->parts) { /* one load per part: the first part's counter shares its cache line mostly */
        int64_t link = at(&q->part_link, req);
        first = link >= 0 ? link : req;
        int64_t left = at(&q->part_link, first) + 1;
        set(&q->part_link, first, left);
        released = left == 0;
    }
    for (int64_t next = released ? at(&q->gated, first) : -1; next >= 0; next = at(&q->sibling, next))
        if (!push(q, now + q->ch->think[next], next))
            return 0;
    int32_t phase = q->rq->phase[req];
    if (--q->left[phase] > 0)
        return 1;
    q->phase_end[phase] = now;
    for (int32_t next = q->successor[phase]; next >= 0; next = q->next_successor[next])
        if (!open_phase(q, next, now + q->ch->gap[next]))
            return 0;
    return 1;
}

/* Whether part i belongs to a request as `first` says: its first part is itself a first
 * part, no later than i, of the same phase, gate and think; a gate is a first part. */
static int part_ok(const re_requests *rq, const re_chains *ch, int64_t i)
{
    const int64_t *first = ch->first;
    int64_t f = first[i], gate = ch->gate[i];
    if (f < 0 || f > i || first[f] != f || rq->phase[f] != rq->phase[i])
        return 0;
    return gate == ch->gate[f] && ch->think[i] == ch->think[f] && (gate < 0 || first[gate] == gate);
}

/* RE_OK, or the error code of the first bad request (part), phase or job, its index in *bad. */
static int validate_chains(const re_requests *rq, const re_chains *ch, int64_t *left, int64_t *bad)
{
    for (int64_t i = 0; i < rq->n; i++) {
        *bad = i;
        int64_t gate = ch->gate[i];
        if (rq->phase[i] < 0 || !(ch->think[i] >= 0) || !isfinite(ch->think[i]) || gate < -1 || gate >= i ||
            (gate >= 0 && rq->phase[gate] != rq->phase[i]) || (ch->first != NULL && !part_ok(rq, ch, i)))
            return RE_BAD_GATE;
        left[rq->phase[i]]++;
    }
    for (int64_t p = 0; p < rq->n_phases; p++) {
        *bad = p;
        int32_t prev = ch->prev[p];
        if (left[p] == 0 || !isfinite(ch->gap[p]) || prev < -1 || prev >= p ||
            (prev >= 0 && (ch->job[prev] != ch->job[p] || !(ch->gap[p] >= 0))) ||
            (ch->client_rate != NULL && (ch->job[p] < 0 || ch->job[p] >= ch->n_jobs)))
            return RE_BAD_CHAIN;
    }
    for (int32_t j = 0; ch->client_rate != NULL && j < ch->n_jobs; j++) {
        *bad = j;
        if (!(ch->client_rate[j] >= 0) || !isfinite(ch->client_rate[j]))
            return RE_BAD_RATE;
    }
    *bad = -1;
    return RE_OK;
}

void rl_free(release_queue *q)
{
    indices_free(&q->gated);
    indices_free(&q->roots);
    indices_free(&q->sibling);
    free(q->successor);
    free(q->next_successor);
    free(q->left);
    indices_free(&q->part_link);
    free(q->link_free);
    free(q->on_link);
    free(q->heap);
    free(q);
}

release_queue *rl_new(const re_requests *rq, const re_chains *ch, double *release, double *phase_start,
                      double *phase_end, int *rc, int64_t *bad)
{
    *rc = RE_NOMEM;
    release_queue *q = calloc(1, sizeof(release_queue));
    if (q == NULL)
        return NULL;
    *q = (release_queue){.rq = rq, .ch = ch, .release = release, .phase_start = phase_start,
                         .phase_end = phase_end, .capacity = 64};
    q->left = calloc(at_least_one(rq->n_phases), sizeof(int64_t));
    int ok = indices_new(&q->gated, rq->n, rq->n) & indices_new(&q->sibling, rq->n, rq->n) &
             indices_new(&q->roots, rq->n_phases, rq->n);
    q->heap = malloc((size_t)q->capacity * sizeof(pending));
    q->successor = malloc(at_least_one(rq->n_phases) * sizeof(int32_t));
    q->next_successor = malloc(at_least_one(rq->n_phases) * sizeof(int32_t));
    if (!ok || q->left == NULL || q->heap == NULL || q->successor == NULL || q->next_successor == NULL)
        goto fail;
    *rc = validate_chains(rq, ch, q->left, bad);
    if (*rc != RE_OK)
        goto fail;
    *rc = RE_NOMEM;
    if (ch->first != NULL) {
        if (!indices_new(&q->part_link, rq->n, rq->n))
            goto fail;
        q->parts = 1;
        for (int64_t i = 0; i < rq->n; i++) { /* a first part comes before its other parts */
            int64_t f = ch->first[i];
            set(&q->part_link, i, f == i ? -1 : f);
            if (f != i)
                set(&q->part_link, f, at(&q->part_link, f) - 1);
        }
    }
    if (ch->client_rate != NULL) {
        q->link_free = malloc(at_least_one(ch->n_jobs) * sizeof(double));
        q->on_link = calloc(at_least_one(rq->n), 1);
        if (q->link_free == NULL || q->on_link == NULL)
            goto fail;
        for (int32_t j = 0; j < ch->n_jobs; j++)
            q->link_free[j] = -INFINITY;
    }
    link_children(q);
    for (int64_t i = 0; i < rq->n; i++)
        release[i] = NAN;
    for (int64_t p = 0; p < rq->n_phases; p++)
        phase_start[p] = phase_end[p] = NAN;
    for (int64_t p = 0; p < rq->n_phases; p++)
        if (ch->prev[p] < 0 && !open_phase(q, p, ch->gap[p]))
            goto fail;
    *rc = RE_OK;
    return q;
fail:
    rl_free(q);
    return NULL;
}
