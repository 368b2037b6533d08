/* Window metrics of a phase-level timeline (DESIGN.md, "Phase-level model";
 * the IO-SETS paper, section V-D). Sums run in phase order, job by job. */
#include <math.h>

#include "phase_engine.h"

/* What one job did inside the window. */
typedef struct {
    double e_cpu;  /* compute seconds inside the window */
    double e_io;   /* isolated I/O seconds of the bytes moved inside the window */
    double e_iter; /* I/O phases ending inside the window */
    double t_io;   /* mean isolated I/O time of the job's phases */
} job_usage;

/* Bytes of phase k moved before the window date w. */
static double moved_before(const pe_timeline *t, int64_t k, int w)
{
    double date = t->window[w];
    if (t->io_start[k] < date && t->io_end[k] > date) {
        double left = t->remaining[w][k];
        return t->io_bytes[k] - (isnan(left) ? 0.0 : left);
    }
    return t->io_end[k] <= date ? t->io_bytes[k] : 0.0;
}

static job_usage usage_of(const pe_timeline *t, int32_t job)
{
    double tb = t->window[0], te = t->window[1];
    job_usage u = {0.0, 0.0, 0.0, 0.0};
    double bytes = 0.0;
    for (int64_t k = t->phase_ptr[job]; k < t->phase_ptr[job + 1]; k++) {
        double end = t->cpu_end[k] < te ? t->cpu_end[k] : te;
        double start = t->cpu_start[k] > tb ? t->cpu_start[k] : tb;
        u.e_cpu += end > start ? end - start : 0.0;
        u.e_io += (moved_before(t, k, 1) - moved_before(t, k, 0)) / t->bandwidth;
        u.e_iter += t->io_end[k] >= tb && t->io_end[k] <= te;
        bytes += t->io_bytes[k];
    }
    int64_t n = t->phase_ptr[job + 1] - t->phase_ptr[job];
    u.t_io = bytes / (double)(n > 0 ? n : 1) / t->bandwidth;
    return u;
}

/* Utilization = sum e_cpu / (N width); IO-slowdown = geometric mean over jobs with
 * e_iter > 0 (and T_io > 0) of (width - e_cpu) / (T_io e_iter); Max Stretch = max
 * over jobs with work inside of width / (e_cpu + e_io). NaN where no job counts. */
pe_metrics pe_window_metrics(const pe_timeline *t)
{
    double width = t->window[1] - t->window[0];
    double cpu_total = 0.0, log_sum = 0.0, stretch = -INFINITY;
    int64_t n_ratios = 0;
    for (int32_t j = 0; j < t->n_jobs; j++) {
        job_usage u = usage_of(t, j);
        cpu_total += u.e_cpu;
        if (u.e_iter > 0 && u.t_io > 0) {
            log_sum += log((width - u.e_cpu) / (u.t_io * u.e_iter)); /* -inf for a job computing throughout */
            n_ratios++;
        }
        double work = u.e_cpu + u.e_io;
        if (work > 0 && width / work > stretch)
            stretch = width / work;
    }
    return (pe_metrics){
        .utilization = t->n_jobs > 0 ? cpu_total / ((double)t->n_jobs * width) : NAN,
        .io_slowdown = n_ratios > 0 ? exp(log_sum / (double)n_ratios) : NAN,
        .max_stretch = stretch > -INFINITY ? stretch : NAN,
    };
}
