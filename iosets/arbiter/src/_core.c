/* Python glue for the arbiter: the only file of iosets/arbiter/src that includes Python.h.
 *
 * Admission(policy, bandwidth) is the admission core driven by hand (the virtual clock of
 * iosets.arbiter.Admission and of the tests); serve(...) runs the event loop on listening
 * sockets the caller made, without the GIL, until its stop descriptor is readable. Errors in
 * a job's state come back as iosets.errors.InputError naming the job's handle. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "arbiter_core.h"
#include "arbiter_serve.h"

static PyObject *InputError;

static const char *const policy_names[AC_N_POLICIES] = {"set-10", "exclusive-fcfs", "fair-share", "share-priority"};

/* The policy named `name`, or -1 with a ValueError naming the choices. */
static int parse_policy(const char *name)
{
    for (int i = 0; i < AC_N_POLICIES; i++)
        if (strcmp(name, policy_names[i]) == 0)
            return i;
    PyErr_Format(InputError, "policy must be one of set-10, exclusive-fcfs, fair-share, share-priority; got '%s'",
                 name);
    return -1;
}

static int check_bandwidth(double bandwidth)
{
    if (bandwidth > 0 && isfinite(bandwidth))
        return 1;
    char text[32];
    snprintf(text, sizeof text, "%g", bandwidth); /* PyErr_Format has no %g */
    PyErr_Format(InputError, "bandwidth must be a finite number > 0 (bytes/s), got %s", text);
    return 0;
}

/* ------------------------------------------------------------------ Admission */

typedef struct {
    PyObject_HEAD
    ac_core *core;
} Admission;

static int Admission_init(Admission *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"policy", "bandwidth", NULL};
    const char *policy_name;
    double bandwidth;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sd:Admission", keywords, &policy_name, &bandwidth))
        return -1;
    int policy = parse_policy(policy_name);
    if (policy < 0 || !check_bandwidth(bandwidth))
        return -1;
    ac_destroy(self->core);
    self->core = ac_create((ac_policy)policy, bandwidth);
    if (self->core == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void Admission_dealloc(Admission *self)
{
    ac_destroy(self->core);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ready(Admission *self)
{
    if (self->core != NULL)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "Admission.__init__ was not called");
    return 0;
}

/* None, or the exception of `status` for `job` (NULL). */
static PyObject *status_result(int status, int job)
{
    switch (status) {
    case AC_OK:
        Py_RETURN_NONE;
    case AC_NO_MEMORY:
        return PyErr_NoMemory();
    case AC_PHASE_OPEN:
        return PyErr_Format(InputError, "job %d: a phase is already open", job);
    case AC_NO_PHASE:
        return PyErr_Format(InputError, "job %d: no phase is open", job);
    case AC_BAD_JOB:
        return PyErr_Format(InputError, "job %d is not a joined job", job);
    default:
        return PyErr_Format(InputError, "job %d: bad value", job);
    }
}

PyDoc_STRVAR(join_doc, "join(set, priority)\n--\n\n"
                       "A new idle job of set label ``set`` (>= 0) and ``priority`` (> 0), as the policy counts\n"
                       "them; returns its handle (handles of jobs that left are reused).");

static PyObject *Admission_join(Admission *self, PyObject *args)
{
    long long set;
    double priority;
    int32_t job;
    if (!ready(self) || !PyArg_ParseTuple(args, "Ld:join", &set, &priority))
        return NULL;
    int status = ac_join(self->core, set, priority, &job);
    if (status == AC_BAD_VALUE)
        return PyErr_Format(InputError, "join: expected set >= 0 and priority > 0 with a finite rate, got %lld and %R",
                            set, PyTuple_GET_ITEM(args, 1));
    if (status != AC_OK)
        return PyErr_NoMemory();
    return PyLong_FromLong(job);
}

PyDoc_STRVAR(begin_doc, "begin(job, bytes)\n--\n\n"
                        "The job asks to begin an I/O phase of ``bytes`` (>= 0): it waits in its set's queue.");

static PyObject *Admission_begin(Admission *self, PyObject *args)
{
    int job;
    double bytes;
    if (!ready(self) || !PyArg_ParseTuple(args, "id:begin", &job, &bytes))
        return NULL;
    int status = ac_begin(self->core, job, bytes);
    if (status == AC_BAD_VALUE)
        return PyErr_Format(InputError, "job %d: bytes must be a finite number >= 0, got %R", job,
                            PyTuple_GET_ITEM(args, 1));
    return status_result(status, job);
}

PyDoc_STRVAR(end_doc, "end(job)\n--\n\n"
                      "The job's phase ended (or its request is withdrawn): its set may admit its next job.");

static PyObject *Admission_end(Admission *self, PyObject *args)
{
    int job;
    if (!ready(self) || !PyArg_ParseTuple(args, "i:end", &job))
        return NULL;
    return status_result(ac_end(self->core, job), job);
}

PyDoc_STRVAR(leave_doc, "leave(job)\n--\n\n"
                        "The job leaves (a disconnect): its set, or its place in the queue, is freed.");

static PyObject *Admission_leave(Admission *self, PyObject *args)
{
    int job;
    if (!ready(self) || !PyArg_ParseTuple(args, "i:leave", &job))
        return NULL;
    return status_result(ac_leave(self->core, job), job);
}

static PyObject *notices(const ac_notice *items, int32_t n)
{
    PyObject *list = PyList_New(n);
    for (int32_t i = 0; list != NULL && i < n; i++) {
        PyObject *item = Py_BuildValue("(id)", (int)items[i].job, items[i].rate);
        if (item == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

PyDoc_STRVAR(admit_doc, "admit()\n--\n\n"
                        "Each marked free set admits its FCFS head: ``[(job, rate), ...]`` granted.");

static PyObject *Admission_admit(Admission *self, PyObject *unused)
{
    const ac_notice *grants;
    if (!ready(self))
        return NULL;
    int32_t n = ac_admit(self->core, &grants);
    return notices(grants, n);
}

PyDoc_STRVAR(rates_doc, "rates()\n--\n\n"
                        "``[(job, rate), ...]``: the performing jobs whose rate changed since the last call.");

static PyObject *Admission_rates(Admission *self, PyObject *unused)
{
    const ac_notice *changes;
    if (!ready(self))
        return NULL;
    int32_t n = ac_rates(self->core, &changes);
    return notices(changes, n);
}

static PyObject *Admission_performing(Admission *self, void *closure)
{
    return ready(self) ? PyLong_FromLong(ac_performing(self->core)) : NULL;
}

static PyObject *Admission_joined(Admission *self, void *closure)
{
    return ready(self) ? PyLong_FromLong(ac_joined(self->core)) : NULL;
}

static PyMethodDef Admission_methods[] = {
    {"join", (PyCFunction)Admission_join, METH_VARARGS, join_doc},
    {"begin", (PyCFunction)Admission_begin, METH_VARARGS, begin_doc},
    {"end", (PyCFunction)Admission_end, METH_VARARGS, end_doc},
    {"leave", (PyCFunction)Admission_leave, METH_VARARGS, leave_doc},
    {"admit", (PyCFunction)Admission_admit, METH_NOARGS, admit_doc},
    {"rates", (PyCFunction)Admission_rates, METH_NOARGS, rates_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Admission_getset[] = {
    {"performing", (getter)Admission_performing, NULL, "Jobs performing now.", NULL},
    {"joined", (getter)Admission_joined, NULL, "Jobs joined and not left.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(Admission_doc, "Admission(policy, bandwidth)\n--\n\n"
                            "The arbiter's admission core, driven by hand: join, begin, end and leave change\n"
                            "the queues; admit() then reports the grants and rates() the changed rates.");

static PyTypeObject AdmissionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "iosets.arbiter._core.Admission",
    .tp_basicsize = sizeof(Admission),
    .tp_dealloc = (destructor)Admission_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Admission_doc,
    .tp_methods = Admission_methods,
    .tp_getset = Admission_getset,
    .tp_init = (initproc)Admission_init,
    .tp_new = PyType_GenericNew,
};

/* ------------------------------------------------------------------ serve */

PyDoc_STRVAR(serve_doc, "serve(*, listen_fds, stop_fd, policy, bandwidth)\n--\n\n"
                        "Serve wire protocol v1 on the listening sockets ``listen_fds`` until ``stop_fd`` is\n"
                        "readable, without the GIL. Returns the counts: connections, jobs, grants, errors,\n"
                        "dropped. Raises OSError when a system call fails.");

static PyObject *serve(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"listen_fds", "stop_fd", "policy", "bandwidth", NULL};
    PyObject *fds_arg = NULL;
    int stop_fd = -1;
    const char *policy_name = NULL;
    double bandwidth = NAN;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$Oisd:serve", keywords, &fds_arg, &stop_fd, &policy_name,
                                     &bandwidth))
        return NULL;
    if (fds_arg == NULL || stop_fd < 0 || policy_name == NULL)
        return PyErr_Format(PyExc_TypeError, "serve: listen_fds, stop_fd, policy and bandwidth are required");
    int policy = parse_policy(policy_name);
    if (policy < 0 || !check_bandwidth(bandwidth))
        return NULL;
    PyObject *fds_seq = PySequence_Fast(fds_arg, "serve: listen_fds must be a sequence of file descriptors");
    if (fds_seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fds_seq);
    int *fds = PyMem_Malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (fds == NULL) {
        Py_DECREF(fds_seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long fd = PyLong_AsLong(PySequence_Fast_GET_ITEM(fds_seq, i));
        if (fd < 0 || fd > INT32_MAX) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "serve: listen_fds[%zd] is not a file descriptor", i);
            PyMem_Free(fds);
            Py_DECREF(fds_seq);
            return NULL;
        }
        fds[i] = (int)fd;
    }
    Py_DECREF(fds_seq);
    as_config config = {fds, (int)n, stop_fd, (ac_policy)policy, bandwidth};
    as_stats stats = {0};
    char error[256] = "";
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = as_serve(&config, &stats, error, sizeof error);
    Py_END_ALLOW_THREADS
    PyMem_Free(fds);
    if (status != 0)
        return PyErr_Format(PyExc_OSError, "arbiter: %s", error);
    return Py_BuildValue("{sLsLsLsLsL}", "connections", (long long)stats.connections, "jobs", (long long)stats.jobs,
                         "grants", (long long)stats.grants, "errors", (long long)stats.errors, "dropped",
                         (long long)stats.dropped);
}

static PyMethodDef module_methods[] = {
    {"serve", (PyCFunction)(void (*)(void))serve, METH_VARARGS | METH_KEYWORDS, serve_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "iosets.arbiter._core",
    "The arbiter's C core: Admission (the admission rules) and serve (the event loop).", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__core(void)
{
    PyObject *errors = PyImport_ImportModule("iosets.errors");
    if (errors == NULL)
        return NULL;
    InputError = PyObject_GetAttrString(errors, "InputError");
    Py_DECREF(errors);
    if (InputError == NULL || PyType_Ready(&AdmissionType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *names = Py_BuildValue("(ssss)", policy_names[0], policy_names[1], policy_names[2], policy_names[3]);
    if (PyModule_AddObject(m, "POLICIES", names) < 0) {
        Py_XDECREF(names);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(&AdmissionType);
    if (PyModule_AddObject(m, "Admission", (PyObject *)&AdmissionType) < 0) {
        Py_DECREF(&AdmissionType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
