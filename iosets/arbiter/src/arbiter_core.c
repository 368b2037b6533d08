/* Admission core of the IO-SETS arbiter: see arbiter_core.h for the rules. */
#include "arbiter_core.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* sum(p) over the performing jobs is kept as an unevaluated pair hi + lo (Knuth's TwoSum on
 * every add and subtract), exact while the priorities span fewer than ~12 decimal orders
 * (SET-10's 10^-set for sets 0 to 12): so it returns to the same pair when the same jobs perform,
 * and ac_rates can tell "nothing changed" by comparing pairs. It is reset to 0 whenever no
 * job performs and recomputed every RESUM_PERIOD admissions, so it never drifts. */
#define RESUM_PERIOD 4096

enum { FREE_SLOT = 0 };

typedef struct {
    double priority;
    double rate;     /* last rate reported (grant or change) */
    int32_t set;     /* set slot */
    int32_t prev;    /* waiting queue links inside the set; `next` also links free handles */
    int32_t next;
    int32_t index;   /* position in `performers` while performing */
    int8_t state;    /* an ac_state, or FREE_SLOT */
    int8_t fresh;    /* in `fresh` (granted since the last ac_rates); kept when the handle is reused */
    int8_t listed;   /* in `passing`; kept when the handle is reused */
} job_t;

typedef struct {
    int64_t label;     /* the set's label (-1: a job's own set) */
    int32_t head;      /* waiting queue; `head` also links free slots */
    int32_t tail;
    int32_t performer; /* or -1 */
    int32_t members;   /* joined jobs of the set */
    int8_t dirty;      /* in `dirty`; kept when the slot is reused, so that no set is listed twice */
} set_t;

typedef struct {
    double hi, lo;
} pair;

struct ac_core {
    ac_policy policy;
    double bandwidth;
    job_t *jobs;
    int32_t n_jobs, cap_jobs, free_jobs, joined;
    set_t *sets;
    int32_t n_sets, cap_sets, free_sets;
    int64_t *keys;     /* open addressing: set label -> set slot, linear probing */
    int32_t *slots;    /* -1: empty */
    int32_t cap_hash, n_hash;
    int32_t *dirty;    /* marked sets, capacity cap_sets */
    int32_t n_dirty;
    int32_t *passing;  /* zero-byte phases to grant, capacity cap_jobs */
    int32_t n_passing;
    int32_t *performers;
    int32_t n_performers;
    int32_t *fresh;    /* granted since the last ac_rates, capacity cap_jobs */
    int32_t n_fresh;
    ac_notice *grants; /* outputs, capacity cap_jobs */
    ac_notice *changes;
    pair sum, notified; /* sum(p) now, and when ac_rates last ran */
    int64_t admissions;
};

static pair pair_add(pair s, double x)
{
    double hi = s.hi + x;
    double v = hi - s.hi;
    double err = (s.hi - (hi - v)) + (x - v);
    double lo = s.lo + err;
    double h2 = hi + lo; /* renormalise: |lo| <= ulp(hi) / 2 */
    return (pair){h2, lo - (h2 - hi)};
}

static int same_pair(pair a, pair b)
{
    return a.hi == b.hi && a.lo == b.lo;
}

ac_core *ac_create(ac_policy policy, double bandwidth)
{
    if (!(bandwidth > 0) || !isfinite(bandwidth) || policy < 0 || policy >= AC_N_POLICIES)
        return NULL;
    ac_core *c = calloc(1, sizeof(ac_core));
    if (c == NULL)
        return NULL;
    c->policy = policy;
    c->bandwidth = bandwidth;
    c->free_jobs = c->free_sets = -1;
    return c;
}

void ac_destroy(ac_core *c)
{
    if (c == NULL)
        return;
    free(c->jobs);
    free(c->sets);
    free(c->keys);
    free(c->slots);
    free(c->dirty);
    free(c->passing);
    free(c->performers);
    free(c->fresh);
    free(c->grants);
    free(c->changes);
    free(c);
}

/* ------------------------------------------------------------------ growth (ac_join only) */

static int grow(void **array, size_t item, int32_t capacity)
{
    void *bigger = realloc(*array, item * (size_t)capacity);
    if (bigger == NULL)
        return 0;
    *array = bigger;
    return 1;
}

/* Room for one more job handle: every per-job array follows cap_jobs. */
static int reserve_job(ac_core *c)
{
    if (c->free_jobs >= 0 || c->n_jobs < c->cap_jobs)
        return 1;
    int32_t cap = c->cap_jobs > 0 ? 2 * c->cap_jobs : 16;
    if (!grow((void **)&c->jobs, sizeof(job_t), cap) || !grow((void **)&c->passing, sizeof(int32_t), cap) ||
        !grow((void **)&c->performers, sizeof(int32_t), cap) || !grow((void **)&c->fresh, sizeof(int32_t), cap) ||
        !grow((void **)&c->grants, sizeof(ac_notice), cap) || !grow((void **)&c->changes, sizeof(ac_notice), cap))
        return 0;
    c->cap_jobs = cap;
    return 1;
}

static int reserve_set(ac_core *c)
{
    if (c->free_sets >= 0 || c->n_sets < c->cap_sets)
        return 1;
    int32_t cap = c->cap_sets > 0 ? 2 * c->cap_sets : 8;
    if (!grow((void **)&c->sets, sizeof(set_t), cap) || !grow((void **)&c->dirty, sizeof(int32_t), cap))
        return 0;
    c->cap_sets = cap;
    return 1;
}

/* ------------------------------------------------------------------ set labels */

static uint32_t hash_label(int64_t label, int32_t cap)
{
    uint64_t x = (uint64_t)label * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(x >> 32) & (uint32_t)(cap - 1);
}

static int32_t find_label(const ac_core *c, int64_t label)
{
    if (c->cap_hash == 0)
        return -1;
    for (uint32_t i = hash_label(label, c->cap_hash);; i = (i + 1) & (uint32_t)(c->cap_hash - 1)) {
        if (c->slots[i] < 0)
            return -1;
        if (c->keys[i] == label)
            return c->slots[i];
    }
}

static void put_label(ac_core *c, int64_t label, int32_t slot)
{
    uint32_t i = hash_label(label, c->cap_hash);
    while (c->slots[i] >= 0)
        i = (i + 1) & (uint32_t)(c->cap_hash - 1);
    c->keys[i] = label;
    c->slots[i] = slot;
    c->n_hash++;
}

/* Keeps the table at most half full. */
static int reserve_label(ac_core *c)
{
    if (2 * (c->n_hash + 1) <= c->cap_hash)
        return 1;
    int32_t old_cap = c->cap_hash, cap = old_cap > 0 ? 2 * old_cap : 16;
    int64_t *old_keys = c->keys;
    int32_t *old_slots = c->slots;
    int64_t *keys = malloc(sizeof(int64_t) * (size_t)cap);
    int32_t *slots = malloc(sizeof(int32_t) * (size_t)cap);
    if (keys == NULL || slots == NULL) {
        free(keys);
        free(slots);
        return 0;
    }
    for (int32_t i = 0; i < cap; i++)
        slots[i] = -1;
    c->keys = keys;
    c->slots = slots;
    c->cap_hash = cap;
    c->n_hash = 0;
    for (int32_t i = 0; i < old_cap; i++)
        if (old_slots[i] >= 0)
            put_label(c, old_keys[i], old_slots[i]);
    free(old_keys);
    free(old_slots);
    return 1;
}

/* Removes `label` (present) with backward-shift deletion, so that no tombstone is left. */
static void drop_label(ac_core *c, int64_t label)
{
    uint32_t mask = (uint32_t)(c->cap_hash - 1);
    uint32_t i = hash_label(label, c->cap_hash);
    while (c->keys[i] != label || c->slots[i] < 0)
        i = (i + 1) & mask;
    for (uint32_t j = (i + 1) & mask; c->slots[j] >= 0; j = (j + 1) & mask) {
        uint32_t home = hash_label(c->keys[j], c->cap_hash);
        /* entry j may move to the hole i unless its home lies cyclically in (i, j] */
        if (((j - home) & mask) >= ((j - i) & mask)) {
            c->keys[i] = c->keys[j];
            c->slots[i] = c->slots[j];
            i = j;
        }
    }
    c->slots[i] = -1;
    c->n_hash--;
}

/* ------------------------------------------------------------------ join and leave */

static int32_t new_set(ac_core *c, int64_t label)
{
    int32_t s;
    int8_t dirty = 0;
    if (c->free_sets >= 0) {
        s = c->free_sets;
        c->free_sets = c->sets[s].head;
        dirty = c->sets[s].dirty;
    } else {
        s = c->n_sets++;
    }
    c->sets[s] = (set_t){label, -1, -1, -1, 0, dirty};
    if (label >= 0)
        put_label(c, label, s);
    return s;
}

static void release_set(ac_core *c, int32_t s)
{
    if (--c->sets[s].members > 0)
        return;
    if (c->sets[s].label >= 0)
        drop_label(c, c->sets[s].label);
    c->sets[s].head = c->free_sets;
    c->free_sets = s;
}

int ac_join(ac_core *c, int64_t set, double priority, int32_t *job)
{
    if (set < 0 || !(priority > 0) || !isfinite(priority))
        return AC_BAD_VALUE;
    int own_set = c->policy == AC_FAIR_SHARE || c->policy == AC_SHARE_PRIORITY;
    if (c->policy == AC_EXCLUSIVE_FCFS)
        set = 0;
    if (c->policy == AC_EXCLUSIVE_FCFS || c->policy == AC_FAIR_SHARE)
        priority = 1.0;
    if (!(c->bandwidth * priority >= DBL_MIN) || !isfinite(c->bandwidth * priority))
        return AC_BAD_VALUE; /* B p overflows or underflows: no rate to send */
    if (!reserve_job(c) || !reserve_set(c) || (!own_set && !reserve_label(c)))
        return AC_NO_MEMORY;
    int32_t s = own_set ? -1 : find_label(c, set);
    if (s < 0)
        s = new_set(c, own_set ? -1 : set);
    c->sets[s].members++;
    int32_t j;
    int8_t fresh = 0, listed = 0;
    if (c->free_jobs >= 0) {
        j = c->free_jobs;
        c->free_jobs = c->jobs[j].next;
        fresh = c->jobs[j].fresh;
        listed = c->jobs[j].listed;
    } else {
        j = c->n_jobs++;
    }
    c->jobs[j] = (job_t){priority, 0.0, s, -1, -1, -1, AC_IDLE, fresh, listed};
    c->joined++;
    *job = j;
    return AC_OK;
}

static int valid_job(const ac_core *c, int32_t job)
{
    return job >= 0 && job < c->n_jobs && c->jobs[job].state != FREE_SLOT;
}

static void mark(ac_core *c, int32_t s)
{
    if (!c->sets[s].dirty) {
        c->sets[s].dirty = 1;
        c->dirty[c->n_dirty++] = s;
    }
}

static void unlink_waiting(ac_core *c, int32_t j)
{
    job_t *job = &c->jobs[j];
    set_t *set = &c->sets[job->set];
    if (job->prev >= 0)
        c->jobs[job->prev].next = job->next;
    else
        set->head = job->next;
    if (job->next >= 0)
        c->jobs[job->next].prev = job->prev;
    else
        set->tail = job->prev;
    mark(c, job->set); /* the queue's head may have changed */
}

static void stop_performing(ac_core *c, int32_t j)
{
    job_t *job = &c->jobs[j];
    int32_t last = c->performers[--c->n_performers];
    c->performers[job->index] = last;
    c->jobs[last].index = job->index;
    c->sets[job->set].performer = -1;
    mark(c, job->set);
    c->sum = c->n_performers > 0 ? pair_add(c->sum, -job->priority) : (pair){0.0, 0.0};
}

/* Whatever the job holds or waits for, given up; it is idle after. */
static void give_up(ac_core *c, int32_t j)
{
    switch (c->jobs[j].state) {
    case AC_WAITING:
        unlink_waiting(c, j);
        break;
    case AC_PERFORMING:
        stop_performing(c, j);
        break;
    default:
        break;
    }
    c->jobs[j].state = AC_IDLE;
}

int ac_leave(ac_core *c, int32_t job)
{
    if (!valid_job(c, job))
        return AC_BAD_JOB;
    give_up(c, job); /* a pending zero-byte grant is skipped by ac_admit: the job is no longer passing */
    release_set(c, c->jobs[job].set);
    c->jobs[job].state = FREE_SLOT;
    c->jobs[job].next = c->free_jobs;
    c->free_jobs = job;
    c->joined--;
    return AC_OK;
}

/* ------------------------------------------------------------------ begin and end */

int ac_begin(ac_core *c, int32_t job, double bytes)
{
    if (!valid_job(c, job))
        return AC_BAD_JOB;
    job_t *jb = &c->jobs[job];
    if (jb->state != AC_IDLE)
        return AC_PHASE_OPEN;
    if (!(bytes >= 0) || !isfinite(bytes))
        return AC_BAD_VALUE;
    if (bytes == 0) {
        jb->state = AC_PASSING;
        if (!jb->listed) {
            jb->listed = 1;
            c->passing[c->n_passing++] = job;
        }
        return AC_OK;
    }
    set_t *set = &c->sets[jb->set];
    jb->state = AC_WAITING;
    jb->next = -1;
    jb->prev = set->tail;
    if (set->tail >= 0)
        c->jobs[set->tail].next = job;
    else
        set->head = job;
    set->tail = job;
    mark(c, jb->set);
    return AC_OK;
}

int ac_end(ac_core *c, int32_t job)
{
    if (!valid_job(c, job))
        return AC_BAD_JOB;
    if (c->jobs[job].state == AC_IDLE)
        return AC_NO_PHASE;
    give_up(c, job);
    return AC_OK;
}

/* ------------------------------------------------------------------ admission and rates */

static pair exact_sum(const ac_core *c)
{
    pair s = {0.0, 0.0};
    for (int32_t i = 0; i < c->n_performers; i++)
        s = pair_add(s, c->jobs[c->performers[i]].priority);
    return s;
}

static double rate_of(const ac_core *c, const job_t *job)
{
    return c->bandwidth * job->priority / c->sum.hi;
}

int32_t ac_admit(ac_core *c, const ac_notice **grants)
{
    int32_t n = 0;
    for (int32_t i = 0; i < c->n_dirty; i++) {
        int32_t s = c->dirty[i];
        set_t *set = &c->sets[s];
        set->dirty = 0;
        int32_t j = set->head;
        if (set->members == 0 || set->performer >= 0 || j < 0)
            continue; /* a released slot (its head links free slots), a busy set, an empty queue */
        job_t *job = &c->jobs[j];
        set->head = job->next;
        if (set->head >= 0)
            c->jobs[set->head].prev = -1;
        else
            set->tail = -1;
        set->performer = j;
        job->state = AC_PERFORMING;
        job->index = c->n_performers;
        c->performers[c->n_performers++] = j;
        c->sum = pair_add(c->sum, job->priority);
        if (++c->admissions >= RESUM_PERIOD) {
            c->sum = exact_sum(c);
            c->admissions = 0;
        }
        c->grants[n++] = (ac_notice){j, 0.0};
    }
    c->n_dirty = 0;
    for (int32_t i = 0; i < n; i++) { /* rates once every set admitted: they share one sum */
        job_t *job = &c->jobs[c->grants[i].job];
        job->rate = c->grants[i].rate = rate_of(c, job);
        if (!job->fresh) {
            job->fresh = 1;
            c->fresh[c->n_fresh++] = c->grants[i].job;
        }
    }
    for (int32_t i = 0; i < c->n_passing; i++) {
        int32_t j = c->passing[i];
        job_t *job = &c->jobs[j];
        job->listed = 0;
        if (job->state != AC_PASSING)
            continue; /* left or ended before its grant */
        /* the rate it would have, had it bytes to move: told, never counted */
        job->rate = c->bandwidth * job->priority / (c->sum.hi + job->priority);
        c->grants[n++] = (ac_notice){j, job->rate};
    }
    c->n_passing = 0;
    *grants = c->grants;
    return n;
}

int32_t ac_rates(ac_core *c, const ac_notice **changes)
{
    int32_t n = 0;
    if (!same_pair(c->sum, c->notified)) {
        for (int32_t i = 0; i < c->n_performers; i++) {
            job_t *job = &c->jobs[c->performers[i]];
            double rate = rate_of(c, job);
            if (rate != job->rate) {
                job->rate = rate;
                c->changes[n++] = (ac_notice){c->performers[i], rate};
            }
        }
        c->notified = c->sum;
    } else {
        /* the others' rates follow `notified`: only a job granted at another sum may differ */
        for (int32_t i = 0; i < c->n_fresh; i++) {
            job_t *job = &c->jobs[c->fresh[i]];
            if (job->state == AC_PERFORMING && rate_of(c, job) != job->rate) {
                job->rate = rate_of(c, job);
                c->changes[n++] = (ac_notice){c->fresh[i], job->rate};
            }
        }
    }
    for (int32_t i = 0; i < c->n_fresh; i++)
        c->jobs[c->fresh[i]].fresh = 0;
    c->n_fresh = 0;
    *changes = c->changes;
    return n;
}

/* ------------------------------------------------------------------ queries */

int ac_job_state(const ac_core *c, int32_t job)
{
    return job >= 0 && job < c->n_jobs ? c->jobs[job].state : FREE_SLOT;
}

double ac_job_rate(const ac_core *c, int32_t job)
{
    return valid_job(c, job) ? c->jobs[job].rate : 0.0;
}

int32_t ac_performing(const ac_core *c)
{
    return c->n_performers;
}

int32_t ac_joined(const ac_core *c)
{
    return c->joined;
}
