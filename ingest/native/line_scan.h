/* What the line scanners (mllog_scan.c, titan_scan.c) share: the text they accept, the literals that send a line
 * back to Python, the lines handed back (position and text), and the column buffers.
 * Included by each scanner's source; ingest/native/__init__.py rebuilds every scanner when this file changes.
 */
#ifndef PERFLEDGER_LINE_SCAN_H
#define PERFLEDGER_LINE_SCAN_H

#define MAX_LITERALS 128

typedef struct {
    const char *text[MAX_LITERALS];
    Py_ssize_t len[MAX_LITERALS];
    int n;
} literals_t;

/* The caller's literals (a tuple of non-empty ASCII str): 0, or -1 with a ValueError set. */
static int read_literals(PyObject *tuple, literals_t *out) {
    out->n = (int)PyTuple_GET_SIZE(tuple);
    if (out->n > MAX_LITERALS) {
        PyErr_SetString(PyExc_ValueError, "too many literals");
        return -1;
    }
    for (int k = 0; k < out->n; k++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, k);
        if (!PyUnicode_Check(item) || !PyUnicode_IS_ASCII(item) || PyUnicode_GET_LENGTH(item) == 0) {
            PyErr_SetString(PyExc_ValueError, "the literals must be non-empty ASCII strings");
            return -1;
        }
        out->text[k] = (const char *)PyUnicode_DATA(item);
        out->len[k] = PyUnicode_GET_LENGTH(item);
    }
    return 0;
}

static int has_literal(const char *line, size_t n, const literals_t *l) {
    for (int k = 0; k < l->n; k++)
        if (memmem(line, n, l->text[k], (size_t)l->len[k]))
            return 1;
    return 0;
}

/* Whether a scanner reads this text at all: ASCII, no carriage return (the caller's lines() strips those). */
static int plain_text(PyObject *text_obj) {
    return PyUnicode_IS_ASCII(text_obj) &&
           !memchr(PyUnicode_DATA(text_obj), '\r', (size_t)PyUnicode_GET_LENGTH(text_obj));
}

/* scan(text, also, max_line)'s arguments: 1 to scan, 0 for a text no scanner reads (None to the caller), -1 with an
 * exception set. */
static int scan_args(PyObject *args, PyObject **text_obj, literals_t *also, Py_ssize_t *max_line) {
    PyObject *also_obj;
    if (!PyArg_ParseTuple(args, "UO!n", text_obj, &PyTuple_Type, &also_obj, max_line) ||
        read_literals(also_obj, also) < 0)
        return -1;
    return plain_text(*text_obj);
}

/* What scan() returns for a declined or failed read: None, or NULL with the exception set. */
static PyObject *not_scanned(int bailed) {
    if (bailed < 0)
        return PyErr_NoMemory();
    return Py_NewRef(Py_None);
}

/* An upper bound of the text's lines: one more than its newlines. */
static Py_ssize_t line_bound(const char *text, Py_ssize_t len) {
    Py_ssize_t cap = 1;
    for (const char *p = text, *end = text + len; p < end && (p = memchr(p, '\n', (size_t)(end - p))); p++)
        cap++;
    return cap;
}

typedef struct {
    int64_t *idx, *start, *end; /* the line's position in the chunk, its first and past-last character */
    Py_ssize_t n;
} asked_t;

static int asked_alloc(asked_t *a, Py_ssize_t cap) {
    a->n = 0;
    a->idx = malloc((size_t)cap * 8);
    a->start = malloc((size_t)cap * 8);
    a->end = malloc((size_t)cap * 8);
    return a->idx && a->start && a->end;
}

static void asked_add(asked_t *a, Py_ssize_t i, Py_ssize_t start, Py_ssize_t end) {
    a->idx[a->n] = i;
    a->start[a->n] = start;
    a->end[a->n] = end;
    a->n++;
}

static void asked_free(asked_t *a) { free(a->idx), free(a->start), free(a->end); }

static PyObject *bytes_of(const void *a, Py_ssize_t n) { return PyBytes_FromStringAndSize((const char *)a, n); }

/* (positions as int64 bytes, the lines as a list of str), or NULL with an exception set. */
static PyObject *asked_result(PyObject *text_obj, const asked_t *a) {
    PyObject *lines = PyList_New(a->n);
    if (!lines)
        return NULL;
    for (Py_ssize_t k = 0; k < a->n; k++) {
        PyObject *line = PyUnicode_Substring(text_obj, a->start[k], a->end[k]);
        if (!line) {
            Py_DECREF(lines);
            return NULL;
        }
        PyList_SET_ITEM(lines, k, line);
    }
    return Py_BuildValue("NN", bytes_of(a->idx, a->n * 8), lines);
}

/* n_cols float64 columns of `stride` rows each, the first n rows of each as bytes, in a list. */
static PyObject *column_bytes(const double *cols, int n_cols, Py_ssize_t stride, Py_ssize_t n) {
    PyObject *out = PyList_New(n_cols);
    for (int k = 0; out && k < n_cols; k++) {
        PyObject *column = bytes_of(cols + (Py_ssize_t)k * stride, n * 8);
        if (!column) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, k, column);
    }
    return out;
}

#endif
