/* MLPerf `:::MLLOG {json}` step events read in one pass over a chunk's text, without the GIL.
 *
 * json.loads (the parser's slow path, ingest/parsers/mlperf.py) is the definition; this scanner takes a line only
 * where it is sure json.loads reads the same event, and hands every other line back ("asks"):
 *   taken  a `tracked_stats` event whose value is an object, or a `train_loss` event whose value is a number, null
 *          or absent; strict JSON throughout (no escapes in strings, no NaN/Infinity, nesting at most MAX_DEPTH,
 *          numbers of at most MAX_NUMBER characters that convert to a finite double); the fields a step needs
 *          (VALUE_KEYS, META_KEYS of _mllog.py) numbers or null; a repeated key counts last, as json.loads does
 *   asked  any other line holding ":::" or one of the `also` literals, returned with its position and text
 * It gives up on the whole chunk (returns None) when the text is not ASCII, holds a carriage return, or a line is
 * longer than max_line: the caller then reads the chunk's lines in Python.
 * A number converts with strtod, correctly rounded as Python's float() is (an integer too: float(int) rounds the
 * same way). A null or absent field is NaN in the columns; the caller turns NaN into null.
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

#define MAX_DEPTH 32
#define MAX_NUMBER 40
#define N_COLS 7 /* st, loss, thr, mem, step_raw, samples, lr: EVENT_SCHEMA's float columns in order */

static const char MARKER[] = ":::MLLOG ";
enum { C_ST, C_LOSS, C_THR, C_MEM, C_STEP, C_SAMPLES, C_LR };
enum vkind { V_ABSENT, V_NULL, V_NUMBER, V_OBJECT, V_OTHER };

typedef struct {
    const char *p, *end;
    int ok;
} cursor_t;

typedef struct {
    const char *key; /* the "key" string's bytes, or NULL */
    Py_ssize_t key_len;
    int value_kind;
    double value_number;
    double col[N_COLS];
    int meta_other; /* metadata present and neither an object nor null */
} event_t;

static void ws(cursor_t *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
        c->p++;
}

static int eat(cursor_t *c, char ch) {
    ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A string without escapes or control characters: its bytes between the quotes. */
static int string(cursor_t *c, const char **s, Py_ssize_t *n) {
    ws(c);
    if (c->p >= c->end || *c->p != '"')
        return c->ok = 0;
    const char *start = ++c->p;
    while (c->p < c->end && *c->p != '"') {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '\\' || ch < 0x20 || ch > 0x7e)
            return c->ok = 0;
        c->p++;
    }
    if (c->p >= c->end)
        return c->ok = 0;
    *s = start;
    *n = c->p - start;
    c->p++;
    return 1;
}

/* A JSON number (RFC 8259 grammar), converted; refused when long or not finite. */
static int number(cursor_t *c, double *out) {
    ws(c);
    const char *s = c->p, *q = s;
    if (q < c->end && *q == '-')
        q++;
    if (q >= c->end)
        return c->ok = 0;
    if (*q == '0')
        q++;
    else if (*q >= '1' && *q <= '9')
        while (q < c->end && *q >= '0' && *q <= '9')
            q++;
    else
        return c->ok = 0;
    if (q < c->end && *q == '.') {
        q++;
        if (q >= c->end || *q < '0' || *q > '9')
            return c->ok = 0;
        while (q < c->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < c->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < c->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= c->end || *q < '0' || *q > '9')
            return c->ok = 0;
        while (q < c->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q - s > MAX_NUMBER)
        return c->ok = 0;
    char buf[MAX_NUMBER + 1];
    memcpy(buf, s, (size_t)(q - s));
    buf[q - s] = '\0';
    double v = strtod(buf, NULL);
    if (!isfinite(v))
        return c->ok = 0;
    *out = v;
    c->p = q;
    return 1;
}

static int literal(cursor_t *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
        return c->ok = 0;
    c->p += n;
    return 1;
}

static int skip_value(cursor_t *c, int depth);

static int skip_container(cursor_t *c, int depth, char close, int keyed) {
    if (depth > MAX_DEPTH)
        return c->ok = 0;
    if (eat(c, close))
        return 1;
    do {
        if (keyed) {
            const char *s;
            Py_ssize_t n;
            if (!string(c, &s, &n) || !eat(c, ':'))
                return c->ok = 0;
        }
        if (!skip_value(c, depth + 1))
            return 0;
    } while (eat(c, ','));
    return eat(c, close) ? 1 : (c->ok = 0);
}

/* Any JSON value, checked and passed over; its kind for the caller. */
static int skip_value(cursor_t *c, int depth) {
    ws(c);
    if (c->p >= c->end)
        return c->ok = 0;
    const char *s;
    Py_ssize_t n;
    double v;
    switch (*c->p) {
    case '{':
        c->p++;
        return skip_container(c, depth, '}', 1);
    case '[':
        c->p++;
        return skip_container(c, depth, ']', 0);
    case '"':
        return string(c, &s, &n);
    case 't':
        return literal(c, "true");
    case 'f':
        return literal(c, "false");
    case 'n':
        return literal(c, "null");
    default:
        return number(c, &v);
    }
}

/* A field a step needs: a number or null (NaN); anything else refuses the line. */
static int field_number(cursor_t *c, double *out) {
    ws(c);
    if (c->p < c->end && *c->p == 'n') {
        *out = NAN;
        return literal(c, "null");
    }
    return number(c, out);
}

static int is(const char *s, Py_ssize_t n, const char *word) {
    return (size_t)n == strlen(word) && memcmp(s, word, (size_t)n) == 0;
}

/* An object whose members named in `names` fill out[] (numbers or null, the last of a repeated name counts). */
static int fields_object(cursor_t *c, const char *const *names, double *out, int n_names) {
    for (int k = 0; k < n_names; k++)
        out[k] = NAN;
    if (eat(c, '}'))
        return 1;
    do {
        const char *s;
        Py_ssize_t n;
        if (!string(c, &s, &n) || !eat(c, ':'))
            return c->ok = 0;
        int k = 0;
        while (k < n_names && !is(s, n, names[k]))
            k++;
        if (k < n_names ? !field_number(c, &out[k]) : !skip_value(c, 2))
            return 0;
    } while (eat(c, ','));
    return eat(c, '}') ? 1 : (c->ok = 0);
}

static const char *const VALUE_NAMES[] = {"train_step_time", "reduced_train_loss", "throughput", "max_memory_usage"};
static const char *const META_NAMES[] = {"step", "samples_count", "lr"};

static int member(cursor_t *c, event_t *e, const char *s, Py_ssize_t n) {
    if (is(s, n, "key")) {
        ws(c);
        if (c->p < c->end && *c->p == '"')
            return string(c, &e->key, &e->key_len);
        e->key = NULL; /* not a string: the line is asked (json.loads decides what it means) */
        return skip_value(c, 1);
    }
    if (is(s, n, "value")) {
        ws(c);
        if (c->p >= c->end)
            return c->ok = 0;
        for (int k = C_ST; k <= C_MEM; k++)
            e->col[k] = NAN;
        if (*c->p == '{') {
            c->p++;
            e->value_kind = V_OBJECT;
            return fields_object(c, VALUE_NAMES, &e->col[C_ST], 4);
        }
        if (*c->p == 'n') {
            e->value_kind = V_NULL;
            return literal(c, "null");
        }
        if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) {
            e->value_kind = V_NUMBER;
            return number(c, &e->value_number);
        }
        e->value_kind = V_OTHER;
        return skip_value(c, 1);
    }
    if (is(s, n, "metadata")) {
        ws(c);
        if (c->p < c->end && *c->p == '{') {
            c->p++;
            e->meta_other = 0;
            return fields_object(c, META_NAMES, &e->col[C_STEP], 3);
        }
        for (int k = C_STEP; k <= C_LR; k++)
            e->col[k] = NAN;
        e->meta_other = !(c->p < c->end && *c->p == 'n');
        return skip_value(c, 1);
    }
    return skip_value(c, 1);
}

/* 1 and the event's columns when the line is a step event read whole; 0 when it must be asked. */
static int read_event(const char *p, const char *end, event_t *e, int *tracked) {
    cursor_t c = {p, end, 1};
    memset(e, 0, sizeof *e);
    for (int k = 0; k < N_COLS; k++)
        e->col[k] = NAN;
    if (!eat(&c, '{'))
        return 0;
    if (!eat(&c, '}')) {
        do {
            const char *s;
            Py_ssize_t n;
            if (!string(&c, &s, &n) || !eat(&c, ':') || !member(&c, e, s, n))
                return 0;
        } while (eat(&c, ','));
        if (!eat(&c, '}'))
            return 0;
    }
    ws(&c);
    if (!c.ok || c.p != end || !e->key || e->meta_other)
        return 0;
    if (is(e->key, e->key_len, "tracked_stats") && e->value_kind == V_OBJECT) {
        *tracked = 1;
        return 1;
    }
    if (is(e->key, e->key_len, "train_loss") && e->value_kind <= V_NUMBER) {
        for (int k = C_ST; k <= C_MEM; k++)
            e->col[k] = NAN;
        e->col[C_LOSS] = e->value_kind == V_NUMBER ? e->value_number : NAN;
        *tracked = 0;
        return 1;
    }
    return 0;
}

typedef struct {
    int64_t *at;
    uint8_t *tracked;
    double *cols; /* N_COLS columns of `stride` rows each */
    asked_t asked;
    Py_ssize_t n, stride, n_lines;
    int bailed; /* 1: declined (not sure), -1: out of memory */
} out_t;

static void scan_text(const char *text, Py_ssize_t len, const literals_t *also, Py_ssize_t max_line, out_t *o) {
    Py_ssize_t i = 0;
    for (const char *line = text, *end = text + len; line < end; i++) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        const char *stop = nl ? nl : end;
        size_t n = (size_t)(stop - line);
        if ((Py_ssize_t)n > max_line) {
            o->bailed = 1;
            return;
        }
        const char *mark = memmem(line, n, MARKER, sizeof MARKER - 1);
        event_t e;
        int tracked = 0;
        if (mark && read_event(mark + sizeof MARKER - 1, stop, &e, &tracked)) {
            o->at[o->n] = i;
            o->tracked[o->n] = (uint8_t)tracked;
            for (int k = 0; k < N_COLS; k++)
                o->cols[(Py_ssize_t)k * o->stride + o->n] = e.col[k];
            o->n++;
        } else if (mark || memmem(line, n, ":::", 3) || has_literal(line, n, also)) {
            asked_add(&o->asked, i, line - text, stop - text);
        }
        line = nl ? nl + 1 : end;
    }
    o->n_lines = i;
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
    o.tracked = malloc((size_t)cap);
    o.cols = malloc((size_t)cap * 8 * N_COLS);
    if (asked_alloc(&o.asked, cap) && o.at && o.tracked && o.cols)
        scan_text(text, len, &also, max_line, &o);
    else
        o.bailed = -1;
    Py_END_ALLOW_THREADS
    if (o.bailed)
        result = not_scanned(o.bailed);
    else
        result = Py_BuildValue("nNNNN", o.n_lines, bytes_of(o.at, o.n * 8), bytes_of(o.tracked, o.n),
                               column_bytes(o.cols, N_COLS, o.stride, o.n), asked_result(text_obj, &o.asked));
    free(o.at), free(o.tracked), free(o.cols), asked_free(&o.asked);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text, also, max_line) -> (n_lines, at, tracked, columns, (asked_at, asked_lines)) | None "
     "(see mllog_scan.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "mllog_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_mllog_scan(void) { return PyModule_Create(&module); }
