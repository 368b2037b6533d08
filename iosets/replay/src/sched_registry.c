/* The schedulers the request engine knows, by name. */
#include <string.h>

#include "request_engine.h"

extern const re_sched_ops sched_fcfs, sched_time_order, sched_wfq, sched_iosets_wfq;
extern const re_sched_ops sched_fairio, sched_aioli;
extern const re_sched_ops sched_rbfq;

static const re_sched_ops *const SCHEDULERS[] = {
    &sched_fcfs, &sched_time_order, &sched_wfq, &sched_iosets_wfq,
    &sched_fairio, &sched_aioli,
    &sched_rbfq,
};

const re_sched_ops *re_find_scheduler(const char *name)
{
    for (size_t i = 0; i < sizeof(SCHEDULERS) / sizeof(SCHEDULERS[0]); i++)
        if (strcmp(SCHEDULERS[i]->name, name) == 0)
            return SCHEDULERS[i];
    return NULL;
}
