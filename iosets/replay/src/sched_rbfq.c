/* RBFQ / RePAIR (RBFQ paper, Figure 5): real-time dual tags per client.
 *
 * A flow is one class at one server. Each request gets a local tag
 * l = max(l_prev + cost/M, now) at arrival (M = reservation); the head of a
 * flow carries a global tag g = g_prev + delta/w (w = weight). A flow that
 * becomes active gets g = max(g_prev + delta/w, now - sigma cost/w) after the
 * server's global tags are shifted so that the smallest one equals now (tag
 * adjustment, idle credits sigma of section 3.3). When the device has room:
 * the smallest local tag <= now goes first (local phase), else the smallest
 * global tag (global phase), whose flow then takes back cost/M from its
 * pending local tags. An upper bound L keeps a flow out until
 * u = max(u, arrival) + cost/L (section 3.4).
 *
 * Distributed (section 3.2): delta = own cost + the class's service completed
 * at other servers since the flow's previous global tag, so a class hot on one
 * server pays there for what it got elsewhere. Global tags are given when a
 * request becomes the head of its flow (a gateway forwarding one request at a
 * time per server); for one server this equals tagging at arrival.
 * Reservations and upper bounds hold per server; weights are global.
 *
 * Cost is 1 per request, or its bytes (param cost_bytes). Heaps keyed by tag
 * make each decision O(log flows). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "request_engine.h"

enum { P_COST_BYTES, P_IDLE_CREDIT, P_DISTRIBUTED, N_PARAMS };

static const re_param PARAMS[] = {
    [P_COST_BYTES] = {"cost_bytes", 0.0,
                      "1 = a request costs its bytes (reservations, limits in bytes/s), 0 = one IO", RE_FLAG},
    [P_IDLE_CREDIT] = {"idle_credit", 0.0,
                       "sigma: a client back from idle gets global tags from now - sigma cost / weight", RE_AT_LEAST(0)},
    [P_DISTRIBUTED] = {"distributed", 1.0,
                       "1 = a server charges a client's global tags with its service at other servers (delta)",
                       RE_FLAG},
};
_Static_assert(sizeof(PARAMS) / sizeof(PARAMS[0]) == N_PARAMS, "one entry per parameter");

/* 4-ary min-heap of flows with a position index, so a flow's key can move. */
enum { ARITY = 4 };
typedef struct {
    heap_item *items; /* [flows of the server] */
    int32_t *pos;     /* [all flows], -1 when absent */
    int32_t size;
} flow_heap;

typedef struct {
    flow_heap local;     /* eligible flows with a reservation, by head local tag */
    flow_heap global;    /* eligible flows, by head global tag */
    flow_heap throttled; /* flows over their upper bound, by u */
    double global_off;   /* global tags are relative: real date = raw tag + global_off */
    /* dispatched, not completed (the device completes in dispatch order) */
    int64_t ring_first, ring_size, ring_head, ring_count;
} server_state;

typedef struct {
    int64_t req;
    double local_tag; /* raw: local_tag - local_off is the real-time tag */
} slot;

/* Pending requests of a flow live in a list of chunks (two cache lines), so
 * a flow's queue is read sequentially and a short queue stays in cache. */
enum { CHUNK_SLOTS = 7 };
typedef struct {
    slot item[CHUNK_SLOTS];
    int32_t next;
    int32_t pad[3];
} chunk;

typedef struct {
    int32_t head_chunk, tail_chunk; /* -1 when empty */
    int32_t head_pos, tail_pos;     /* next slot to read / write in them */
    int64_t count;
    int32_t cls;
    double local_off;   /* local tag taken back by global dispatches */
    double local_next;  /* raw local tag of the next arrival while backlogged */
    double global_head; /* raw global tag of the head */
    double global_next; /* tag of the last head + its cost / w */
    double upper;       /* u: no dispatch before this date */
    double seen_other;  /* service at other servers already charged to the tags */
    double done_here;   /* service completed at this server */
} flow;

struct re_sched {
    const re_requests *rq;
    int cost_bytes, distributed, track; /* track: completions feed delta */
    double idle_credit;
    double *inv_weight, *inv_res, *inv_limit; /* [n_classes], 0 = no reservation / no limit */
    double *done;         /* [n_classes] service completed at all servers */
    int32_t *flow_of;     /* [n], or NULL when flows are dense: server * n_classes + class */
    chunk *chunks;        /* pool: n / CHUNK_SLOTS + 2 per flow always suffices */
    int32_t free_chunk;   /* free list through chunk.next, -1 when empty */
    int32_t fresh_chunk;  /* chunks from here on were never used */
    flow *flows;          /* [n_flows] sorted by (server, class) */
    server_state *servers;/* [n_servers] */
    heap_item *items;     /* heap storage: 3 * n_flows */
    int32_t *pos;         /* heap positions: 3 * n_flows */
    int32_t *ring_flow;   /* outstanding dispatches per server */
    double *ring_cost;
    int32_t n_flows;
};

static void fh_place(flow_heap *h, int32_t i, heap_item item)
{
    h->items[i] = item;
    h->pos[item.id] = i;
}

static void fh_up(flow_heap *h, int32_t i, heap_item item)
{
    while (i > 0) {
        int32_t parent = (i - 1) / ARITY;
        if (!heap_less(&item, &h->items[parent]))
            break;
        fh_place(h, i, h->items[parent]);
        i = parent;
    }
    fh_place(h, i, item);
}

static void fh_down(flow_heap *h, int32_t i, heap_item item)
{
    for (;;) {
        int64_t first = (int64_t)ARITY * i + 1, last = first + ARITY < h->size ? first + ARITY : h->size;
        if (first >= h->size)
            break;
        int32_t child = (int32_t)first;
        for (int32_t j = child + 1; j < last; j++)
            if (heap_less(&h->items[j], &h->items[child]))
                child = j;
        if (!heap_less(&h->items[child], &item))
            break;
        fh_place(h, i, h->items[child]);
        i = child;
    }
    fh_place(h, i, item);
}

/* `x` rounded to 40 significant bits: tags equal up to rounding noise (sums of
 * 1/M, 1/w) tie, and ties go to the smaller class as in Table 3. */
static double snap(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits = (bits + (1u << 11)) & ~(uint64_t)0xfff;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* Inserts flow `id` with `key`, or moves it there. */
static void fh_set(flow_heap *h, int32_t id, double key)
{
    heap_item item = {snap(key), id};
    int32_t i = h->pos[id];
    if (i < 0)
        fh_up(h, h->size++, item);
    else if (item.key == h->items[i].key)
        return;
    else if (heap_less(&item, &h->items[i]))
        fh_up(h, i, item);
    else
        fh_down(h, i, item);
}

static void fh_remove(flow_heap *h, int32_t id)
{
    int32_t i = h->pos[id];
    if (i < 0)
        return;
    h->pos[id] = -1;
    heap_item last = h->items[--h->size];
    if (i == h->size)
        return;
    if (heap_less(&last, &h->items[i]))
        fh_up(h, i, last);
    else
        fh_down(h, i, last);
}

static void rbfq_destroy(re_sched *s)
{
    free(s->inv_weight);
    free(s->inv_res);
    free(s->inv_limit);
    free(s->done);
    free(s->flow_of);
    free(s->chunks);
    free(s->flows);
    free(s->servers);
    free(s->items);
    free(s->pos);
    free(s->ring_flow);
    free(s->ring_cost);
    free(s);
}

static int compare_keys(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Open-addressing table (server, class) key -> first-seen flow number. */
typedef struct {
    int64_t *keys; /* -1 = empty */
    int32_t *ids;
    int64_t mask;
} pair_table;

static int table_init(pair_table *t, int64_t capacity)
{
    t->keys = malloc((size_t)capacity * sizeof(int64_t));
    t->ids = malloc((size_t)capacity * sizeof(int32_t));
    t->mask = capacity - 1;
    if (t->keys == NULL || t->ids == NULL)
        return 0;
    memset(t->keys, 0xff, (size_t)capacity * sizeof(int64_t));
    return 1;
}

static int64_t table_slot(const pair_table *t, int64_t key)
{
    int64_t i = (int64_t)(((uint64_t)key * 0x9E3779B97F4A7C15ULL) >> 20) & t->mask;
    while (t->keys[i] >= 0 && t->keys[i] != key)
        i = (i + 1) & t->mask;
    return i;
}

/* Doubles the table. */
static int table_grow(pair_table *t)
{
    pair_table bigger;
    if (!table_init(&bigger, 2 * (t->mask + 1))) {
        free(bigger.keys);
        free(bigger.ids);
        return 0;
    }
    for (int64_t i = 0; i <= t->mask; i++)
        if (t->keys[i] >= 0) {
            int64_t j = table_slot(&bigger, t->keys[i]);
            bigger.keys[j] = t->keys[i];
            bigger.ids[j] = t->ids[i];
        }
    free(t->keys);
    free(t->ids);
    *t = bigger;
    return 1;
}

/* Growable list of the distinct keys with their request counts. */
typedef struct {
    int64_t *keys, *counts, size, capacity;
} key_list;

static int list_add(key_list *l, int64_t key)
{
    if (l->size == l->capacity) {
        int64_t capacity = l->capacity ? 2 * l->capacity : 1024;
        int64_t *keys = realloc(l->keys, (size_t)capacity * sizeof(int64_t));
        if (keys != NULL)
            l->keys = keys;
        int64_t *counts = realloc(l->counts, (size_t)capacity * sizeof(int64_t));
        if (counts != NULL)
            l->counts = counts;
        if (keys == NULL || counts == NULL)
            return 0;
        l->capacity = capacity;
    }
    l->keys[l->size] = key;
    l->counts[l->size++] = 0;
    return 1;
}

/* Every (server, class) pair is a flow, numbered by its key; request counts
 * (for the outstanding rings) only when completions are tracked. */
static int dense_flows(re_sched *s, key_list *list)
{
    const re_requests *rq = s->rq;
    int64_t nf = (int64_t)rq->n_servers * rq->n_classes;
    list->keys = malloc(at_least_one(nf) * sizeof(int64_t));
    list->counts = calloc(at_least_one(nf), sizeof(int64_t));
    if (list->keys == NULL || list->counts == NULL)
        return 0;
    for (int64_t k = 0; k < nf; k++)
        list->keys[k] = k;
    for (int64_t i = 0; s->track && i < rq->n; i++)
        list->counts[(int64_t)rq->server[i] * rq->n_classes + rq->cls[i]]++;
    list->size = nf;
    s->n_flows = (int32_t)nf;
    return 1;
}

/* Numbers the (server, class) pairs that occur in key order (flow_of) and
 * lists their keys and request counts in that order. */
static int number_flows(re_sched *s, key_list *list)
{
    const re_requests *rq = s->rq;
    if (s->flow_of == NULL)
        return dense_flows(s, list);
    pair_table t = {NULL, NULL, 0};
    int ok = table_init(&t, 4096);
    for (int64_t i = 0; ok && i < rq->n; i++) {
        int64_t key = (int64_t)rq->server[i] * rq->n_classes + rq->cls[i];
        int64_t slot = table_slot(&t, key);
        if (t.keys[slot] < 0) {
            ok = list->size < INT32_MAX && list_add(list, key);
            t.keys[slot] = key;
            t.ids[slot] = (int32_t)(list->size - 1);
            if (ok && 2 * list->size > t.mask + 1) {
                ok = table_grow(&t);
                slot = table_slot(&t, key);
            }
        }
        if (ok) {
            s->flow_of[i] = t.ids[slot];
            list->counts[t.ids[slot]]++;
        }
    }
    int64_t nk = list->size;
    int32_t *rank = ok ? malloc(at_least_one(nk) * sizeof(int32_t)) : NULL;
    int64_t *counts = ok ? malloc(at_least_one(nk) * sizeof(int64_t)) : NULL;
    ok = rank != NULL && counts != NULL;
    if (ok) {
        qsort(list->keys, (size_t)nk, sizeof(int64_t), compare_keys);
        for (int64_t k = 0; k < nk; k++) {
            int32_t id = t.ids[table_slot(&t, list->keys[k])];
            rank[id] = (int32_t)k;
            counts[k] = list->counts[id];
        }
        for (int64_t i = 0; i < rq->n; i++)
            s->flow_of[i] = rank[s->flow_of[i]];
        free(list->counts);
        list->counts = counts;
        s->n_flows = (int32_t)nk;
    } else {
        free(counts);
    }
    free(rank);
    free(t.keys);
    free(t.ids);
    return ok;
}

static int check_classes(const re_context *ctx, int *rc, int64_t *bad)
{
    for (int32_t c = 0; c < ctx->rq->n_classes; c++) {
        *bad = c;
        if (!(ctx->weight[c] > 0) || !isfinite(ctx->weight[c]))
            return *rc = RE_BAD_WEIGHT, 0;
        if (!(ctx->reservation[c] >= 0) || !isfinite(ctx->reservation[c]))
            return *rc = RE_BAD_RESERVATION, 0;
        if (!(ctx->limit[c] >= 0) || !isfinite(ctx->limit[c]))
            return *rc = RE_BAD_LIMIT, 0;
    }
    *bad = -1;
    return 1;
}

/* Sets up the flows, each server's heap storage and outstanding ring. */
static int setup_flows(re_sched *s, const key_list *list, int32_t queue_depth)
{
    int32_t nc = s->rq->n_classes, nf = s->n_flows;
    int64_t ring_total = 0;
    for (int32_t k = 0; k < nf; k++) {
        flow *f = &s->flows[k];
        f->head_chunk = f->tail_chunk = -1;
        f->head_pos = f->tail_pos = 0;
        f->count = 0;
        f->cls = (int32_t)(list->keys[k] % nc);
        f->local_next = f->global_next = -INFINITY;
        f->local_off = f->global_head = f->upper = f->seen_other = f->done_here = 0;
    }
    memset(s->pos, 0xff, 3 * at_least_one(nf) * sizeof(int32_t));
    int32_t k = 0;
    for (int32_t server = 0; server < s->rq->n_servers; server++) {
        server_state *sv = &s->servers[server];
        flow_heap *heaps[3] = {&sv->local, &sv->global, &sv->throttled};
        for (int j = 0; j < 3; j++) {
            heaps[j]->items = s->items + (int64_t)j * nf + k;
            heaps[j]->pos = s->pos + (int64_t)j * nf;
            heaps[j]->size = 0;
        }
        sv->global_off = 0;
        int64_t requests = 0;
        for (; k < nf && list->keys[k] / nc == server; k++)
            requests += list->counts[k];
        sv->ring_first = ring_total;
        sv->ring_size = requests < queue_depth ? requests : queue_depth;
        sv->ring_head = sv->ring_count = 0;
        ring_total += sv->ring_size;
    }
    if (!s->track)
        return 1;
    s->ring_flow = malloc(at_least_one(ring_total) * sizeof(int32_t));
    s->ring_cost = malloc(at_least_one(ring_total) * sizeof(double));
    return s->ring_flow != NULL && s->ring_cost != NULL;
}

static re_sched *rbfq_create(const re_context *ctx, int *rc, int64_t *bad)
{
    const re_requests *rq = ctx->rq;
    if (!check_classes(ctx, rc, bad))
        return NULL;
    re_sched *s = calloc(1, sizeof(re_sched));
    if (s == NULL) {
        *rc = RE_NOMEM;
        return NULL;
    }
    s->rq = rq;
    s->cost_bytes = ctx->param[P_COST_BYTES] != 0;
    s->distributed = ctx->param[P_DISTRIBUTED] != 0;
    s->track = s->distributed && rq->n_servers > 1;
    s->idle_credit = ctx->param[P_IDLE_CREDIT];
    size_t nc = at_least_one(rq->n_classes), n = at_least_one(rq->n);
    s->inv_weight = malloc(nc * sizeof(double));
    s->inv_res = malloc(nc * sizeof(double));
    s->inv_limit = malloc(nc * sizeof(double));
    s->done = calloc(nc, sizeof(double));
    /* dense flows unless few of the (server, class) pairs can occur */
    int64_t pairs = (int64_t)rq->n_servers * rq->n_classes;
    int dense = pairs <= rq->n / 4 + 4096 && pairs <= INT32_MAX;
    if (!dense)
        s->flow_of = malloc(n * sizeof(int32_t));
    s->servers = malloc(at_least_one(rq->n_servers) * sizeof(server_state));
    key_list list = {NULL, NULL, 0, 0};
    int ok = s->inv_weight && s->inv_res && s->inv_limit && s->done && s->servers &&
             (dense || s->flow_of) && number_flows(s, &list);
    if (ok) {
        size_t nf = at_least_one(s->n_flows);
        /* a flow holds at most count / CHUNK_SLOTS + 2 chunks */
        int64_t n_chunks = rq->n / CHUNK_SLOTS + 2 * (int64_t)nf + 1;
        s->flows = calloc(nf, sizeof(flow));
        s->items = malloc(3 * nf * sizeof(heap_item));
        s->pos = malloc(3 * nf * sizeof(int32_t));
        s->chunks = n_chunks <= INT32_MAX ? malloc((size_t)n_chunks * sizeof(chunk)) : NULL;
        ok = s->flows && s->items && s->pos && s->chunks && setup_flows(s, &list, ctx->device->queue_depth);
        s->free_chunk = -1;
    }
    free(list.keys);
    free(list.counts);
    if (!ok) {
        rbfq_destroy(s);
        *rc = RE_NOMEM;
        return NULL;
    }
    for (int32_t c = 0; c < rq->n_classes; c++) {
        s->inv_weight[c] = 1.0 / ctx->weight[c];
        s->inv_res[c] = ctx->reservation[c] > 0 ? 1.0 / ctx->reservation[c] : 0.0;
        s->inv_limit[c] = ctx->limit[c] > 0 ? 1.0 / ctx->limit[c] : 0.0;
    }
    return s;
}

static double cost_of(const re_sched *s, int64_t req)
{
    return s->cost_bytes ? s->rq->size[req] : 1.0;
}

/* Service of the flow's class at other servers not yet charged to its tags. */
static double other_service(re_sched *s, flow *f)
{
    if (!s->track)
        return 0.0;
    double other = s->done[f->cls] - f->done_here;
    double delta = other - f->seen_other;
    f->seen_other = other;
    return delta;
}

/* Files a backlogged flow by its head: throttled until u, else by its tags
 * (`now` snapped, as every date the scheduler compares). */
static void file_flow(re_sched *s, server_state *sv, int32_t k, double now)
{
    flow *f = &s->flows[k];
    if (snap(f->upper) > now) {
        fh_remove(&sv->local, k);
        fh_remove(&sv->global, k);
        fh_set(&sv->throttled, k, f->upper);
        return;
    }
    if (s->inv_res[f->cls] > 0)
        fh_set(&sv->local, k, s->chunks[f->head_chunk].item[f->head_pos].local_tag - f->local_off);
    fh_set(&sv->global, k, f->global_head);
}

/* Flows whose upper-bound tag has come become eligible again. */
static void release(re_sched *s, server_state *sv, double now)
{
    while (sv->throttled.size && sv->throttled.items[0].key <= now) {
        int32_t k = sv->throttled.items[0].id;
        fh_remove(&sv->throttled, k);
        file_flow(s, sv, k, now);
    }
}

/* Appends a slot to the flow's queue and returns it. */
static slot *push_slot(re_sched *s, flow *f)
{
    if (f->tail_chunk < 0 || f->tail_pos == CHUNK_SLOTS) {
        int32_t c = s->free_chunk;
        if (c >= 0)
            s->free_chunk = s->chunks[c].next;
        else
            c = s->fresh_chunk++;
        s->chunks[c].next = -1;
        if (f->tail_chunk < 0)
            f->head_chunk = c;
        else
            s->chunks[f->tail_chunk].next = c;
        f->tail_chunk = c;
        f->tail_pos = 0;
    }
    f->count++;
    return &s->chunks[f->tail_chunk].item[f->tail_pos++];
}

/* Removes the flow's head request and returns it. */
static int64_t pop_slot(re_sched *s, flow *f)
{
    int32_t c = f->head_chunk;
    int64_t req = s->chunks[c].item[f->head_pos++].req;
    if (--f->count == 0 || f->head_pos == CHUNK_SLOTS) {
        f->head_chunk = s->chunks[c].next;
        f->head_pos = 0;
        if (f->count == 0)
            f->head_chunk = f->tail_chunk = -1;
        s->chunks[c].next = s->free_chunk;
        s->free_chunk = c;
    }
    return req;
}

static void rbfq_enqueue(re_sched *s, int32_t server, int64_t req, double now)
{
    now = snap(now);
    int32_t k = s->flow_of ? s->flow_of[req] : s->rq->server[req] * s->rq->n_classes + s->rq->cls[req];
    flow *f = &s->flows[k];
    double cost = cost_of(s, req), inv_res = s->inv_res[f->cls], inv_w = s->inv_weight[f->cls];
    slot *new = push_slot(s, f);
    new->req = req;
    if (inv_res > 0) {
        new->local_tag = fmax(f->local_next, now + f->local_off);
        f->local_next = new->local_tag + cost * inv_res;
    }
    if (f->count > 1)
        return;
    server_state *sv = &s->servers[server];
    release(s, sv, now);
    /* tag adjustment: the smallest global tag of the eligible backlogged flows is now */
    if (sv->global.size)
        sv->global_off = now - sv->global.items[0].key;
    double earliest = now - sv->global_off - s->idle_credit * cost * inv_w;
    f->global_head = fmax(f->global_next + other_service(s, f) * inv_w, earliest);
    file_flow(s, sv, k, now);
}

static int64_t rbfq_pick(re_sched *s, int32_t server, double now, int64_t *out, int64_t max, double *wake)
{
    server_state *sv = &s->servers[server];
    now = snap(now);
    release(s, sv, now);
    int32_t k;
    int global = 0;
    if (sv->local.size && sv->local.items[0].key <= now) {
        k = sv->local.items[0].id;
    } else if (sv->global.size) {
        k = sv->global.items[0].id;
        global = 1;
    } else {
        if (sv->throttled.size)
            *wake = sv->throttled.items[0].key;
        return 0;
    }
    flow *f = &s->flows[k];
    int32_t c = f->cls;
    int64_t req = pop_slot(s, f);
    double cost = cost_of(s, req);
    if (global)
        f->local_off += cost * s->inv_res[c]; /* the reservation is not charged */
    if (s->inv_limit[c] > 0)
        f->upper = fmax(f->upper, s->rq->arrival[req]) + cost * s->inv_limit[c];
    f->global_next = f->global_head + cost * s->inv_weight[c];
    if (f->count == 0) {
        fh_remove(&sv->local, k);
        fh_remove(&sv->global, k);
    } else {
        f->global_head = f->global_next + other_service(s, f) * s->inv_weight[c];
        file_flow(s, sv, k, now);
    }
    if (s->track) {
        int64_t i = sv->ring_first + (sv->ring_head + sv->ring_count++) % sv->ring_size;
        s->ring_flow[i] = k;
        s->ring_cost[i] = cost;
    }
    out[0] = req;
    return 1;
}

/* The device completes in dispatch order: the ring's head is the request done. */
static void rbfq_complete(re_sched *s, int32_t server, const int64_t *reqs, int64_t count, double dispatched,
                          double started, double now)
{
    if (!s->track)
        return;
    server_state *sv = &s->servers[server];
    for (int64_t j = 0; j < count; j++) {
        int64_t i = sv->ring_first + sv->ring_head;
        sv->ring_head = (sv->ring_head + 1) % sv->ring_size;
        sv->ring_count--;
        flow *f = &s->flows[s->ring_flow[i]];
        s->done[f->cls] += s->ring_cost[i];
        f->done_here += s->ring_cost[i];
    }
}

const re_sched_ops sched_rbfq = {
    .name = "rbfq", .params = PARAMS, .n_params = N_PARAMS, .create = rbfq_create, .destroy = rbfq_destroy,
    .enqueue = rbfq_enqueue, .pick = rbfq_pick, .complete = rbfq_complete,
};
