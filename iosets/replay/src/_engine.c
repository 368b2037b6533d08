/* Python glue for the replay engines: the only file that includes Python.h.
 * Arrays cross as C-contiguous buffers; the Python side checks dtypes and
 * preallocates outputs, errors come back as iosets.errors.ReplayError. The
 * engines run without the GIL and take it back every INTERRUPT_EVERY units of
 * work to check for signals: Ctrl-C stops them within milliseconds with the
 * pending exception (KeyboardInterrupt), every buffer released. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

#include "chain_gates.h"
#include "phase_engine.h"
#include "request_engine.h"

static PyObject *ReplayError;

typedef struct {
    Py_buffer view;
    int held;
} buffer;

static void release_all(buffer *bufs, int n)
{
    for (int i = 0; i < n; i++)
        if (bufs[i].held) {
            PyBuffer_Release(&bufs[i].view);
            bufs[i].held = 0;
        }
}

/* Gets a contiguous buffer of `count` items whose format is `fmt`. */
static int get_buffer(PyObject *obj, buffer *b, const char *name, const char *fmt,
                      Py_ssize_t itemsize, Py_ssize_t count, int writable)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &b->view, flags) < 0)
        return -1;
    b->held = 1;
    const char *f = b->view.format ? b->view.format : "B";
    if (f[0] == '<' || f[0] == '=' || f[0] == '@')
        f++;
    int fmt_ok = strcmp(f, fmt) == 0 || (fmt[0] == 'q' && strcmp(f, "l") == 0 && sizeof(long) == 8);
    if (!fmt_ok || b->view.itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s: expected items of format '%s', got '%s'", name, fmt, f);
        return -1;
    }
    if (count >= 0 && b->view.len / itemsize != count) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items, got %zd", name, count,
                     b->view.len / itemsize);
        return -1;
    }
    return 0;
}

/* The engines' interrupt hook: takes the GIL back, runs the pending signal handlers
 * (a KeyboardInterrupt stays pending) and releases it; `arg` holds the thread state. */
static int signals_pending(void *arg)
{
    PyThreadState **thread = arg;
    PyEval_RestoreThread(*thread);
    int pending = PyErr_CheckSignals() < 0;
    *thread = PyEval_SaveThread();
    return pending;
}

static const char *phase_error_text(int rc)
{
    switch (rc) {
    case PE_BAD_RELEASE: return "release must be finite and >= 0 (job %lld)";
    case PE_BAD_PRIORITY: return "priority must be finite and > 0 (job %lld)";
    case PE_BAD_RATE: return "bandwidth * priority and its inverse must be finite and > 0 (job %lld)";
    case PE_OVERFLOW:
        return "job %lld never finished: its dates overflow (release + t_cpu + io_bytes / (bandwidth * priority) "
               "beyond the largest double)";
    case PE_BAD_PHASES: return "phase offsets must not decrease (job %lld)";
    case PE_BAD_CPU: return "t_cpu must be finite and >= 0 (phase %lld)";
    case PE_BAD_BYTES: return "io_bytes must be finite and >= 0 (phase %lld)";
    case PE_BAD_BANDWIDTH: return "bandwidth must be finite and > 0";
    case PE_BAD_WINDOW: return "window must be finite with T_begin < T_end";
    default: return "replay failed (code %lld)";
    }
}

/* Raises ReplayError(message, index). */
static PyObject *raise_message(PyObject *message, int64_t index)
{
    PyObject *exc = PyObject_CallFunction(ReplayError, "OL", message, (long long)index);
    if (exc != NULL) {
        PyErr_SetObject(ReplayError, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* Raises ReplayError(message, index); `format` takes the index as %lld. */
static PyObject *raise_error(const char *format, int64_t index)
{
    PyObject *message = PyUnicode_FromFormat(format, (long long)index);
    if (message == NULL)
        return NULL;
    raise_message(message, index);
    Py_DECREF(message);
    return NULL;
}

/* ReplayError(text, -1): a parameter error (naming the scheduler) or an overflow. */
static PyObject *raise_unindexed(const char *text)
{
    PyObject *message = PyUnicode_FromString(text);
    if (message == NULL)
        return NULL;
    raise_message(message, -1);
    Py_DECREF(message);
    return NULL;
}

static PyObject *metrics_tuple(pe_metrics m)
{
    return Py_BuildValue("(ddd)", m.utilization, m.io_slowdown, m.max_stretch);
}

/* Gets the four timeline arrays of n_phases float64 items, writable or not, into b[0..3]. */
static int get_timeline(PyObject *const *objs, buffer *b, Py_ssize_t n_phases, int writable)
{
    static const char *names[] = {"cpu_start", "cpu_end", "io_start", "io_end"};
    for (int i = 0; i < 4; i++)
        if (get_buffer(objs[i], &b[i], names[i], "d", 8, n_phases, writable) < 0)
            return -1;
    return 0;
}

/* Gets phase_ptr (int64, n_jobs + 1 offsets from 0) into b; returns n_phases or -1. */
static Py_ssize_t get_phase_ptr(PyObject *obj, buffer *b, Py_ssize_t n_jobs)
{
    if (get_buffer(obj, b, "phase_ptr", "q", 8, n_jobs < 0 ? -1 : n_jobs + 1, 0) < 0)
        return -1;
    const int64_t *ptr = b->view.buf;
    Py_ssize_t n = b->view.len / 8;
    if (n < 1 || ptr[0] != 0 || ptr[n - 1] < 0) {
        PyErr_SetString(PyExc_ValueError, "phase_ptr must start at 0 and hold n_jobs + 1 offsets");
        return -1;
    }
    return (Py_ssize_t)ptr[n - 1];
}

PyDoc_STRVAR(replay_phases_doc,
"replay_phases(release, sets, priority, phase_ptr, t_cpu, io_bytes, bandwidth, window,\n"
"              cpu_start, cpu_end, io_start, io_end, /)\n"
"--\n\n"
"Replay a phase-level workload in the IO-SETS engine and measure it over a window.\n\n"
"Parameters\n----------\n"
"release, priority : float64 arrays of n_jobs\n"
"sets : int64 array of n_jobs set labels (any integers)\n"
"phase_ptr : int64 array of n_jobs + 1 phase offsets, from 0 to n_phases\n"
"t_cpu, io_bytes : float64 arrays of n_phases\n"
"bandwidth : float\n"
"window : tuple (T_begin, T_end)\n"
"cpu_start, cpu_end, io_start, io_end : float64 output arrays of n_phases\n\n"
"Returns\n-------\ntuple\n"
"    (n_events, utilization, io_slowdown, max_stretch): compute and I/O completions\n"
"    processed, and the window metrics (NaN where undefined).\n");

static PyObject *py_replay_phases(PyObject *self, PyObject *args)
{
    PyObject *objs[10];
    pe_input in = {0};
    if (!PyArg_ParseTuple(args, "OOOOOOd(dd)OOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &in.bandwidth, &in.window[0], &in.window[1], &objs[6], &objs[7], &objs[8], &objs[9]))
        return NULL;
    enum { N_BUF = 10 };
    buffer b[N_BUF];
    memset(b, 0, sizeof(b));
    if (get_buffer(objs[0], &b[0], "release", "d", 8, -1, 0) < 0)
        goto fail;
    Py_ssize_t n_jobs = b[0].view.len / 8;
    if (n_jobs > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many jobs");
        goto fail;
    }
    Py_ssize_t n_phases;
    if (get_buffer(objs[1], &b[1], "sets", "q", 8, n_jobs, 0) < 0 ||
        get_buffer(objs[2], &b[2], "priority", "d", 8, n_jobs, 0) < 0 ||
        (n_phases = get_phase_ptr(objs[3], &b[3], n_jobs)) < 0 ||
        get_buffer(objs[4], &b[4], "t_cpu", "d", 8, n_phases, 0) < 0 ||
        get_buffer(objs[5], &b[5], "io_bytes", "d", 8, n_phases, 0) < 0 ||
        get_timeline(&objs[6], &b[6], n_phases, 1) < 0)
        goto fail;
    in.n_jobs = (int32_t)n_jobs;
    in.release = b[0].view.buf;
    in.set = b[1].view.buf;
    in.priority = b[2].view.buf;
    in.phase_ptr = b[3].view.buf;
    in.t_cpu = b[4].view.buf;
    in.io_bytes = b[5].view.buf;
    pe_output out = {
        .cpu_start = b[6].view.buf, .cpu_end = b[7].view.buf,
        .io_start = b[8].view.buf, .io_end = b[9].view.buf,
    };
    int64_t bad = -1;
    PyThreadState *thread = PyEval_SaveThread();
    in.interrupt = (interrupt_hook){signals_pending, &thread};
    int rc = pe_run(&in, &out, &bad);
    PyEval_RestoreThread(thread);
    release_all(b, N_BUF);
    if (rc == PE_INTERRUPTED)
        return NULL;
    if (rc == PE_NOMEM)
        return PyErr_NoMemory();
    if (rc != PE_OK)
        return raise_error(phase_error_text(rc), bad);
    return Py_BuildValue("(Lddd)", (long long)out.n_events, out.metrics.utilization, out.metrics.io_slowdown,
                         out.metrics.max_stretch);
fail:
    release_all(b, N_BUF);
    return NULL;
}

PyDoc_STRVAR(phase_metrics_doc,
"phase_metrics(phase_ptr, io_bytes, cpu_start, cpu_end, io_start, io_end, remaining_begin,\n"
"              remaining_end, bandwidth, window, /)\n"
"--\n\n"
"Utilization, IO-slowdown and Max Stretch of a phase timeline over a window.\n\n"
"Parameters\n----------\n"
"phase_ptr : int64 array of n_jobs + 1 phase offsets, from 0 to n_phases\n"
"io_bytes, cpu_start, cpu_end, io_start, io_end : float64 arrays of n_phases\n"
"remaining_begin, remaining_end : float64 arrays of n_phases\n"
"    Bytes left at T_begin and T_end of each phase performing then (NaN counts as 0).\n"
"bandwidth : float\n"
"window : tuple (T_begin, T_end)\n\n"
"Returns\n-------\ntuple\n    (utilization, io_slowdown, max_stretch), NaN where undefined.\n");

static PyObject *py_phase_metrics(PyObject *self, PyObject *args)
{
    PyObject *objs[8];
    pe_timeline t = {0};
    if (!PyArg_ParseTuple(args, "OOOOOOOOd(dd)", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &t.bandwidth, &t.window[0], &t.window[1]))
        return NULL;
    enum { N_BUF = 8 };
    buffer b[N_BUF];
    memset(b, 0, sizeof(b));
    Py_ssize_t n_phases = get_phase_ptr(objs[0], &b[0], -1);
    if (n_phases < 0 || get_buffer(objs[1], &b[1], "io_bytes", "d", 8, n_phases, 0) < 0 ||
        get_timeline(&objs[2], &b[2], n_phases, 0) < 0 ||
        get_buffer(objs[6], &b[6], "remaining_begin", "d", 8, n_phases, 0) < 0 ||
        get_buffer(objs[7], &b[7], "remaining_end", "d", 8, n_phases, 0) < 0)
        goto fail;
    const int64_t *ptr = b[0].view.buf;
    t.n_jobs = (int32_t)(b[0].view.len / 8 - 1);
    for (int32_t j = 0; j < t.n_jobs; j++)
        if (ptr[j + 1] < ptr[j]) {
            PyErr_Format(PyExc_ValueError, "phase offsets must not decrease (job %d)", (int)j);
            goto fail;
        }
    t.phase_ptr = ptr;
    t.io_bytes = b[1].view.buf;
    t.cpu_start = b[2].view.buf;
    t.cpu_end = b[3].view.buf;
    t.io_start = b[4].view.buf;
    t.io_end = b[5].view.buf;
    t.remaining[0] = b[6].view.buf;
    t.remaining[1] = b[7].view.buf;
    pe_metrics m = pe_window_metrics(&t);
    release_all(b, N_BUF);
    return metrics_tuple(m);
fail:
    release_all(b, N_BUF);
    return NULL;
}

static const char *request_error_text(int rc)
{
    switch (rc) {
    case RE_BAD_ARRIVAL: return "arrival dates must be finite and sorted (request %lld)";
    case RE_BAD_SIZE: return "size must be >= 0 and < 2^63 (request %lld)";
    case RE_BAD_ID: return "class, stream, server or phase id out of range (request %lld)";
    case RE_BAD_DEVICE: return "device: queue_depth >= 1, bandwidth > 0, overhead, seek and iops >= 0, all finite";
    case RE_BAD_WEIGHT: return "weight must be finite and > 0 (class %lld)";
    case RE_BAD_RESERVATION: return "reservation must be finite and >= 0 (class %lld)";
    case RE_BAD_LIMIT: return "limit must be finite and >= 0 (class %lld)";
    case RE_BAD_GATE:
        return "a request needs a phase, a gate of -1 or an earlier request of its phase, and a finite think "
               "time >= 0 (request %lld)";
    case RE_BAD_CHAIN:
        return "a phase needs a request, a prev of -1 or an earlier phase of its job, and a finite gap, >= 0 "
               "after a prev (phase %lld)";
    default: return "replay failed (code %lld)";
    }
}

/* Gets size, offset, cls, stream, server, phase, op (n items each) into b[0..6]. */
static int get_request_arrays(PyObject *const *objs, buffer *b, Py_ssize_t n)
{
    return get_buffer(objs[0], &b[0], "size", "d", 8, n, 0) < 0 ||
                   get_buffer(objs[1], &b[1], "offset", "q", 8, n, 0) < 0 ||
                   get_buffer(objs[2], &b[2], "cls", "i", 4, n, 0) < 0 ||
                   get_buffer(objs[3], &b[3], "stream", "i", 4, n, 0) < 0 ||
                   get_buffer(objs[4], &b[4], "server", "i", 4, n, 0) < 0 ||
                   get_buffer(objs[5], &b[5], "phase", "i", 4, n, 0) < 0 ||
                   get_buffer(objs[6], &b[6], "op", "b", 1, n, 0) < 0
               ? -1
               : 0;
}

/* Gets weight, reservation, limit (n_classes items each) and the scheduler's params into b[0..3]. */
static int get_class_arrays(PyObject *const *objs, buffer *b, const re_sched_ops *ops, int n_classes)
{
    if (get_buffer(objs[0], &b[0], "weight", "d", 8, n_classes, 0) < 0 ||
        get_buffer(objs[1], &b[1], "reservation", "d", 8, n_classes, 0) < 0 ||
        get_buffer(objs[2], &b[2], "limit", "d", 8, n_classes, 0) < 0 ||
        get_buffer(objs[3], &b[3], "params", "d", 8, -1, 0) < 0)
        return -1;
    if (b[3].view.len / 8 != ops->n_params) {
        PyErr_Format(PyExc_ValueError, "%s: expected %d parameters, got %zd", ops->name, (int)ops->n_params,
                     b[3].view.len / 8);
        return -1;
    }
    return 0;
}

/* The requests of b[0..6] (get_request_arrays) with the given arrival dates and counts. */
static re_requests request_arrays(const buffer *b, Py_ssize_t n, const double *arrival, const int *counts)
{
    return (re_requests){
        .n = n, .arrival = arrival, .size = b[0].view.buf, .offset = b[1].view.buf, .cls = b[2].view.buf,
        .stream = b[3].view.buf, .server = b[4].view.buf, .phase = b[5].view.buf, .op = b[6].view.buf,
        .n_classes = counts[0], .n_streams = counts[1], .n_servers = counts[2], .n_phases = counts[3],
    };
}

/* The context over the class arrays of b[0..3] (get_class_arrays). */
static re_context class_context(const buffer *b, const re_requests *rq, const re_device *dev)
{
    return (re_context){
        .rq = rq, .device = dev, .weight = b[0].view.buf, .reservation = b[1].view.buf,
        .limit = b[2].view.buf, .param = b[3].view.buf,
    };
}

/* The message of a parameter or overflow error, written while the parameters are still held. */
static void request_message(int rc, const re_sched_ops *ops, const re_context *ctx, int64_t bad, char *message,
                            size_t size)
{
    if (rc == RE_BAD_PARAM)
        re_param_error(ops, (int32_t)bad, ctx->param[bad], message, size);
    if (rc == RE_OVERFLOW)
        snprintf(message, size,
                 "%lld requests never completed: their dates overflow (a unit's cost or a scheduler's wait "
                 "beyond the largest double)", (long long)bad);
}

/* The number of units, or the exception of a failed run (buffers already released). */
static PyObject *request_result(int rc, const char *message, int64_t bad, int64_t n_units)
{
    if (rc == RE_INTERRUPTED)
        return NULL;
    if (rc == RE_NOMEM)
        return PyErr_NoMemory();
    if (rc == RE_BAD_PARAM || rc == RE_OVERFLOW)
        return raise_unindexed(message);
    if (rc != RE_OK)
        return raise_error(request_error_text(rc), bad);
    return PyLong_FromLongLong(n_units);
}

static const re_sched_ops *find_scheduler(const char *name)
{
    const re_sched_ops *ops = re_find_scheduler(name);
    if (ops == NULL)
        PyErr_Format(PyExc_ValueError, "unknown scheduler '%s'", name);
    return ops;
}

PyDoc_STRVAR(replay_requests_doc,
"replay_requests(scheduler, arrival, size, offset, cls, stream, server, phase, op,\n"
"                n_classes, n_streams, n_servers, n_phases, device, weight, reservation, limit,\n"
"                params, dispatch, complete, unit, /)\n"
"--\n\n"
"Replay a request trace through one scheduler into the device model.\n\n"
"Parameters\n----------\n"
"scheduler : str\n    Registered scheduler name.\n"
"arrival, size : float64 arrays of n requests (arrival sorted)\n"
"offset : int64 array; cls, stream, server, phase : int32 arrays; op : int8 array\n"
"device : tuple (queue_depth, bandwidth, overhead, seek, iops)\n"
"weight, reservation, limit : float64 arrays of n_classes\n"
"params : float64 array of the scheduler's parameters, in the order of scheduler_params()\n"
"dispatch, complete : float64 output arrays; unit : int64 output array\n\n"
"Returns\n-------\nint\n    Number of dispatched units (single or aggregated requests).\n");

static PyObject *py_replay_requests(PyObject *self, PyObject *args)
{
    const char *name;
    PyObject *objs[15];
    int counts[4], depth;
    re_device dev;
    if (!PyArg_ParseTuple(args, "sOOOOOOOOiiii(idddd)OOOOOOO", &name, &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5], &objs[6], &objs[7], &counts[0], &counts[1],
                          &counts[2], &counts[3], &depth, &dev.bandwidth, &dev.overhead, &dev.seek,
                          &dev.iops, &objs[8], &objs[9], &objs[10], &objs[11], &objs[12], &objs[13],
                          &objs[14]))
        return NULL;
    dev.queue_depth = depth;
    const re_sched_ops *ops = find_scheduler(name);
    if (ops == NULL)
        return NULL;
    enum { N_BUF = 15 };
    buffer b[N_BUF];
    memset(b, 0, sizeof(b));
    if (get_buffer(objs[0], &b[0], "arrival", "d", 8, -1, 0) < 0)
        goto fail;
    Py_ssize_t n = b[0].view.len / 8;
    if (get_request_arrays(&objs[1], &b[1], n) < 0 || get_class_arrays(&objs[8], &b[8], ops, counts[0]) < 0 ||
        get_buffer(objs[12], &b[12], "dispatch", "d", 8, n, 1) < 0 ||
        get_buffer(objs[13], &b[13], "complete", "d", 8, n, 1) < 0 ||
        get_buffer(objs[14], &b[14], "unit", "q", 8, n, 1) < 0)
        goto fail;
    re_requests rq = request_arrays(&b[1], n, b[0].view.buf, counts);
    re_context ctx = class_context(&b[8], &rq, &dev);
    re_output out = {.dispatch = b[12].view.buf, .complete = b[13].view.buf, .unit = b[14].view.buf};
    int64_t bad = -1;
    PyThreadState *thread = PyEval_SaveThread();
    ctx.interrupt = (interrupt_hook){signals_pending, &thread};
    int rc = re_run(ops, &ctx, &out, &bad);
    PyEval_RestoreThread(thread);
    char message[256] = "";
    request_message(rc, ops, &ctx, bad, message, sizeof(message));
    release_all(b, N_BUF);
    return request_result(rc, message, bad, out.n_units);
fail:
    release_all(b, N_BUF);
    return NULL;
}

PyDoc_STRVAR(replay_trace_doc,
"replay_trace(scheduler, size, offset, cls, stream, server, phase, op,\n"
"             n_classes, n_streams, n_servers, n_phases, gate, think, prev, gap, job,\n"
"             device, weight, reservation, limit, params,\n"
"             release, dispatch, complete, unit, phase_start, phase_end, /)\n"
"--\n\n"
"Replay request chains in a closed loop through one scheduler into the device model.\n\n"
"A phase opens at its prev phase's end + gap (at gap, a date, for a job's first phase)\n"
"and ends when its last request completes; a request is released at its gate's\n"
"completion (its phase's opening when gate is -1) + think, and reaches the scheduler then.\n\n"
"Parameters\n----------\n"
"scheduler : str\n    Registered scheduler name.\n"
"size : float64 array of n requests\n"
"offset : int64 array; cls, stream, server, phase : int32 arrays; op : int8 array\n"
"    phase is each request's chain phase, in [0, n_phases).\n"
"gate : int64 array of n: -1 or an earlier request of the same phase\n"
"think : float64 array of n, >= 0\n"
"prev : int32 array of n_phases: -1 or an earlier phase of the same job\n"
"gap : float64 array of n_phases: s after prev's end (>= 0), or the opening date\n"
"job : int32 array of n_phases: each phase's job\n"
"device : tuple (queue_depth, bandwidth, overhead, seek, iops)\n"
"weight, reservation, limit : float64 arrays of n_classes\n"
"params : float64 array of the scheduler's parameters, in the order of scheduler_params()\n"
"release, dispatch, complete : float64 output arrays of n; unit : int64 output array of n\n"
"phase_start, phase_end : float64 output arrays of n_phases (NaN where never reached)\n\n"
"Returns\n-------\nint\n    Number of dispatched units (single or aggregated requests).\n");

static PyObject *py_replay_trace(PyObject *self, PyObject *args)
{
    const char *name;
    PyObject *objs[22];
    int counts[4], depth;
    re_device dev;
    if (!PyArg_ParseTuple(args, "sOOOOOOOiiiiOOOOO(idddd)OOOOOOOOOO", &name, &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5], &objs[6], &counts[0], &counts[1], &counts[2],
                          &counts[3], &objs[7], &objs[8], &objs[9], &objs[10], &objs[11], &depth,
                          &dev.bandwidth, &dev.overhead, &dev.seek, &dev.iops, &objs[12], &objs[13],
                          &objs[14], &objs[15], &objs[16], &objs[17], &objs[18], &objs[19], &objs[20],
                          &objs[21]))
        return NULL;
    dev.queue_depth = depth;
    const re_sched_ops *ops = find_scheduler(name);
    if (ops == NULL)
        return NULL;
    if (counts[0] < 0 || counts[1] < 0 || counts[2] < 0 || counts[3] < 0) {
        PyErr_SetString(PyExc_ValueError, "n_classes, n_streams, n_servers and n_phases must be >= 0");
        return NULL;
    }
    enum { N_BUF = 22 };
    buffer b[N_BUF];
    memset(b, 0, sizeof(b));
    if (get_buffer(objs[0], &b[0], "size", "d", 8, -1, 0) < 0)
        goto fail;
    Py_ssize_t n = b[0].view.len / 8;
    Py_ssize_t n_phases = counts[3];
    if (get_request_arrays(objs, b, n) < 0 || get_buffer(objs[7], &b[7], "gate", "q", 8, n, 0) < 0 ||
        get_buffer(objs[8], &b[8], "think", "d", 8, n, 0) < 0 ||
        get_buffer(objs[9], &b[9], "prev", "i", 4, n_phases, 0) < 0 ||
        get_buffer(objs[10], &b[10], "gap", "d", 8, n_phases, 0) < 0 ||
        get_buffer(objs[11], &b[11], "job", "i", 4, n_phases, 0) < 0 ||
        get_class_arrays(&objs[12], &b[12], ops, counts[0]) < 0 ||
        get_buffer(objs[16], &b[16], "release", "d", 8, n, 1) < 0 ||
        get_buffer(objs[17], &b[17], "dispatch", "d", 8, n, 1) < 0 ||
        get_buffer(objs[18], &b[18], "complete", "d", 8, n, 1) < 0 ||
        get_buffer(objs[19], &b[19], "unit", "q", 8, n, 1) < 0 ||
        get_buffer(objs[20], &b[20], "phase_start", "d", 8, n_phases, 1) < 0 ||
        get_buffer(objs[21], &b[21], "phase_end", "d", 8, n_phases, 1) < 0)
        goto fail;
    re_requests rq = request_arrays(b, n, NULL, counts);
    re_context ctx = class_context(&b[12], &rq, &dev);
    re_chains ch = {.gate = b[7].view.buf, .think = b[8].view.buf, .prev = b[9].view.buf,
                    .gap = b[10].view.buf, .job = b[11].view.buf};
    re_output out = {.dispatch = b[17].view.buf, .complete = b[18].view.buf, .unit = b[19].view.buf};
    int64_t bad = -1;
    PyThreadState *thread = PyEval_SaveThread();
    ctx.interrupt = (interrupt_hook){signals_pending, &thread};
    int rc = re_run_closed(ops, &ctx, &ch, &out, b[16].view.buf, b[20].view.buf, b[21].view.buf, &bad);
    PyEval_RestoreThread(thread);
    char message[256] = "";
    request_message(rc, ops, &ctx, bad, message, sizeof(message));
    release_all(b, N_BUF);
    return request_result(rc, message, bad, out.n_units);
fail:
    release_all(b, N_BUF);
    return NULL;
}

PyDoc_STRVAR(chain_gates_doc,
"chain_gates(group, n_groups, start, end, gate, /)\n"
"--\n\n"
"The closed loop's gates of recorded requests, in recorded start order.\n\n"
"A group's depth is the largest number of its requests in flight at once, at least 1\n"
"(a request occupies [start, end); one ending as another starts does not overlap it, one\n"
"of zero length counts at its date); a request's gate is the request of its group depth\n"
"requests earlier, or -1.\n\n"
"Parameters\n----------\n"
"group : int32 array of n, in [0, n_groups)\n"
"n_groups : int\n"
"start, end : float64 arrays of n; start sorted, end >= start\n"
"gate : int64 output array of n\n");

static PyObject *py_chain_gates(PyObject *self, PyObject *args)
{
    PyObject *objs[4];
    int n_groups;
    if (!PyArg_ParseTuple(args, "OiOOO", &objs[0], &n_groups, &objs[1], &objs[2], &objs[3]))
        return NULL;
    enum { N_BUF = 4 };
    buffer b[N_BUF];
    memset(b, 0, sizeof(b));
    if (get_buffer(objs[0], &b[0], "group", "i", 4, -1, 0) < 0)
        goto fail;
    Py_ssize_t n = b[0].view.len / 4;
    if (get_buffer(objs[1], &b[1], "start", "d", 8, n, 0) < 0 || get_buffer(objs[2], &b[2], "end", "d", 8, n, 0) < 0 ||
        get_buffer(objs[3], &b[3], "gate", "q", 8, n, 1) < 0)
        goto fail;
    const int32_t *group = b[0].view.buf;
    const double *start = b[1].view.buf, *end = b[2].view.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (group[i] < 0 || group[i] >= n_groups || !(end[i] >= start[i]) || (i > 0 && !(start[i] >= start[i - 1]))) {
            PyErr_Format(PyExc_ValueError, "chain_gates: request %zd: group out of range, end before start or "
                         "start not sorted", i);
            goto fail;
        }
    int rc = chain_gates(n, group, n_groups, start, end, b[3].view.buf);
    release_all(b, N_BUF);
    if (rc != RE_OK)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
fail:
    release_all(b, N_BUF);
    return NULL;
}

/* One scheduler's [(name, default, allowed, doc), ...]. */
static PyObject *parameter_list(const re_sched_ops *ops)
{
    PyObject *list = PyList_New(ops->n_params);
    for (int32_t k = 0; list != NULL && k < ops->n_params; k++) {
        const re_param *p = &ops->params[k];
        char rule[96];
        re_param_rule(p, rule, sizeof(rule));
        PyObject *item = Py_BuildValue("(sdss)", p->name, p->default_value, rule, p->doc);
        if (item == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, k, item);
    }
    return list;
}

PyDoc_STRVAR(scheduler_params_doc,
"scheduler_params()\n"
"--\n\n"
"The registered request schedulers and their parameters, in registry order.\n\n"
"Returns\n-------\ndict\n"
"    {scheduler: [(name, default, allowed, doc), ...]}: each parameter's name, default\n"
"    value, allowed values (e.g. '> 0', '0 or 1') and one-line description, in the order\n"
"    replay_requests takes them.\n");

static PyObject *py_scheduler_params(PyObject *self, PyObject *unused)
{
    PyObject *result = PyDict_New();
    for (int32_t i = 0; result != NULL && i < re_n_schedulers(); i++) {
        const re_sched_ops *ops = re_scheduler_at(i);
        PyObject *list = parameter_list(ops);
        if (list == NULL || PyDict_SetItemString(result, ops->name, list) < 0)
            Py_CLEAR(result);
        Py_XDECREF(list);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"replay_phases", py_replay_phases, METH_VARARGS, replay_phases_doc},
    {"phase_metrics", py_phase_metrics, METH_VARARGS, phase_metrics_doc},
    {"replay_requests", py_replay_requests, METH_VARARGS, replay_requests_doc},
    {"replay_trace", py_replay_trace, METH_VARARGS, replay_trace_doc},
    {"scheduler_params", py_scheduler_params, METH_NOARGS, scheduler_params_doc},
    {"chain_gates", py_chain_gates, METH_VARARGS, chain_gates_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "iosets.replay._engine",
    "C core of iosets.replay: phase-level and request-level event engines.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__engine(void)
{
    PyObject *errors = PyImport_ImportModule("iosets.errors");
    if (errors == NULL)
        return NULL;
    ReplayError = PyObject_GetAttrString(errors, "ReplayError");
    Py_DECREF(errors);
    if (ReplayError == NULL)
        return NULL;
    return PyModule_Create(&module);
}
