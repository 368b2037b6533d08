/* The schedulers the request engine knows, by name, and their parameters.
 *
 * Adding a scheduler: write sched_<name>.c, which defines
 *     const re_sched_ops sched_<name> = {.name = "<name>", .params = ..., ...};
 * with its parameters declared next to it (a re_param array: name, default,
 * one-line doc and allowed range, see request_engine.h), then add one line
 * X(sched_<name>) to REGISTERED below. Python reads the names, parameters and
 * defaults from the engine (_engine.scheduler_params), in this order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request_engine.h"

#define REGISTERED(X)   \
    X(sched_fcfs)       \
    X(sched_time_order) \
    X(sched_wfq)        \
    X(sched_iosets_wfq) \
    X(sched_rbfq)       \
    X(sched_fairio)     \
    X(sched_aioli)

#define DECLARE(ops) extern const re_sched_ops ops;
REGISTERED(DECLARE)
#undef DECLARE

#define ADDRESS(ops) &ops,
static const re_sched_ops *const SCHEDULERS[] = {REGISTERED(ADDRESS)};
#undef ADDRESS

int32_t re_n_schedulers(void)
{
    return (int32_t)(sizeof(SCHEDULERS) / sizeof(SCHEDULERS[0]));
}

const re_sched_ops *re_scheduler_at(int32_t i)
{
    return i >= 0 && i < re_n_schedulers() ? SCHEDULERS[i] : NULL;
}

const re_sched_ops *re_find_scheduler(const char *name)
{
    for (int32_t i = 0; i < re_n_schedulers(); i++)
        if (strcmp(SCHEDULERS[i]->name, name) == 0)
            return SCHEDULERS[i];
    return NULL;
}

static int allowed(const re_param *p, double v)
{
    if (!isfinite(v) || v > p->max || v < p->min || (p->min_open && v == p->min))
        return 0;
    return !p->integer || v == floor(v);
}

int32_t re_check_params(const re_sched_ops *ops, const double *param)
{
    for (int32_t i = 0; i < ops->n_params; i++)
        if (!allowed(&ops->params[i], param[i]))
            return i;
    return -1;
}

/* The shortest of %.15g and %.17g that reads back as `v`. */
static void format_number(double v, char *buf, size_t size)
{
    snprintf(buf, size, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, size, "%.17g", v);
}

void re_param_rule(const re_param *p, char *buf, size_t size)
{
    char lo[32], hi[32];
    format_number(p->min, lo, sizeof(lo));
    format_number(p->max, hi, sizeof(hi));
    if (!isfinite(p->min) && !isfinite(p->max))
        snprintf(buf, size, "finite");
    else if (p->integer && p->min == 0 && p->max == 1)
        snprintf(buf, size, "0 or 1");
    else if (p->integer)
        snprintf(buf, size, "an integer in [%s, %s]", lo, hi);
    else if (isfinite(p->max))
        snprintf(buf, size, "in %s%s, %s]", p->min_open ? "(" : "[", lo, hi);
    else
        snprintf(buf, size, "%s %s", p->min_open ? ">" : ">=", lo);
}

void re_param_error(const re_sched_ops *ops, int32_t index, double value, char *buf, size_t size)
{
    char rule[96], got[32];
    re_param_rule(&ops->params[index], rule, sizeof(rule));
    format_number(value, got, sizeof(got));
    snprintf(buf, size, "%s: %s must be %s, got %s", ops->name, ops->params[index].name, rule, got);
}
