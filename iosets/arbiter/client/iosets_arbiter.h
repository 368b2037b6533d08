/* iosets_arbiter: the C client of the IO-SETS arbiter (wire protocol v1, docs/guides/arbiter.md).
 *
 * A job tells the arbiter when each I/O phase begins and ends; the arbiter admits at most one
 * job per set at a time and gives each performing job its share of the bandwidth, which the
 * job's processes split. Plain C (POSIX), usable from Fortran through bind(C): every argument
 * is a pointer, an int, a double or a size_t, strings end in a NUL (c_null_char).
 *
 *     iosets_arbiter *a = iosets_arbiter_open("unix:/run/iosets.sock", "job42", 1, 0.1, 0);
 *     for (each I/O phase) {
 *         iosets_arbiter_begin(a, bytes);           // blocks until the arbiter admits the phase
 *         for (each request) { write(...); iosets_arbiter_pace(a, request_bytes); }
 *         iosets_arbiter_end(a);
 *     }
 *     iosets_arbiter_close(a);
 *
 * The arbiter never holds a job longer than the timeout: when it is dead, unreachable or slow,
 * begin returns 0 (the phase runs unscheduled: pace does nothing), one line on stderr says so,
 * and the next begin connects again (an arbiter restart is survived that way).
 */
#ifndef IOSETS_ARBITER_H
#define IOSETS_ARBITER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct iosets_arbiter iosets_arbiter;

/* Connect job `job_id` ([A-Za-z0-9_.-]{1,64}) of set `set` (>= 0) and priority `priority`
 * (finite, > 0) to the arbiter at `address`, "unix:PATH" or "tcp:HOST:PORT".
 * `timeout_s` bounds each wait (connection and HELLO, then each grant) in seconds; <= 0 gives
 * the protocol's defaults, 5 s to connect and 30 s for a grant.
 * Returns NULL (and says why on stderr) only for bad arguments or no memory: an arbiter that
 * cannot be reached still gives a handle, whose phases run unscheduled until it answers. */
iosets_arbiter *iosets_arbiter_open(const char *address, const char *job_id, int set, double priority,
                                    double timeout_s);

/* Ask to start an I/O phase of `bytes` bytes and block until the arbiter grants it.
 * Returns the granted rate (bytes/s, the job's share of the bandwidth), or 0 when the phase
 * runs unscheduled (arbiter dead, unreachable, or no grant within the timeout: one stderr line
 * per outage; the next begin tries to connect again). A phase still open is ended first. */
double iosets_arbiter_begin(iosets_arbiter *a, double bytes);

/* The job's current rate (bytes/s): the grant, updated by the RATE lines the arbiter sent since
 * (read without blocking). 0 outside a phase or when unscheduled. */
double iosets_arbiter_rate(iosets_arbiter *a);

/* Sleep so that the bytes moved since the grant follow the job's current rate: call it after
 * moving `nbytes` bytes. A rate change during the sleep re-times the bytes still owed; a lag (the
 * storage slower than the rate for a while) is made up: the pacer caps the bytes moved since the
 * grant at what the rate allows, not each request's speed. Does nothing when the phase runs
 * unscheduled. */
void iosets_arbiter_pace(iosets_arbiter *a, size_t nbytes);

/* The I/O phase ended: the arbiter admits the next job of the set. */
void iosets_arbiter_end(iosets_arbiter *a);

/* Leave the arbiter (an open phase ends) and free the handle; NULL is allowed. */
void iosets_arbiter_close(iosets_arbiter *a);

/* The pacer behind iosets_arbiter_pace, for a process that learns its rate another way (a job's
 * other processes, told the job's rate by the one holding the connection).
 * Start it when the phase is granted; after moving n bytes, iosets_pacer_wait sleeps until the bytes
 * counted since the start are due at the rate `rate_of(ctx)` returns (asked again every millisecond
 * while sleeping; a change re-times the bytes still owed). It never lets the bytes run ahead of the
 * rate and lets a lag be made up. A rate <= 0 means unpaced: no sleep, no debt. */
typedef struct {
    double due;  /* CLOCK_MONOTONIC date (s) by which the bytes counted so far are due */
    double rate; /* the rate (bytes/s) `due` was computed with */
} iosets_pacer;

void iosets_pacer_start(iosets_pacer *p);
void iosets_pacer_wait(iosets_pacer *p, size_t nbytes, double (*rate_of)(void *ctx), void *ctx);

#ifdef __cplusplus
}
#endif

#endif
