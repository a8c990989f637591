/* torchtitan step lines ("step: 10  loss: 7.1  grad_norm: 1.2  memory: 27.9GiB(88%)  tps: 3,214  ...") read in one
 * pass over a chunk's text, without the GIL.
 *
 * The Polars reading in ingest/parsers/torchtitan.py (its regexes) is the definition; this scanner takes a line
 * only where it is sure to agree, and hands every other line back ("asks"):
 *   taken  a line whose first "step:" not preceded by a letter or "_" is followed by blanks, at most 18 digits and
 *          a blank; no "validat" in it; every field whose label (after a word boundary) is in the rest of the line
 *          is followed by blanks, a number of the regex's shape (commas dropped, at most MAX_NUMBER characters,
 *          finite) and the field's unit; an absent field is NaN (null for the caller)
 *   asked  any other line holding "step:" or one of the configuration literals, with its position and text
 * It gives up on the whole chunk (returns None) when the text is not ASCII, holds a carriage return, or a line is
 * longer than max_line: the caller then reads the chunk with Polars.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NUMBER 40
#define MAX_ALSO 32
#define N_FIELDS 8
#define MAX_STEP_DIGITS 18

enum unit { U_NONE, U_GIB, U_PERCENT, U_SECONDS };

typedef struct {
    const char *labels[2]; /* a second spelling, or NULL */
    int unit;
} field_t;

/* _FIELDS of torchtitan.py, in order: loss, grad_norm, memory_gib, tps, tflops, mfu_pct, lr, time_s */
static const field_t FIELDS[N_FIELDS] = {
    {{"loss:", NULL}, U_NONE},   {{"grad_norm:", NULL}, U_NONE}, {{"memory:", NULL}, U_GIB},
    {{"tps:", NULL}, U_NONE},    {{"tflops:", NULL}, U_NONE},    {{"mfu:", NULL}, U_PERCENT},
    {{"lr:", NULL}, U_NONE},     {{"step_time:", "time:"}, U_SECONDS},
};

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\v' || c == '\f'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_word(char c) { return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

/* The first occurrence of `label` in [p, end) at a word boundary (the label starts with a word character). */
static const char *labelled(const char *start, const char *end, const char *label) {
    size_t n = strlen(label);
    for (const char *p = start; p < end; p++) {
        p = memmem(p, (size_t)(end - p), label, n);
        if (!p)
            return NULL;
        if (p == start || !is_word(p[-1]))
            return p;
    }
    return NULL;
}

/* The regex's number, -?[\d,]*\.?\d+(?:[eE][-+]?\d+)?, at p: its end, or NULL (nan, inf or no number: asked). */
static const char *number_end(const char *p, const char *end) {
    const char *q = p;
    if (q < end && *q == '-')
        q++;
    const char *last_digit = NULL;
    while (q < end && (is_digit(*q) || *q == ',')) {
        if (is_digit(*q))
            last_digit = q;
        q++;
    }
    if (q + 1 < end && *q == '.' && is_digit(q[1])) {
        q++;
        while (q < end && is_digit(*q))
            q++;
    } else if (last_digit) {
        q = last_digit + 1; /* \d+ takes the run's last digits; trailing commas are not part of the number */
    } else {
        return NULL;
    }
    if (q < end && (*q == 'e' || *q == 'E')) {
        const char *e = q + 1;
        if (e < end && (*e == '+' || *e == '-'))
            e++;
        if (e < end && is_digit(*e)) {
            while (e < end && is_digit(*e))
                e++;
            q = e;
        }
    }
    return q;
}

/* The field's value after its label: 1 and *out, or 0 (asked). */
static int field_value(const char *p, const char *end, int unit, double *out) {
    while (p < end && is_blank(*p))
        p++;
    const char *q = number_end(p, end);
    if (!q || q - p > MAX_NUMBER)
        return 0;
    char buf[MAX_NUMBER + 1];
    size_t n = 0;
    for (const char *c = p; c < q; c++)
        if (*c != ',')
            buf[n++] = *c;
    buf[n] = '\0';
    double v = strtod(buf, NULL);
    if (!isfinite(v))
        return 0;
    const char *u = q;
    while (u < end && is_blank(*u))
        u++;
    switch (unit) {
    case U_GIB:
        if (end - u < 3 || memcmp(u, "GiB", 3) != 0)
            return 0;
        break;
    case U_PERCENT:
        if (u >= end || *u != '%')
            return 0;
        break;
    case U_SECONDS:
        if (u >= end || *u != 's' || (u + 1 < end && is_word(u[1])))
            return 0;
        break;
    default:
        break;
    }
    *out = v;
    return 1;
}

/* 1 with the step and the fields when the line is a step line read whole; 0 when it must be asked. */
static int read_step(const char *line, const char *end, int64_t *step, double *cols) {
    const char *s = line;
    for (;; s += 5) {
        s = memmem(s, (size_t)(end - s), "step:", 5);
        if (!s)
            return 0;
        if (s == line || !(is_word(s[-1]) && !is_digit(s[-1])))
            break;
    }
    const char *p = s + 5;
    while (p < end && is_blank(*p))
        p++;
    const char *d = p;
    int64_t value = 0;
    while (p < end && is_digit(*p) && p - d < MAX_STEP_DIGITS)
        value = value * 10 + (*p++ - '0');
    if (p == d || p >= end || !is_blank(*p))
        return 0; /* no digits, too many, or not followed by a blank */
    while (p < end && is_blank(*p))
        p++;
    *step = value;
    for (int k = 0; k < N_FIELDS; k++) {
        const char *at = NULL, *after = NULL;
        for (int a = 0; a < 2 && FIELDS[k].labels[a]; a++) {
            const char *found = labelled(p, end, FIELDS[k].labels[a]);
            if (found && (!at || found < at)) {
                at = found;
                after = found + strlen(FIELDS[k].labels[a]);
            }
        }
        cols[k] = NAN;
        if (at && !field_value(after, end, FIELDS[k].unit, &cols[k]))
            return 0;
    }
    return 1;
}

typedef struct {
    int64_t *at, *step;
    double *cols; /* N_FIELDS columns of `stride` rows each */
    int64_t *ask_idx, *ask_start, *ask_end;
    Py_ssize_t n, n_ask, stride;
    int bailed; /* 1: declined (not sure), -1: out of memory */
} out_t;

static void scan_text(const char *text, Py_ssize_t len, const char **also, const Py_ssize_t *also_len, int n_also,
                      Py_ssize_t max_line, out_t *o) {
    Py_ssize_t i = 0;
    double cols[N_FIELDS];
    for (const char *line = text, *end = text + len; line < end; i++) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *stop = nl ? nl : end;
        size_t n = (size_t)(stop - line);
        if ((Py_ssize_t)n > max_line) {
            o->bailed = 1;
            return;
        }
        int ask = 0;
        if (memmem(line, n, "step:", 5)) {
            int64_t step;
            if (!memmem(line, n, "validat", 7) && read_step(line, stop, &step, cols)) {
                o->at[o->n] = i;
                o->step[o->n] = step;
                for (int k = 0; k < N_FIELDS; k++)
                    o->cols[(Py_ssize_t)k * o->stride + o->n] = cols[k];
                o->n++;
            } else {
                ask = 1;
            }
        } else {
            for (int k = 0; k < n_also && !ask; k++)
                ask = memmem(line, n, also[k], (size_t)also_len[k]) != NULL;
        }
        if (ask) {
            o->ask_idx[o->n_ask] = i;
            o->ask_start[o->n_ask] = line - text;
            o->ask_end[o->n_ask] = stop - text;
            o->n_ask++;
        }
        line = nl ? nl + 1 : end;
    }
}

static PyObject *bytes_of(const void *a, Py_ssize_t n) { return PyBytes_FromStringAndSize((const char *)a, n); }

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *text_obj, *also_obj;
    Py_ssize_t max_line;
    (void)self;
    if (!PyArg_ParseTuple(args, "UO!n", &text_obj, &PyTuple_Type, &also_obj, &max_line))
        return NULL;
    int n_also = (int)PyTuple_GET_SIZE(also_obj);
    if (n_also > MAX_ALSO) {
        PyErr_SetString(PyExc_ValueError, "too many literals");
        return NULL;
    }
    const char *also[MAX_ALSO];
    Py_ssize_t also_len[MAX_ALSO];
    for (int k = 0; k < n_also; k++) {
        PyObject *item = PyTuple_GET_ITEM(also_obj, k);
        if (!PyUnicode_Check(item) || !PyUnicode_IS_ASCII(item) || PyUnicode_GET_LENGTH(item) == 0) {
            PyErr_SetString(PyExc_ValueError, "the literals must be non-empty ASCII strings");
            return NULL;
        }
        also[k] = (const char *)PyUnicode_DATA(item);
        also_len[k] = PyUnicode_GET_LENGTH(item);
    }
    if (!PyUnicode_IS_ASCII(text_obj))
        Py_RETURN_NONE;
    const char *text = (const char *)PyUnicode_DATA(text_obj);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text_obj);
    if (memchr(text, '\r', (size_t)len))
        Py_RETURN_NONE;
    out_t o;
    memset(&o, 0, sizeof o);
    Py_ssize_t cap = 1;
    PyObject *result = NULL;
    Py_BEGIN_ALLOW_THREADS
    for (const char *p = text, *end = text + len; p < end && (p = memchr(p, '\n', (size_t)(end - p))); p++)
        cap++;
    o.stride = cap;
    o.at = malloc((size_t)cap * 8);
    o.step = malloc((size_t)cap * 8);
    o.cols = malloc((size_t)cap * 8 * N_FIELDS);
    o.ask_idx = malloc((size_t)cap * 8);
    o.ask_start = malloc((size_t)cap * 8);
    o.ask_end = malloc((size_t)cap * 8);
    if (o.at && o.step && o.cols && o.ask_idx && o.ask_start && o.ask_end)
        scan_text(text, len, also, also_len, n_also, max_line, &o);
    else
        o.bailed = -1;
    Py_END_ALLOW_THREADS
    if (o.bailed < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (o.bailed) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    PyObject *asked = PyList_New(o.n_ask), *cols = PyList_New(N_FIELDS);
    if (!asked || !cols) {
        Py_XDECREF(asked), Py_XDECREF(cols);
        goto done;
    }
    for (Py_ssize_t k = 0; k < o.n_ask; k++) {
        PyObject *line = PyUnicode_Substring(text_obj, o.ask_start[k], o.ask_end[k]);
        if (!line) {
            Py_DECREF(asked), Py_DECREF(cols);
            goto done;
        }
        PyList_SET_ITEM(asked, k, line);
    }
    for (int k = 0; k < N_FIELDS; k++)
        PyList_SET_ITEM(cols, k, bytes_of(o.cols + (Py_ssize_t)k * o.stride, o.n * 8));
    result = Py_BuildValue("NNNNN", bytes_of(o.at, o.n * 8), bytes_of(o.step, o.n * 8), cols,
                           bytes_of(o.ask_idx, o.n_ask * 8), asked);
done:
    free(o.at), free(o.step), free(o.cols), free(o.ask_idx), free(o.ask_start), free(o.ask_end);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text, also, max_line) -> (at, step, columns, asked_at, asked_lines) | None (see titan_scan.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "titan_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_titan_scan(void) { return PyModule_Create(&module); }
