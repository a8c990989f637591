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

#include "line_scan.h"

#define MAX_NUMBER 40
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
    asked_t asked;
    Py_ssize_t n, stride;
    int bailed; /* 1: declined (not sure), -1: out of memory */
} out_t;

static void scan_text(const char *text, Py_ssize_t len, const literals_t *also, Py_ssize_t max_line, out_t *o) {
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
        int64_t step;
        int stepish = memmem(line, n, "step:", 5) != NULL;
        if (stepish && !memmem(line, n, "validat", 7) && read_step(line, stop, &step, cols)) {
            o->at[o->n] = i;
            o->step[o->n] = step;
            for (int k = 0; k < N_FIELDS; k++)
                o->cols[(Py_ssize_t)k * o->stride + o->n] = cols[k];
            o->n++;
        } else if (stepish || has_literal(line, n, also)) {
            asked_add(&o->asked, i, line - text, stop - text);
        }
        line = nl ? nl + 1 : end;
    }
}

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *text_obj;
    Py_ssize_t max_line;
    literals_t also;
    (void)self;
    int go = scan_args(args, &text_obj, &also, &max_line);
    if (go <= 0)
        return go < 0 ? NULL : not_scanned(0);
    const char *text = (const char *)PyUnicode_DATA(text_obj);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text_obj);
    out_t o;
    memset(&o, 0, sizeof o);
    PyObject *result = NULL;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t cap = line_bound(text, len);
    o.stride = cap;
    o.at = malloc((size_t)cap * 8);
    o.step = malloc((size_t)cap * 8);
    o.cols = malloc((size_t)cap * 8 * N_FIELDS);
    if (asked_alloc(&o.asked, cap) && o.at && o.step && o.cols)
        scan_text(text, len, &also, max_line, &o);
    else
        o.bailed = -1;
    Py_END_ALLOW_THREADS
    if (o.bailed)
        result = not_scanned(o.bailed);
    else
        result = Py_BuildValue("NNNN", bytes_of(o.at, o.n * 8), bytes_of(o.step, o.n * 8),
                               column_bytes(o.cols, N_FIELDS, o.stride, o.n), asked_result(text_obj, &o.asked));
    free(o.at), free(o.step), free(o.cols), asked_free(&o.asked);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text, also, max_line) -> (at, step, columns, (asked_at, asked_lines)) | None (see titan_scan.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "titan_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_titan_scan(void) { return PyModule_Create(&module); }
