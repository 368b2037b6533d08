/* Phase-level IO-SETS engine (DESIGN.md, "Phase-level model").
 *
 * Jobs alternate compute phases (never slowed) and I/O phases. At most one
 * job per set performs I/O (FCFS inside a set, ties by job index); the
 * performing jobs share the bandwidth in proportion to their priorities.
 * Progress is exact: a generalized-processor-sharing virtual clock V grows at
 * B / sum(p) and a job admitted at V0 with b bytes ends when V = V0 + b / p.
 */
#ifndef IOSETS_PHASE_ENGINE_H
#define IOSETS_PHASE_ENGINE_H

#include <stdint.h>

enum {
    PE_OK = 0,
    PE_NOMEM = 1,
    PE_BAD_RELEASE = 2,   /* index = job */
    PE_BAD_SET = 3,       /* index = job */
    PE_BAD_PRIORITY = 4,  /* index = job */
    PE_BAD_PHASES = 5,    /* index = job (phase offsets not increasing) */
    PE_BAD_CPU = 6,       /* index = phase */
    PE_BAD_BYTES = 7,     /* index = phase */
    PE_BAD_BANDWIDTH = 8,
};

#define PE_N_PROBES 2

typedef struct {
    int32_t n_jobs;
    int32_t n_sets;
    const double *release;    /* [n_jobs] first compute phase starts here */
    const int32_t *set;       /* [n_jobs] dense set index in [0, n_sets) */
    const double *priority;   /* [n_jobs] > 0 */
    const int64_t *phase_ptr; /* [n_jobs + 1] job j owns phases [ptr[j], ptr[j+1]) */
    const double *t_cpu;      /* [n_phases] seconds */
    const double *io_bytes;   /* [n_phases] bytes */
    double bandwidth;         /* bytes per second */
    double probe[PE_N_PROBES];/* dates at which performing phases report their remaining bytes */
} pe_input;

typedef struct {
    double *cpu_start, *cpu_end, *io_start, *io_end;  /* [n_phases] */
    double *remaining[PE_N_PROBES]; /* [n_phases], written only for phases performing at the probe */
    int64_t n_events;
} pe_output;

/* Runs the workload to completion. Returns PE_OK or an error code, with the
 * offending job or phase index in *bad_index. */
int pe_run(const pe_input *in, pe_output *out, int64_t *bad_index);

#endif
