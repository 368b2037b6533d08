/* Phase-level IO-SETS engine (DESIGN.md, "Phase-level model").
 *
 * Jobs alternate compute phases (never slowed) and I/O phases. At most one
 * job per set performs I/O (FCFS inside a set, ties by job index); the
 * performing jobs share the bandwidth in proportion to their priorities.
 * Progress is exact: a generalized-processor-sharing virtual clock V grows at
 * B / sum(p) and a job admitted at V0 with b bytes ends when V = V0 + b / p.
 * Dates, V and sum(p) are kept in double-double (ddouble.h); V restarts at 0
 * with each busy period of the file system.
 */
#ifndef IOSETS_PHASE_ENGINE_H
#define IOSETS_PHASE_ENGINE_H

#include <stdint.h>

#include "interrupt.h"

enum {
    PE_OK = 0,
    PE_NOMEM = 1,
    PE_BAD_RELEASE = 2,   /* index = job */
    PE_BAD_PRIORITY = 3,  /* index = job */
    PE_BAD_PHASES = 4,    /* index = job (phase offsets not increasing) */
    PE_BAD_CPU = 5,       /* index = phase */
    PE_BAD_BYTES = 6,     /* index = phase */
    PE_BAD_BANDWIDTH = 7,
    PE_BAD_WINDOW = 8,
    PE_INTERRUPTED = 9,   /* the hook asked to stop */
    PE_OVERFLOW = 10,     /* index = a job whose dates overflow: it never finished */
    PE_BAD_RATE = 11,     /* index = job: bandwidth * priority or its inverse not finite */
};

typedef struct {
    int32_t n_jobs;
    const double *release;    /* [n_jobs] first compute phase starts here */
    const int64_t *set;       /* [n_jobs] set label, any integer */
    const double *priority;   /* [n_jobs] > 0; bandwidth * priority and its inverse finite */
    const int64_t *phase_ptr; /* [n_jobs + 1] job j owns phases [ptr[j], ptr[j+1]) */
    const double *t_cpu;      /* [n_phases] seconds */
    const double *io_bytes;   /* [n_phases] bytes */
    double bandwidth;         /* bytes per second */
    double window[2];         /* [T_begin, T_end] of the metrics */
    interrupt_hook interrupt; /* asked every INTERRUPT_EVERY event dates */
} pe_input;

/* The metrics of DESIGN.md over the window; NaN where undefined. */
typedef struct {
    double utilization, io_slowdown, max_stretch;
} pe_metrics;

typedef struct {
    double *cpu_start, *cpu_end, *io_start, *io_end;  /* [n_phases] */
    int64_t n_events;
    pe_metrics metrics;
} pe_output;

/* Runs the workload to completion and measures it. Returns PE_OK or an error
 * code, with the offending job or phase index in *bad_index; the outputs are
 * complete only with PE_OK. */
int pe_run(const pe_input *in, pe_output *out, int64_t *bad_index);

/* A replayed timeline, from this engine or another one. remaining[w] holds the
 * bytes left at window[w] of each phase performing then (io_start < window[w]
 * < io_end); other entries are not read, and NaN counts as 0. */
typedef struct {
    int32_t n_jobs;
    const int64_t *phase_ptr;
    const double *io_bytes;
    const double *cpu_start, *cpu_end, *io_start, *io_end;
    const double *remaining[2];
    double bandwidth;
    double window[2];
} pe_timeline;

/* Utilization, IO-slowdown and Max Stretch of a timeline (phase_metrics.c). */
pe_metrics pe_window_metrics(const pe_timeline *t);

#endif
