/* Python glue for the replay engines: the only file that includes Python.h.
 * Every entry takes keyword arguments only: each is checked by name against its
 * entry's table of arguments (kind, dtype, length rule, writability) and stored in the
 * field of that name, so two arrays given under swapped names cannot pass as each
 * other. Arrays cross as 1-d C-contiguous buffers; the Python side builds them and
 * preallocates the outputs, errors in the data come back as iosets.errors.ReplayError.
 * The engines run without the GIL and take it back every INTERRUPT_EVERY units of
 * work to check for signals: Ctrl-C stops them within milliseconds with the pending
 * exception (KeyboardInterrupt), every buffer released. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stddef.h>
#include <string.h>

#include "chain_gates.h"
#include "phase_engine.h"
#include "request_engine.h"

static PyObject *ReplayError;

/* The device's fields, read by name (get_device); interned once at import. The last four
 * may be absent: concurrency (1: one unit at a time), rate and burst (0: no token bucket),
 * slice (0: a continuous bucket). */
static const char *const device_field_names[] = {"queue_depth", "bandwidth", "overhead", "seek", "iops",
                                                 "concurrency", "rate", "burst", "slice"};
enum { N_DEVICE_FIELDS = sizeof(device_field_names) / sizeof(device_field_names[0]) };
static PyObject *device_fields[N_DEVICE_FIELDS];

typedef struct {
    Py_buffer view;
    int held;
} buffer;

/* ------------------------------------------------------------------ arguments by name */

enum { MAX_ARGS = 32 };

/* The sizes array lengths follow. Each is set once per call, in table order: by a
 * count argument, the scheduler (its parameters), phase_ptr (n_jobs from its length,
 * n_phases from its last item) or else the first array that follows it (its length). */
enum { DIM_N_REQUESTS, DIM_N_JOBS, DIM_N_PHASES, DIM_N_CLASSES, DIM_N_PARAMS, N_DIMS, DIM_NONE = -1 };
static const char *const dim_names[N_DIMS] = {"n_requests", "n_jobs", "n_phases", "n_classes", "n_params"};

typedef enum {
    ARG_ARRAY,     /* buffer: 1-d, C-contiguous, of `dtype`, of length `dim`; writable if `output` */
    ARG_OFFSETS,   /* buffer: int64 of length n_jobs + 1, from 0 to n_phases (phase_ptr) */
    ARG_COUNT,     /* int32_t: an int in [0, 2^31), the size `dim` unless DIM_NONE */
    ARG_FLOAT,     /* double */
    ARG_WINDOW,    /* double[2]: a pair (T_begin, T_end) */
    ARG_DEVICE,    /* re_device: an object with queue_depth, bandwidth, overhead, seek and iops */
    ARG_SCHEDULER, /* const re_sched_ops *: a registered scheduler's name; sets n_params */
} arg_kind;

typedef struct {
    const char *name;
    arg_kind kind;
    size_t offset;   /* of the argument's field in the entry's struct */
    char dtype;      /* arrays: 'd' float64, 'q' int64, 'i' int32, 'b' int8 */
    int8_t dim;      /* arrays: the size their length follows; counts: the size they are */
    int8_t output;   /* arrays: filled by the engine */
    int8_t optional; /* arrays: may be left out or None (then not held: a NULL pointer) */
} arg_spec;

/* One argument of an entry whose struct is `type`: its keyword is its field's name. */
#define IN(type, field, dtype, dim) {#field, ARG_ARRAY, offsetof(type, field), dtype, dim, 0, 0}
#define OUT(type, field, dtype, dim) {#field, ARG_ARRAY, offsetof(type, field), dtype, dim, 1, 0}
#define OPTIONAL_IN(type, field, dtype, dim) {#field, ARG_ARRAY, offsetof(type, field), dtype, dim, 0, 1}
#define OPTIONAL_OUT(type, field, dtype, dim) {#field, ARG_ARRAY, offsetof(type, field), dtype, dim, 1, 1}
#define OFFSETS(type, field) {#field, ARG_OFFSETS, offsetof(type, field), 'q', DIM_N_JOBS, 0, 0}
#define COUNT(type, field, dim) {#field, ARG_COUNT, offsetof(type, field), 0, dim, 0, 0}
#define SCALAR(type, field, kind) {#field, kind, offsetof(type, field), 0, DIM_NONE, 0, 0}
#define N_ARGS(table) ((int)(sizeof(table) / sizeof(table[0])))

/* One call's parsing: the entry's name and each size once set. */
typedef struct {
    const char *function;
    Py_ssize_t dims[N_DIMS];        /* -1 until set */
    const arg_spec *set_by[N_DIMS]; /* the argument that set it */
    const char *scheduler;          /* the scheduler's name, once parsed */
} arg_parse;

static Py_ssize_t dtype_size(char dtype)
{
    return dtype == 'b' ? 1 : dtype == 'i' ? 4 : 8;
}

static const char *dtype_name(char dtype)
{
    switch (dtype) {
    case 'd': return "float64";
    case 'q': return "int64";
    case 'i': return "int32";
    default: return "int8";
    }
}

/* A buffer's item format without its native byte-order prefix. */
static const char *native_format(const Py_buffer *view)
{
    const char *f = view->format ? view->format : "B";
    return f[0] == '<' || f[0] == '=' || f[0] == '@' ? f + 1 : f;
}

static int format_matches(const Py_buffer *view, char dtype)
{
    const char *f = native_format(view);
    if (view->itemsize != dtype_size(dtype) || f[0] == '\0' || f[1] != '\0')
        return 0;
    return f[0] == dtype || (f[0] == 'l' && (dtype == 'q' || dtype == 'i'));
}

/* A buffer's items as numpy names them ("int64", "float32"), else their format. */
static void describe_items(const Py_buffer *view, char *out, size_t size)
{
    const char *f = native_format(view);
    int bits = (int)(8 * view->itemsize);
    if (f[0] != '\0' && f[1] == '\0' && strchr("bhilq", f[0]))
        snprintf(out, size, "int%d", bits);
    else if (f[0] != '\0' && f[1] == '\0' && strchr("BHILQ", f[0]))
        snprintf(out, size, "uint%d", bits);
    else if (f[0] != '\0' && f[1] == '\0' && strchr("efdg", f[0]))
        snprintf(out, size, "float%d", bits);
    else if (strcmp(f, "?") == 0)
        snprintf(out, size, "bool");
    else
        snprintf(out, size, "items of format '%s'", view->format ? view->format : "B");
}

/* What an array argument must be: "float64 of length n_requests=12 (the length of 'size')". */
static void describe_expected(const arg_parse *p, const arg_spec *spec, char *out, size_t size)
{
    const char *dtype = dtype_name(spec->dtype);
    const char *plus = spec->kind == ARG_OFFSETS ? " + 1" : "";
    Py_ssize_t value = p->dims[spec->dim];
    if (value < 0) {
        snprintf(out, size, "%s of length %s%s", dtype, dim_names[spec->dim], plus);
        return;
    }
    char origin[128] = "";
    const arg_spec *by = p->set_by[spec->dim];
    if (by->kind == ARG_ARRAY)
        snprintf(origin, sizeof(origin), "the length of '%s'", by->name);
    else if (by->kind == ARG_OFFSETS)
        snprintf(origin, sizeof(origin), spec->dim == DIM_N_PHASES ? "the last item of '%s'" : "the length of '%s' - 1",
                 by->name);
    else if (by->kind == ARG_SCHEDULER)
        snprintf(origin, sizeof(origin), "the parameters of '%s'", p->scheduler);
    if (spec->kind == ARG_OFFSETS)
        snprintf(out, size, "%s of length %s + 1=%zd (%s=%zd%s%s)", dtype, dim_names[spec->dim], value + 1,
                 dim_names[spec->dim], value, origin[0] ? ", " : "", origin);
    else if (origin[0])
        snprintf(out, size, "%s of length %s=%zd (%s)", dtype, dim_names[spec->dim], value, origin);
    else
        snprintf(out, size, "%s of length %s=%zd", dtype, dim_names[spec->dim], value);
}

/* Raises `type`("<function>: '<name>' must be <expected>, got <got>"); returns -1. */
static int array_error(const arg_parse *p, const arg_spec *spec, PyObject *type, const char *got)
{
    char expected[256];
    describe_expected(p, spec, expected, sizeof(expected));
    PyErr_Format(type, "%s: '%s' must be %s, got %s", p->function, spec->name, expected, got);
    return -1;
}

static void set_dim(arg_parse *p, int dim, Py_ssize_t value, const arg_spec *by)
{
    p->dims[dim] = value;
    p->set_by[dim] = by;
}

/* phase_ptr's offsets: from 0 to n_phases >= 0, which they set. */
static int check_offsets(arg_parse *p, const arg_spec *spec, const Py_buffer *view)
{
    const int64_t *ptr = view->buf;
    Py_ssize_t last = view->shape[0] - 1;
    if (ptr[0] != 0 || ptr[last] < 0) {
        PyErr_Format(PyExc_ValueError, "%s: '%s' must start at 0 and end at n_phases >= 0, got %lld .. %lld",
                     p->function, spec->name, (long long)ptr[0], (long long)ptr[last]);
        return -1;
    }
    set_dim(p, DIM_N_PHASES, (Py_ssize_t)ptr[last], spec);
    return 0;
}

static int get_array(arg_parse *p, const arg_spec *spec, PyObject *obj, buffer *b)
{
    char got[128];
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_RECORDS_RO) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_BufferError))
            return -1;
        PyErr_Clear();
        return array_error(p, spec, PyExc_TypeError, Py_TYPE(obj)->tp_name);
    }
    b->held = 1;
    const Py_buffer *view = &b->view;
    if (view->ndim != 1 || !PyBuffer_IsContiguous(view, 'C')) {
        if (view->ndim != 1)
            snprintf(got, sizeof(got), "a %d-d array", view->ndim);
        else
            snprintf(got, sizeof(got), "a non-contiguous array (strides of %zd bytes)", view->strides[0]);
        PyErr_Format(PyExc_ValueError, "%s: '%s' must be a C-contiguous 1-d array, got %s", p->function,
                     spec->name, got);
        return -1;
    }
    Py_ssize_t length = view->shape[0];
    int extra = spec->kind == ARG_OFFSETS;
    int fits = format_matches(view, spec->dtype);
    if (fits && p->dims[spec->dim] < 0 && length >= extra)
        set_dim(p, spec->dim, length - extra, spec);
    if (!fits || length != p->dims[spec->dim] + extra) {
        char items[64];
        describe_items(view, items, sizeof(items));
        snprintf(got, sizeof(got), "%s of length %zd", items, length);
        return array_error(p, spec, fits ? PyExc_ValueError : PyExc_TypeError, got);
    }
    if (spec->output && view->readonly) {
        PyErr_Format(PyExc_ValueError, "%s: '%s' is an output and must be writable, got a read-only array",
                     p->function, spec->name);
        return -1;
    }
    return extra ? check_offsets(p, spec, view) : 0;
}

/* Replaces the error of converting an argument, or its `field` when not NULL (a
 * TypeError, or a ValueError for a value out of range), by one that names it; returns -1. */
static int scalar_error(const arg_parse *p, const arg_spec *spec, const char *field, const char *expected,
                        PyObject *obj)
{
    PyObject *type = PyExc_TypeError;
    if (PyErr_Occurred()) {
        if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_OverflowError))
            type = PyExc_ValueError;
        else if (!PyErr_ExceptionMatches(PyExc_TypeError))
            return -1;
        PyErr_Clear();
    }
    PyErr_Format(type, "%s: '%s%s%s' must be %s, got %R", p->function, spec->name, field ? "." : "",
                 field ? field : "", expected, obj);
    return -1;
}

/* An int within [low, INT32_MAX] into *out (the argument, or its `field` when not NULL). */
static int get_int32(const arg_parse *p, const arg_spec *spec, const char *field, PyObject *obj, long low,
                     int32_t *out)
{
    long value = PyLong_AsLong(obj);
    if ((value == -1 && PyErr_Occurred()) || value < low || value > INT32_MAX) {
        char expected[64];
        snprintf(expected, sizeof(expected), "an int in [%ld, %ld]", low, (long)INT32_MAX);
        if (!PyErr_Occurred())
            PyErr_SetNone(PyExc_ValueError);
        return scalar_error(p, spec, field, expected, obj);
    }
    *out = (int32_t)value;
    return 0;
}

/* A float into *out (the argument, or its `field` when not NULL). */
static int get_double(const arg_parse *p, const arg_spec *spec, const char *field, PyObject *obj, double *out)
{
    *out = PyFloat_AsDouble(obj);
    return *out == -1.0 && PyErr_Occurred() ? scalar_error(p, spec, field, "a float", obj) : 0;
}

static int get_window(const arg_parse *p, const arg_spec *spec, PyObject *obj, double *window)
{
    PyObject *pair = PySequence_Fast(obj, "");
    int ok = pair != NULL && PySequence_Fast_GET_SIZE(pair) == 2;
    for (int k = 0; ok && k < 2; k++) {
        window[k] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(pair, k));
        ok = !(window[k] == -1.0 && PyErr_Occurred());
    }
    Py_XDECREF(pair);
    return ok ? 0 : scalar_error(p, spec, NULL, "a pair of floats (T_begin, T_end)", obj);
}

/* The device's fields, read by name from any object that has them (a Device); the token
 * bucket's rate, burst and slice must be finite and >= 0. */
static int get_device(const arg_parse *p, const arg_spec *spec, PyObject *obj, re_device *dev)
{
    enum { CONCURRENCY = 5, RATE = 6 };
    double *values[N_DEVICE_FIELDS] = {
        NULL, &dev->bandwidth, &dev->overhead, &dev->seek, &dev->iops, NULL, &dev->rate, &dev->burst, &dev->slice,
    };
    dev->concurrency = 1;
    dev->rate = dev->burst = dev->slice = 0.0;
    for (int k = 0; k < N_DEVICE_FIELDS; k++) {
        const char *field = device_field_names[k];
        PyObject *value = PyObject_GetAttr(obj, device_fields[k]);
        if (value == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
            if (k >= CONCURRENCY)
                continue;
            PyErr_Format(PyExc_TypeError,
                         "%s: '%s' must have queue_depth, bandwidth, overhead, seek and iops (a Device), got %s "
                         "without '%s'", p->function, spec->name, Py_TYPE(obj)->tp_name, field);
            return -1;
        }
        int rc = k == 0             ? get_int32(p, spec, field, value, 1, &dev->queue_depth)
                 : k == CONCURRENCY ? get_int32(p, spec, field, value, 1, &dev->concurrency)
                                    : get_double(p, spec, field, value, values[k]);
        if (rc == 0 && k >= RATE && !(*values[k] >= 0 && isfinite(*values[k]))) {
            PyErr_SetNone(PyExc_ValueError);
            rc = scalar_error(p, spec, field, "a finite float >= 0", value);
        }
        Py_DECREF(value);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int get_scheduler(arg_parse *p, const arg_spec *spec, PyObject *obj, const re_sched_ops **out)
{
    const char *name = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
    if (name == NULL)
        return scalar_error(p, spec, NULL, "a scheduler's name", obj);
    *out = re_find_scheduler(name);
    if (*out == NULL) {
        PyErr_Format(PyExc_ValueError, "%s: unknown scheduler '%s'", p->function, name);
        return -1;
    }
    p->scheduler = (*out)->name;
    set_dim(p, DIM_N_PARAMS, (*out)->n_params, spec);
    return 0;
}

static int get_argument(arg_parse *p, const arg_spec *spec, PyObject *obj, char *args)
{
    void *field = args + spec->offset;
    switch (spec->kind) {
    case ARG_ARRAY:
    case ARG_OFFSETS: return get_array(p, spec, obj, field);
    case ARG_COUNT:
        if (get_int32(p, spec, NULL, obj, 0, field) < 0)
            return -1;
        if (spec->dim != DIM_NONE)
            set_dim(p, spec->dim, *(int32_t *)field, spec);
        return 0;
    case ARG_FLOAT: return get_double(p, spec, NULL, obj, field);
    case ARG_WINDOW: return get_window(p, spec, obj, field);
    case ARG_DEVICE: return get_device(p, spec, obj, field);
    case ARG_SCHEDULER: return get_scheduler(p, spec, obj, field);
    }
    return 0;
}

static int is_array(const arg_spec *spec)
{
    return spec->kind == ARG_ARRAY || spec->kind == ARG_OFFSETS;
}

/* Releases every buffer an entry's struct holds. */
static void release_arguments(const arg_spec *specs, int n_specs, void *args)
{
    for (int i = 0; i < n_specs; i++)
        if (is_array(&specs[i])) {
            buffer *b = (buffer *)((char *)args + specs[i].offset);
            if (b->held) {
                PyBuffer_Release(&b->view);
                b->held = 0;
            }
        }
}

/* The index of the spec named `key`, searched from `hint` (the next in table order), or -1. */
static int find_keyword(const arg_spec *specs, int n_specs, const char *key, int hint)
{
    for (int k = 0; k < n_specs; k++) {
        int i = (hint + k) % n_specs;
        if (strcmp(specs[i].name, key) == 0)
            return i;
    }
    return -1;
}

/* Fills `args`, the entry's zeroed struct, from keyword arguments only: every argument of
 * `specs` once, the scalars first, then the arrays in table order. Returns 0, or -1 with
 * an exception that names the argument and every buffer released. */
static int parse_arguments(arg_parse *p, const char *function, const arg_spec *specs, int n_specs, void *args,
                           PyObject *const *objs, Py_ssize_t nargs, PyObject *kwnames)
{
    *p = (arg_parse){.function = function};
    for (int d = 0; d < N_DIMS; d++)
        p->dims[d] = -1;
    if (nargs > 0) {
        PyErr_Format(PyExc_TypeError, "%s: takes keyword arguments only, got %zd positional", function, nargs);
        return -1;
    }
    PyObject *values[MAX_ARGS] = {NULL};
    Py_ssize_t n_keywords = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0, hint = 0; k < n_keywords; k++) {
        const char *key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (key == NULL)
            return -1;
        int i = find_keyword(specs, n_specs, key, (int)hint);
        if (i < 0 || values[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s: %s keyword argument '%s'", function, i < 0 ? "unknown" : "repeated",
                         key);
            return -1;
        }
        values[i] = objs[k];
        hint = i + 1; /* callers usually follow the table's order */
    }
    for (int i = 0; i < n_specs; i++)
        if (values[i] == NULL && !specs[i].optional) {
            PyErr_Format(PyExc_TypeError, "%s: missing keyword argument '%s'", function, specs[i].name);
            return -1;
        }
    for (int arrays = 0; arrays < 2; arrays++)
        for (int i = 0; i < n_specs; i++) {
            if (specs[i].optional && (values[i] == NULL || values[i] == Py_None))
                continue; /* left out: its buffer stays unheld, its pointer NULL */
            if (is_array(&specs[i]) == arrays && get_argument(p, &specs[i], values[i], args) < 0) {
                release_arguments(specs, n_specs, args);
                return -1;
            }
        }
    return 0;
}

/* ------------------------------------------------------------------ engines' interrupt hook and errors */

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

/* ------------------------------------------------------------------ phase engine */

/* n_jobs as the phase engine counts them (int32); raises ValueError beyond. */
static int check_n_jobs(const arg_parse *p)
{
    if (p->dims[DIM_N_JOBS] <= INT32_MAX)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: too many jobs (%zd, at most %ld)", p->function, p->dims[DIM_N_JOBS],
                 (long)INT32_MAX);
    return -1;
}

typedef struct {
    buffer release, sets, priority, phase_ptr, t_cpu, io_bytes;
    double bandwidth, window[2];
    buffer cpu_start, cpu_end, io_start, io_end;
} phases_args;

static const arg_spec replay_phases_args[] = {
    IN(phases_args, release, 'd', DIM_N_JOBS),
    IN(phases_args, sets, 'q', DIM_N_JOBS),
    IN(phases_args, priority, 'd', DIM_N_JOBS),
    OFFSETS(phases_args, phase_ptr),
    IN(phases_args, t_cpu, 'd', DIM_N_PHASES),
    IN(phases_args, io_bytes, 'd', DIM_N_PHASES),
    SCALAR(phases_args, bandwidth, ARG_FLOAT),
    SCALAR(phases_args, window, ARG_WINDOW),
    OUT(phases_args, cpu_start, 'd', DIM_N_PHASES),
    OUT(phases_args, cpu_end, 'd', DIM_N_PHASES),
    OUT(phases_args, io_start, 'd', DIM_N_PHASES),
    OUT(phases_args, io_end, 'd', DIM_N_PHASES),
};

PyDoc_STRVAR(replay_phases_doc,
"replay_phases(*, release, sets, priority, phase_ptr, t_cpu, io_bytes, bandwidth, window,\n"
"              cpu_start, cpu_end, io_start, io_end)\n"
"--\n\n"
"Replay a phase-level workload in the IO-SETS engine and measure it over a window.\n\n"
"Every argument is a keyword; arrays are 1-d C-contiguous, of the dtype and length below.\n\n"
"Parameters\n----------\n"
"release, priority : float64 arrays of n_jobs\n"
"sets : int64 array of n_jobs set labels (any integers)\n"
"phase_ptr : int64 array of n_jobs + 1 phase offsets, from 0 to n_phases\n"
"t_cpu, io_bytes : float64 arrays of n_phases\n"
"bandwidth : float\n"
"window : tuple (T_begin, T_end)\n"
"cpu_start, cpu_end, io_start, io_end : writable float64 arrays of n_phases, filled\n\n"
"Returns\n-------\ntuple\n"
"    (n_events, utilization, io_slowdown, max_stretch): compute and I/O completions\n"
"    processed, and the window metrics (NaN where undefined).\n");

static PyObject *py_replay_phases(PyObject *self, PyObject *const *objs, Py_ssize_t nargs, PyObject *kwnames)
{
    phases_args a = {0};
    arg_parse p;
    if (parse_arguments(&p, "replay_phases", replay_phases_args, N_ARGS(replay_phases_args), &a, objs, nargs,
                        kwnames) < 0)
        return NULL;
    if (check_n_jobs(&p) < 0) {
        release_arguments(replay_phases_args, N_ARGS(replay_phases_args), &a);
        return NULL;
    }
    pe_input in = {
        .n_jobs = (int32_t)p.dims[DIM_N_JOBS], .release = a.release.view.buf, .set = a.sets.view.buf,
        .priority = a.priority.view.buf, .phase_ptr = a.phase_ptr.view.buf, .t_cpu = a.t_cpu.view.buf,
        .io_bytes = a.io_bytes.view.buf, .bandwidth = a.bandwidth, .window = {a.window[0], a.window[1]},
    };
    pe_output out = {
        .cpu_start = a.cpu_start.view.buf, .cpu_end = a.cpu_end.view.buf,
        .io_start = a.io_start.view.buf, .io_end = a.io_end.view.buf,
    };
    int64_t bad = -1;
    PyThreadState *thread = PyEval_SaveThread();
    in.interrupt = (interrupt_hook){signals_pending, &thread};
    int rc = pe_run(&in, &out, &bad);
    PyEval_RestoreThread(thread);
    release_arguments(replay_phases_args, N_ARGS(replay_phases_args), &a);
    if (rc == PE_INTERRUPTED)
        return NULL;
    if (rc == PE_NOMEM)
        return PyErr_NoMemory();
    if (rc != PE_OK)
        return raise_error(phase_error_text(rc), bad);
    return Py_BuildValue("(Lddd)", (long long)out.n_events, out.metrics.utilization, out.metrics.io_slowdown,
                         out.metrics.max_stretch);
}

typedef struct {
    buffer phase_ptr, io_bytes, cpu_start, cpu_end, io_start, io_end, remaining_begin, remaining_end;
    double bandwidth, window[2];
} timeline_args;

static const arg_spec phase_metrics_args[] = {
    OFFSETS(timeline_args, phase_ptr),
    IN(timeline_args, io_bytes, 'd', DIM_N_PHASES),
    IN(timeline_args, cpu_start, 'd', DIM_N_PHASES),
    IN(timeline_args, cpu_end, 'd', DIM_N_PHASES),
    IN(timeline_args, io_start, 'd', DIM_N_PHASES),
    IN(timeline_args, io_end, 'd', DIM_N_PHASES),
    IN(timeline_args, remaining_begin, 'd', DIM_N_PHASES),
    IN(timeline_args, remaining_end, 'd', DIM_N_PHASES),
    SCALAR(timeline_args, bandwidth, ARG_FLOAT),
    SCALAR(timeline_args, window, ARG_WINDOW),
};

PyDoc_STRVAR(phase_metrics_doc,
"phase_metrics(*, phase_ptr, io_bytes, cpu_start, cpu_end, io_start, io_end, remaining_begin,\n"
"              remaining_end, bandwidth, window)\n"
"--\n\n"
"Utilization, IO-slowdown and Max Stretch of a phase timeline over a window.\n\n"
"Every argument is a keyword; arrays are 1-d C-contiguous, of the dtype and length below.\n\n"
"Parameters\n----------\n"
"phase_ptr : int64 array of n_jobs + 1 phase offsets, from 0 to n_phases, not decreasing\n"
"io_bytes, cpu_start, cpu_end, io_start, io_end : float64 arrays of n_phases\n"
"remaining_begin, remaining_end : float64 arrays of n_phases\n"
"    Bytes left at T_begin and T_end of each phase performing then (NaN counts as 0).\n"
"bandwidth : float\n"
"window : tuple (T_begin, T_end)\n\n"
"Returns\n-------\ntuple\n    (utilization, io_slowdown, max_stretch), NaN where undefined.\n");

static PyObject *py_phase_metrics(PyObject *self, PyObject *const *objs, Py_ssize_t nargs, PyObject *kwnames)
{
    timeline_args a = {0};
    arg_parse p;
    if (parse_arguments(&p, "phase_metrics", phase_metrics_args, N_ARGS(phase_metrics_args), &a, objs, nargs,
                        kwnames) < 0)
        return NULL;
    const int64_t *ptr = a.phase_ptr.view.buf;
    int32_t n_jobs = (int32_t)p.dims[DIM_N_JOBS];
    int ok = check_n_jobs(&p) == 0;
    for (int32_t j = 0; ok && j < n_jobs; j++)
        if (ptr[j + 1] < ptr[j]) {
            PyErr_Format(PyExc_ValueError, "phase_metrics: 'phase_ptr' offsets must not decrease (job %d)", (int)j);
            ok = 0;
        }
    pe_metrics m = {0};
    if (ok) {
        pe_timeline t = {
            .n_jobs = n_jobs, .phase_ptr = ptr, .io_bytes = a.io_bytes.view.buf,
            .cpu_start = a.cpu_start.view.buf, .cpu_end = a.cpu_end.view.buf,
            .io_start = a.io_start.view.buf, .io_end = a.io_end.view.buf,
            .remaining = {a.remaining_begin.view.buf, a.remaining_end.view.buf},
            .bandwidth = a.bandwidth, .window = {a.window[0], a.window[1]},
        };
        m = pe_window_metrics(&t);
    }
    release_arguments(phase_metrics_args, N_ARGS(phase_metrics_args), &a);
    if (!ok)
        return NULL;
    return Py_BuildValue("(ddd)", m.utilization, m.io_slowdown, m.max_stretch);
}

/* ------------------------------------------------------------------ request engine */

static const char *request_error_text(int rc)
{
    switch (rc) {
    case RE_BAD_ARRIVAL: return "arrival dates must be finite and sorted (request %lld)";
    case RE_BAD_SIZE: return "size must be >= 0 and < 2^63 (request %lld)";
    case RE_BAD_ID: return "class, stream, server or phase id out of range (request %lld)";
    case RE_BAD_DEVICE:
        return "device: queue_depth >= 1, bandwidth > 0, overhead, seek, iops, rate, burst and slice >= 0, all finite, "
               "concurrency in [1, 65536]";
    case RE_BAD_WEIGHT: return "weight must be finite and > 0 (class %lld)";
    case RE_BAD_RESERVATION: return "reservation must be finite and >= 0 (class %lld)";
    case RE_BAD_LIMIT: return "limit must be finite and >= 0 (class %lld)";
    case RE_BAD_GATE:
        return "a request needs a phase, a gate of -1 or an earlier request of its phase, and a finite think "
               "time >= 0; with first, a part needs a first part at or before it that is its own first part, of "
               "the same phase, gate and think, and a gate must be a first part (request %lld)";
    case RE_BAD_CHAIN:
        return "a phase needs a request, a prev of -1 or an earlier phase of its job, and a finite gap, >= 0 "
               "after a prev; with client_rate, a job label in [0, n_jobs) (phase %lld)";
    case RE_BAD_RATE: return "client_rate must be finite and >= 0 (job %lld)";
    default: return "replay failed (code %lld)";
    }
}

/* The arguments of replay_requests (open loop) and replay_trace (closed loop); each
 * takes the fields its table names, the others stay zero. */
typedef struct {
    const re_sched_ops *scheduler;
    buffer arrival, size, offset, cls, stream, server, phase, op;
    int32_t n_classes, n_streams, n_servers, n_phases;
    buffer gate, think, prev, gap, job, first, client_rate;
    re_device device;
    buffer weight, reservation, limit, params;
    buffer release, dispatch, complete, unit, phase_start, phase_end, served;
} request_args;

/* The arguments both request entries take, in their order: the requests and their counts. */
#define REQUEST_ARRAYS                                                                                                \
    IN(request_args, size, 'd', DIM_N_REQUESTS), IN(request_args, offset, 'q', DIM_N_REQUESTS),                    \
        IN(request_args, cls, 'i', DIM_N_REQUESTS), IN(request_args, stream, 'i', DIM_N_REQUESTS),                 \
        IN(request_args, server, 'i', DIM_N_REQUESTS), IN(request_args, phase, 'i', DIM_N_REQUESTS),               \
        IN(request_args, op, 'b', DIM_N_REQUESTS), COUNT(request_args, n_classes, DIM_N_CLASSES),                  \
        COUNT(request_args, n_streams, DIM_NONE), COUNT(request_args, n_servers, DIM_NONE),                        \
        COUNT(request_args, n_phases, DIM_N_PHASES)

/* Then the device, the scheduler's per-class arrays and its parameters. */
#define SCHEDULER_ARRAYS                                                                                              \
    SCALAR(request_args, device, ARG_DEVICE), IN(request_args, weight, 'd', DIM_N_CLASSES),                        \
        IN(request_args, reservation, 'd', DIM_N_CLASSES), IN(request_args, limit, 'd', DIM_N_CLASSES),            \
        IN(request_args, params, 'd', DIM_N_PARAMS)

static re_requests request_arrays(const request_args *a, Py_ssize_t n)
{
    return (re_requests){
        .n = n, .arrival = a->arrival.view.buf, .size = a->size.view.buf, .offset = a->offset.view.buf,
        .cls = a->cls.view.buf, .stream = a->stream.view.buf, .server = a->server.view.buf,
        .phase = a->phase.view.buf, .op = a->op.view.buf, .n_classes = a->n_classes, .n_streams = a->n_streams,
        .n_servers = a->n_servers, .n_phases = a->n_phases,
    };
}

static re_context class_context(const request_args *a, const re_requests *rq)
{
    return (re_context){
        .rq = rq, .device = &a->device, .weight = a->weight.view.buf, .reservation = a->reservation.view.buf,
        .limit = a->limit.view.buf, .param = a->params.view.buf,
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

static const arg_spec replay_requests_args[] = {
    SCALAR(request_args, scheduler, ARG_SCHEDULER),
    IN(request_args, arrival, 'd', DIM_N_REQUESTS),
    REQUEST_ARRAYS,
    SCHEDULER_ARRAYS,
    OUT(request_args, dispatch, 'd', DIM_N_REQUESTS),
    OUT(request_args, complete, 'd', DIM_N_REQUESTS),
    OUT(request_args, unit, 'q', DIM_N_REQUESTS),
};

PyDoc_STRVAR(replay_requests_doc,
"replay_requests(*, scheduler, arrival, size, offset, cls, stream, server, phase, op,\n"
"                n_classes, n_streams, n_servers, n_phases, device, weight, reservation, limit,\n"
"                params, dispatch, complete, unit)\n"
"--\n\n"
"Replay a request trace through one scheduler into the device model.\n\n"
"Every argument is a keyword; arrays are 1-d C-contiguous, of the dtype and length below\n"
"(n_requests: the length of arrival).\n\n"
"Parameters\n----------\n"
"scheduler : str\n    Registered scheduler name.\n"
"arrival, size : float64 arrays of n_requests (arrival sorted)\n"
"offset : int64 array; cls, stream, server, phase : int32 arrays; op : int8 array\n"
"n_classes, n_streams, n_servers, n_phases : int >= 0\n"
"device : Device\n    Read by name: queue_depth, bandwidth, overhead, seek, iops, and concurrency (1 if absent),\n"
"    rate and burst (0 if absent: no token bucket), slice (0 if absent: a continuous bucket).\n"
"weight, reservation, limit : float64 arrays of n_classes\n"
"params : float64 array of the scheduler's parameters, in the order of scheduler_params()\n"
"dispatch, complete : writable float64 arrays; unit : writable int64 array, filled\n\n"
"Returns\n-------\nint\n    Number of dispatched units (single or aggregated requests).\n");

static PyObject *py_replay_requests(PyObject *self, PyObject *const *objs, Py_ssize_t nargs, PyObject *kwnames)
{
    request_args a = {0};
    arg_parse p;
    if (parse_arguments(&p, "replay_requests", replay_requests_args, N_ARGS(replay_requests_args), &a, objs, nargs,
                        kwnames) < 0)
        return NULL;
    re_requests rq = request_arrays(&a, p.dims[DIM_N_REQUESTS]);
    re_context ctx = class_context(&a, &rq);
    re_output out = {.dispatch = a.dispatch.view.buf, .complete = a.complete.view.buf, .unit = a.unit.view.buf};
    int64_t bad = -1;
    PyThreadState *thread = PyEval_SaveThread();
    ctx.interrupt = (interrupt_hook){signals_pending, &thread};
    int rc = re_run(a.scheduler, &ctx, &out, &bad);
    PyEval_RestoreThread(thread);
    char message[256] = "";
    request_message(rc, a.scheduler, &ctx, bad, message, sizeof(message));
    release_arguments(replay_requests_args, N_ARGS(replay_requests_args), &a);
    return request_result(rc, message, bad, out.n_units);
}

static const arg_spec replay_trace_args[] = {
    SCALAR(request_args, scheduler, ARG_SCHEDULER),
    REQUEST_ARRAYS,
    IN(request_args, gate, 'q', DIM_N_REQUESTS),
    IN(request_args, think, 'd', DIM_N_REQUESTS),
    IN(request_args, prev, 'i', DIM_N_PHASES),
    IN(request_args, gap, 'd', DIM_N_PHASES),
    IN(request_args, job, 'i', DIM_N_PHASES),
    OPTIONAL_IN(request_args, first, 'q', DIM_N_REQUESTS),
    OPTIONAL_IN(request_args, client_rate, 'd', DIM_N_JOBS),
    SCHEDULER_ARRAYS,
    OUT(request_args, release, 'd', DIM_N_REQUESTS),
    OUT(request_args, dispatch, 'd', DIM_N_REQUESTS),
    OUT(request_args, complete, 'd', DIM_N_REQUESTS),
    OUT(request_args, unit, 'q', DIM_N_REQUESTS),
    OUT(request_args, phase_start, 'd', DIM_N_PHASES),
    OUT(request_args, phase_end, 'd', DIM_N_PHASES),
    OPTIONAL_OUT(request_args, served, 'd', DIM_N_REQUESTS),
};

PyDoc_STRVAR(replay_trace_doc,
"replay_trace(*, scheduler, size, offset, cls, stream, server, phase, op,\n"
"             n_classes, n_streams, n_servers, n_phases, gate, think, prev, gap, job,\n"
"             first=None, client_rate=None, device, weight, reservation, limit, params,\n"
"             release, dispatch, complete, unit, phase_start, phase_end, served=None)\n"
"--\n\n"
"Replay request chains in a closed loop through one scheduler into the device model.\n\n"
"A phase opens at its prev phase's end + gap (at gap, a date, for a job's first phase)\n"
"and ends when its last request completes; a request is released at its gate's\n"
"completion (its phase's opening when gate is -1) + think, and reaches the scheduler then.\n"
"With first, the requests are parts of recorded requests (split over servers): a request's\n"
"parts are released together and what it gates is released when its last part completes.\n"
"With client_rate, a job's parts leave its client link one after the other: one due at t\n"
"goes at s = max(t, the link's free date), which moves to s + bytes / rate.\n\n"
"Every argument is a keyword; arrays are 1-d C-contiguous, of the dtype and length below\n"
"(n_requests: the length of size).\n\n"
"Parameters\n----------\n"
"scheduler : str\n    Registered scheduler name.\n"
"size : float64 array of n_requests\n"
"offset : int64 array; cls, stream, server, phase : int32 arrays; op : int8 array\n"
"    phase is each request's chain phase, in [0, n_phases).\n"
"n_classes, n_streams, n_servers, n_phases : int >= 0\n"
"gate : int64 array of n_requests: -1 or an earlier request of the same phase\n"
"think : float64 array of n_requests, >= 0\n"
"prev : int32 array of n_phases: -1 or an earlier phase of the same job\n"
"gap : float64 array of n_phases: s after prev's end (>= 0), or the opening date\n"
"job : int32 array of n_phases: each phase's job\n"
"first : int64 array of n_requests, or None (no parts)\n"
"    Each part's request, as the index of its first part: first[first[i]] = first[i] <= i,\n"
"    the phase, gate and think of first[i]; gates are first parts.\n"
"client_rate : float64 array of n_jobs (the largest job label + 1), or None (no limit)\n"
"    Bytes/s of each job's client link, 0 = none.\n"
"device : Device\n"
"    Read by name: queue_depth, bandwidth, overhead, seek, iops, and concurrency (1 if absent),\n"
"    rate and burst (0 if absent: no token bucket), slice (0 if absent: a continuous bucket).\n"
"weight, reservation, limit : float64 arrays of n_classes\n"
"params : float64 array of the scheduler's parameters, in the order of scheduler_params()\n"
"release, dispatch, complete : writable float64 arrays of n_requests; unit : writable int64\n"
"    array of n_requests, filled\n"
"phase_start, phase_end : writable float64 arrays of n_phases, filled (NaN where never reached)\n"
"served : writable float64 array of n_requests, or None\n"
"    Filled with the date each request's unit started on its server: its service slot, or later\n"
"    once its token bucket held its bytes.\n\n"
"Returns\n-------\nint\n    Number of dispatched units (single or aggregated requests).\n");

/* client_rate's length: the largest job label + 1 (n_jobs), the labels >= 0; sets ch->n_jobs. */
static int check_client_rate(const arg_parse *p, const request_args *a, re_chains *ch)
{
    Py_ssize_t n_phases = p->dims[DIM_N_PHASES], given = a->client_rate.view.shape[0];
    int32_t top = -1;
    for (Py_ssize_t k = 0; k < n_phases; k++) {
        if (ch->job[k] < 0) {
            PyErr_Format(PyExc_ValueError, "replay_trace: 'job' must be labels >= 0 with 'client_rate', got %d "
                         "(phase %zd)", (int)ch->job[k], k);
            return -1;
        }
        top = ch->job[k] > top ? ch->job[k] : top;
    }
    if (given != (Py_ssize_t)top + 1) {
        PyErr_Format(PyExc_ValueError, "replay_trace: 'client_rate' must be float64 of length n_jobs=%d (the largest "
                     "label of 'job' + 1), got float64 of length %zd", (int)top + 1, given);
        return -1;
    }
    ch->n_jobs = top + 1;
    return 0;
}

static PyObject *py_replay_trace(PyObject *self, PyObject *const *objs, Py_ssize_t nargs, PyObject *kwnames)
{
    request_args a = {0};
    arg_parse p;
    if (parse_arguments(&p, "replay_trace", replay_trace_args, N_ARGS(replay_trace_args), &a, objs, nargs,
                        kwnames) < 0)
        return NULL;
    re_requests rq = request_arrays(&a, p.dims[DIM_N_REQUESTS]);
    re_context ctx = class_context(&a, &rq);
    re_chains ch = {.gate = a.gate.view.buf, .think = a.think.view.buf, .prev = a.prev.view.buf,
                    .gap = a.gap.view.buf, .job = a.job.view.buf,
                    .first = a.first.held ? a.first.view.buf : NULL,
                    .client_rate = a.client_rate.held ? a.client_rate.view.buf : NULL};
    if (a.client_rate.held && check_client_rate(&p, &a, &ch) < 0) {
        release_arguments(replay_trace_args, N_ARGS(replay_trace_args), &a);
        return NULL;
    }
    re_output out = {.dispatch = a.dispatch.view.buf, .complete = a.complete.view.buf, .unit = a.unit.view.buf,
                     .served = a.served.held ? a.served.view.buf : NULL};
    int64_t bad = -1;
    PyThreadState *thread = PyEval_SaveThread();
    ctx.interrupt = (interrupt_hook){signals_pending, &thread};
    int rc = re_run_closed(a.scheduler, &ctx, &ch, &out, a.release.view.buf, a.phase_start.view.buf,
                           a.phase_end.view.buf, &bad);
    PyEval_RestoreThread(thread);
    char message[256] = "";
    request_message(rc, a.scheduler, &ctx, bad, message, sizeof(message));
    release_arguments(replay_trace_args, N_ARGS(replay_trace_args), &a);
    return request_result(rc, message, bad, out.n_units);
}

typedef struct {
    buffer group;
    int32_t n_groups;
    buffer start, end, gate;
} gates_args;

static const arg_spec chain_gates_args[] = {
    IN(gates_args, group, 'i', DIM_N_REQUESTS),
    COUNT(gates_args, n_groups, DIM_NONE),
    IN(gates_args, start, 'd', DIM_N_REQUESTS),
    IN(gates_args, end, 'd', DIM_N_REQUESTS),
    OUT(gates_args, gate, 'q', DIM_N_REQUESTS),
};

PyDoc_STRVAR(chain_gates_doc,
"chain_gates(*, group, n_groups, start, end, gate)\n"
"--\n\n"
"The closed loop's gates of recorded requests, in recorded start order.\n\n"
"A group's depth is the largest number of its requests in flight at once, at least 1\n"
"(a request occupies [start, end); one ending as another starts does not overlap it, one\n"
"of zero length counts at its date); a request's gate is the request of its group depth\n"
"requests earlier, or -1.\n\n"
"Every argument is a keyword; arrays are 1-d C-contiguous, of the dtype and length below.\n\n"
"Parameters\n----------\n"
"group : int32 array of n_requests, in [0, n_groups)\n"
"n_groups : int >= 0\n"
"start, end : float64 arrays of n_requests; start sorted, end >= start\n"
"gate : writable int64 array of n_requests, filled\n");

static PyObject *py_chain_gates(PyObject *self, PyObject *const *objs, Py_ssize_t nargs, PyObject *kwnames)
{
    gates_args a = {0};
    arg_parse p;
    if (parse_arguments(&p, "chain_gates", chain_gates_args, N_ARGS(chain_gates_args), &a, objs, nargs, kwnames) <
        0)
        return NULL;
    Py_ssize_t n = p.dims[DIM_N_REQUESTS];
    const int32_t *group = a.group.view.buf;
    const double *start = a.start.view.buf, *end = a.end.view.buf;
    int rc = RE_OK;
    for (Py_ssize_t i = 0; rc == RE_OK && i < n; i++)
        if (group[i] < 0 || group[i] >= a.n_groups || !(end[i] >= start[i]) || (i > 0 && !(start[i] >= start[i - 1]))) {
            PyErr_Format(PyExc_ValueError, "chain_gates: request %zd: group out of range, end before start or "
                         "start not sorted", i);
            rc = -1;
        }
    if (rc == RE_OK)
        rc = chain_gates(n, group, a.n_groups, start, end, a.gate.view.buf);
    release_arguments(chain_gates_args, N_ARGS(chain_gates_args), &a);
    if (rc == -1)
        return NULL;
    if (rc != RE_OK)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* Every table fits parse_arguments' slots. */
_Static_assert(sizeof(replay_trace_args) / sizeof(arg_spec) <= MAX_ARGS, "replay_trace: too many arguments");
_Static_assert(sizeof(replay_requests_args) / sizeof(arg_spec) <= MAX_ARGS, "replay_requests: too many arguments");
_Static_assert(sizeof(replay_phases_args) / sizeof(arg_spec) <= MAX_ARGS, "replay_phases: too many arguments");
_Static_assert(sizeof(phase_metrics_args) / sizeof(arg_spec) <= MAX_ARGS, "phase_metrics: too many arguments");
_Static_assert(sizeof(chain_gates_args) / sizeof(arg_spec) <= MAX_ARGS, "chain_gates: too many arguments");

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
"    of the params array replay_requests and replay_trace take.\n");

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

/* An entry that takes keyword arguments only (METH_FASTCALL | METH_KEYWORDS). */
#define KEYWORDS_ONLY(name) {#name, (PyCFunction)(void (*)(void))py_##name, METH_FASTCALL | METH_KEYWORDS, name##_doc}

static PyMethodDef methods[] = {
    KEYWORDS_ONLY(replay_phases),
    KEYWORDS_ONLY(phase_metrics),
    KEYWORDS_ONLY(replay_requests),
    KEYWORDS_ONLY(replay_trace),
    {"scheduler_params", py_scheduler_params, METH_NOARGS, scheduler_params_doc},
    KEYWORDS_ONLY(chain_gates),
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
    for (int k = 0; k < N_DEVICE_FIELDS; k++)
        if ((device_fields[k] = PyUnicode_InternFromString(device_field_names[k])) == NULL)
            return NULL;
    return PyModule_Create(&module);
}
