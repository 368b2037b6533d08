/* Admission core of the IO-SETS arbiter: plain C, no I/O, no clock.
 *
 * The phase engine's rules (docs/explanation/models.md), event by event: jobs join with a
 * set and a priority (which the policy may override); among the jobs that asked to begin
 * an I/O phase, at most one job per set performs, FCFS within a set by BEGIN order; the
 * performing jobs share the bandwidth B in proportion to their priorities (rate
 * B p_i / sum of p over the performing jobs). A zero-byte phase is granted at once,
 * outside its set, as the phase engine completes it at its request.
 *
 * Operations (begin, end, leave) only change queues and mark sets; ac_admit then lets
 * each marked free set admit its FCFS head and reports the grants; ac_rates reports the
 * performing jobs whose rate changed since it last ran. A caller applies a batch of
 * simultaneous events as: ends and leaves, then begins, then ac_admit, then ac_rates.
 * Every operation is O(1) (the set of a label is a hash look-up); ac_rates is O(1) when
 * sum p did not change, else O(performing jobs). Memory grows only in ac_join. */
#ifndef IOSETS_ARBITER_CORE_H
#define IOSETS_ARBITER_CORE_H

#include <stdint.h>

typedef enum {
    AC_SET_10,         /* the set and priority the job sends */
    AC_EXCLUSIVE_FCFS, /* every job in set 0, priority 1 */
    AC_FAIR_SHARE,     /* a set per job, priority 1 */
    AC_SHARE_PRIORITY, /* a set per job, the priority the job sends */
    AC_N_POLICIES
} ac_policy;

typedef enum {
    AC_OK = 0,
    AC_NO_MEMORY,  /* ac_join could not grow its tables */
    AC_PHASE_OPEN, /* ac_begin: the job already waits or performs */
    AC_NO_PHASE,   /* ac_end: the job has no phase open */
    AC_BAD_JOB,    /* not a joined job */
    AC_BAD_VALUE,  /* a set < 0, a priority or byte count not finite and > 0 (>= 0 for bytes) */
} ac_status;

typedef enum { AC_IDLE = 1, AC_WAITING, AC_PERFORMING, AC_PASSING } ac_state;

/* A job and the rate it was granted (ac_admit) or changed to (ac_rates). */
typedef struct {
    int32_t job;
    double rate;
} ac_notice;

typedef struct ac_core ac_core;

/* A core for `policy` with bandwidth B (finite, > 0); NULL when out of memory. */
ac_core *ac_create(ac_policy policy, double bandwidth);
void ac_destroy(ac_core *c);

/* A new idle job of set label `set` (>= 0) and `priority` (finite, > 0, and B p a normal
 * double), as the policy counts them; its handle in *job. The only operation that allocates
 * (amortised). */
int ac_join(ac_core *c, int64_t set, double priority, int32_t *job);
/* The job asks to begin an I/O phase of `bytes` (finite, >= 0): it waits in its set's queue. */
int ac_begin(ac_core *c, int32_t job, double bytes);
/* The job's phase ended (performing or granted a zero-byte phase), or it withdraws its request
 * (waiting). */
int ac_end(ac_core *c, int32_t job);
/* The job leaves (a disconnect): its set or its place in the queue is freed; the handle is reused. */
int ac_leave(ac_core *c, int32_t job);

/* Each marked free set admits its FCFS head; zero-byte phases are granted. Returns the count
 * of grants, and in *grants the jobs with their rate (valid until the next call). */
int32_t ac_admit(ac_core *c, const ac_notice **grants);
/* The performing jobs whose rate changed since the last call, with their new rate (a job
 * granted since then is listed only if its rate is no longer its grant's). */
int32_t ac_rates(ac_core *c, const ac_notice **changes);

/* The job's state (an ac_state, 0 for a free handle) and the rate last reported to it. */
int ac_job_state(const ac_core *c, int32_t job);
double ac_job_rate(const ac_core *c, int32_t job);
/* Jobs that perform now, and jobs joined. */
int32_t ac_performing(const ac_core *c);
int32_t ac_joined(const ac_core *c);

#endif
