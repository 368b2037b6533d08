/* Python glue for the replay engines: the only file that includes Python.h.
 * Arrays cross as C-contiguous buffers; the Python side checks dtypes and
 * preallocates outputs, errors come back as iosets.errors.ReplayError. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>

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

static const char *phase_error_text(int rc)
{
    switch (rc) {
    case PE_BAD_RELEASE: return "release must be finite and >= 0 (job %lld)";
    case PE_BAD_SET: return "set index out of range (job %lld)";
    case PE_BAD_PRIORITY: return "priority must be finite and > 0 (job %lld)";
    case PE_BAD_PHASES: return "phase offsets must not decrease (job %lld)";
    case PE_BAD_CPU: return "t_cpu must be finite and >= 0 (phase %lld)";
    case PE_BAD_BYTES: return "io_bytes must be finite and >= 0 (phase %lld)";
    case PE_BAD_BANDWIDTH: return "bandwidth must be finite and > 0";
    default: return "replay failed (code %lld)";
    }
}

/* Raises ReplayError(message, index); `format` takes the index as %lld. */
static PyObject *raise_error(const char *format, int64_t bad)
{
    PyObject *msg = PyUnicode_FromFormat(format, (long long)bad);
    if (msg == NULL)
        return NULL;
    PyObject *exc = PyObject_CallFunction(ReplayError, "OL", msg, (long long)bad);
    Py_DECREF(msg);
    if (exc != NULL) {
        PyErr_SetObject(ReplayError, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyDoc_STRVAR(replay_phases_doc,
"replay_phases(release, set, priority, phase_ptr, t_cpu, io_bytes, n_sets, bandwidth,\n"
"              probes, cpu_start, cpu_end, io_start, io_end, remaining_0, remaining_1)\n"
"--\n\n"
"Replay a phase-level workload in the IO-SETS engine.\n\n"
"Parameters\n----------\n"
"release, priority : float64 arrays of n_jobs\n"
"set : int32 array of n_jobs, dense set indices in [0, n_sets)\n"
"phase_ptr : int64 array of n_jobs + 1 phase offsets\n"
"t_cpu, io_bytes : float64 arrays of n_phases\n"
"probes : tuple of two dates (the metric window)\n"
"cpu_start, cpu_end, io_start, io_end, remaining_0, remaining_1 : float64 output arrays of n_phases\n\n"
"Returns\n-------\nint\n    Number of events processed.\n");

static PyObject *py_replay_phases(PyObject *self, PyObject *args)
{
    PyObject *objs[14];
    int n_sets;
    double bandwidth, probe0, probe1;
    if (!PyArg_ParseTuple(args, "OOOOOOid(dd)OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &n_sets, &bandwidth, &probe0, &probe1, &objs[6],
                          &objs[7], &objs[8], &objs[9], &objs[10], &objs[11]))
        return NULL;
    enum { N_BUF = 12 };
    buffer b[N_BUF];
    memset(b, 0, sizeof(b));
    if (get_buffer(objs[0], &b[0], "release", "d", 8, -1, 0) < 0)
        goto fail;
    Py_ssize_t n_jobs = b[0].view.len / 8;
    if (get_buffer(objs[1], &b[1], "set", "i", 4, n_jobs, 0) < 0 ||
        get_buffer(objs[2], &b[2], "priority", "d", 8, n_jobs, 0) < 0 ||
        get_buffer(objs[3], &b[3], "phase_ptr", "q", 8, n_jobs + 1, 0) < 0 ||
        get_buffer(objs[4], &b[4], "t_cpu", "d", 8, -1, 0) < 0)
        goto fail;
    Py_ssize_t n_phases = b[4].view.len / 8;
    const int64_t *ptr = b[3].view.buf;
    if (ptr[0] != 0 || ptr[n_jobs] != n_phases) {
        PyErr_Format(PyExc_ValueError, "phase_ptr must run from 0 to %zd", n_phases);
        goto fail;
    }
    static const char *out_names[] = {"cpu_start", "cpu_end", "io_start", "io_end",
                                      "remaining_0", "remaining_1"};
    if (get_buffer(objs[5], &b[5], "io_bytes", "d", 8, n_phases, 0) < 0)
        goto fail;
    for (int i = 0; i < 6; i++)
        if (get_buffer(objs[6 + i], &b[6 + i], out_names[i], "d", 8, n_phases, 1) < 0)
            goto fail;

    pe_input in = {
        .n_jobs = (int32_t)n_jobs, .n_sets = n_sets,
        .release = b[0].view.buf, .set = b[1].view.buf, .priority = b[2].view.buf,
        .phase_ptr = ptr, .t_cpu = b[4].view.buf, .io_bytes = b[5].view.buf,
        .bandwidth = bandwidth, .probe = {probe0, probe1},
    };
    pe_output out = {
        .cpu_start = b[6].view.buf, .cpu_end = b[7].view.buf,
        .io_start = b[8].view.buf, .io_end = b[9].view.buf,
        .remaining = {b[10].view.buf, b[11].view.buf},
    };
    int64_t bad = -1;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = pe_run(&in, &out, &bad);
    Py_END_ALLOW_THREADS
    release_all(b, N_BUF);
    if (rc == PE_NOMEM)
        return PyErr_NoMemory();
    if (rc != PE_OK)
        return raise_error(phase_error_text(rc), bad);
    return PyLong_FromLongLong(out.n_events);
fail:
    release_all(b, N_BUF);
    return NULL;
}

static const char *request_error_text(int rc)
{
    switch (rc) {
    case RE_BAD_ARRIVAL: return "arrival dates must be finite and sorted (request %lld)";
    case RE_BAD_SIZE: return "size must be finite and > 0 (request %lld)";
    case RE_BAD_ID: return "class, stream, server or phase id out of range (request %lld)";
    case RE_BAD_DEVICE: return "device: queue_depth >= 1, bandwidth > 0, overhead, seek and iops >= 0";
    case RE_BAD_WEIGHT: return "weight must be finite and > 0 (class %lld)";
    case RE_BAD_RESERVATION: return "reservation must be finite and >= 0 (class %lld)";
    case RE_BAD_LIMIT: return "limit must be finite and >= 0 (class %lld)";
    case RE_BAD_PARAM: return "bad scheduler parameter (position %lld)";
    default: return "replay failed (code %lld)";
    }
}

PyDoc_STRVAR(replay_requests_doc,
"replay_requests(scheduler, arrival, size, offset, cls, stream, server, phase, op,\n"
"                n_classes, n_streams, n_servers, n_phases, device, weight, reservation, limit,\n"
"                params, dispatch, complete, unit)\n"
"--\n\n"
"Replay a request trace through one scheduler into the device model.\n\n"
"Parameters\n----------\n"
"scheduler : str\n    Registered scheduler name.\n"
"arrival, size : float64 arrays of n requests (arrival sorted)\n"
"offset : int64 array; cls, stream, server, phase : int32 arrays; op : int8 array\n"
"device : tuple (queue_depth, bandwidth, overhead, seek, iops)\n"
"weight, reservation, limit : float64 arrays of n_classes\n"
"params : float64 array of the scheduler's scalar parameters\n"
"dispatch, complete : float64 output arrays; unit : int64 output array\n\n"
"Returns\n-------\nint\n    Number of dispatched units (single or aggregated requests).\n");

static PyObject *py_replay_requests(PyObject *self, PyObject *args)
{
    const char *name;
    PyObject *objs[15];
    int n_classes, n_streams, n_servers, n_phases, depth;
    re_device dev;
    if (!PyArg_ParseTuple(args, "sOOOOOOOOiiii(idddd)OOOOOOO", &name, &objs[0], &objs[1], &objs[2],
                          &objs[3], &objs[4], &objs[5], &objs[6], &objs[7], &n_classes, &n_streams,
                          &n_servers, &n_phases, &depth, &dev.bandwidth, &dev.overhead, &dev.seek,
                          &dev.iops, &objs[8], &objs[9], &objs[10], &objs[11], &objs[12], &objs[13],
                          &objs[14]))
        return NULL;
    dev.queue_depth = depth;
    const re_sched_ops *ops = re_find_scheduler(name);
    if (ops == NULL) {
        PyErr_Format(PyExc_ValueError, "unknown scheduler '%s'", name);
        return NULL;
    }
    enum { N_BUF = 15 };
    buffer b[N_BUF];
    memset(b, 0, sizeof(b));
    if (get_buffer(objs[0], &b[0], "arrival", "d", 8, -1, 0) < 0)
        goto fail;
    Py_ssize_t n = b[0].view.len / 8;
    if (get_buffer(objs[1], &b[1], "size", "d", 8, n, 0) < 0 ||
        get_buffer(objs[2], &b[2], "offset", "q", 8, n, 0) < 0 ||
        get_buffer(objs[3], &b[3], "cls", "i", 4, n, 0) < 0 ||
        get_buffer(objs[4], &b[4], "stream", "i", 4, n, 0) < 0 ||
        get_buffer(objs[5], &b[5], "server", "i", 4, n, 0) < 0 ||
        get_buffer(objs[6], &b[6], "phase", "i", 4, n, 0) < 0 ||
        get_buffer(objs[7], &b[7], "op", "b", 1, n, 0) < 0 ||
        get_buffer(objs[8], &b[8], "weight", "d", 8, n_classes, 0) < 0 ||
        get_buffer(objs[9], &b[9], "reservation", "d", 8, n_classes, 0) < 0 ||
        get_buffer(objs[10], &b[10], "limit", "d", 8, n_classes, 0) < 0 ||
        get_buffer(objs[11], &b[11], "params", "d", 8, -1, 0) < 0 ||
        get_buffer(objs[12], &b[12], "dispatch", "d", 8, n, 1) < 0 ||
        get_buffer(objs[13], &b[13], "complete", "d", 8, n, 1) < 0 ||
        get_buffer(objs[14], &b[14], "unit", "q", 8, n, 1) < 0)
        goto fail;
    re_requests rq = {
        .n = n, .arrival = b[0].view.buf, .size = b[1].view.buf, .offset = b[2].view.buf,
        .cls = b[3].view.buf, .stream = b[4].view.buf, .server = b[5].view.buf,
        .phase = b[6].view.buf, .op = b[7].view.buf, .n_classes = n_classes,
        .n_streams = n_streams, .n_servers = n_servers, .n_phases = n_phases,
    };
    re_context ctx = {
        .rq = &rq, .device = &dev, .weight = b[8].view.buf, .reservation = b[9].view.buf,
        .limit = b[10].view.buf, .param = b[11].view.buf, .n_param = (int32_t)(b[11].view.len / 8),
    };
    re_output out = {.dispatch = b[12].view.buf, .complete = b[13].view.buf, .unit = b[14].view.buf};
    int64_t bad = -1;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = re_run(ops, &ctx, &out, &bad);
    Py_END_ALLOW_THREADS
    release_all(b, N_BUF);
    if (rc == RE_NOMEM)
        return PyErr_NoMemory();
    if (rc != RE_OK)
        return raise_error(request_error_text(rc), bad);
    return PyLong_FromLongLong(out.n_units);
fail:
    release_all(b, N_BUF);
    return NULL;
}

static PyMethodDef methods[] = {
    {"replay_phases", py_replay_phases, METH_VARARGS, replay_phases_doc},
    {"replay_requests", py_replay_requests, METH_VARARGS, replay_requests_doc},
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
