/* The TFRecord records of a TensorBoard event file walked in one pass, their scalar Events stored as Python would.
 *
 * The definition is the Python reader in ingest/parsers/_tfrecord.py and TensorBoardParser._event (the tensorboard
 * package's protobuf). walk() goes over the whole records of a buffer from `at` and only answers where it is sure to
 * agree; it stops, leaving the record at the returned offset to Python, at anything else:
 *   - a record not whole in the buffer, a length failing its masked CRC32C, a length over max_record: Python reads
 *     (or refills, or reports) that record exactly as without this walk, so its problem messages stay its own;
 *   - a record that names a wanted tag (the bytes 0x0a, length, tag anywhere in the payload, as _WANTED.search
 *     finds them) and is not an Event of exactly this shape: wall_time (field 1, fixed64), step (field 2, a varint
 *     of at most 9 bytes: 0 <= step < 2**63), summary (field 5), each at most once, nothing else; the summary only
 *     values (field 1), each a tag (field 1) among the first len(columns) wanted tags and a simple_value (field 2,
 *     float), each once. A tensor scalar (TF2 writers), a text summary, an unknown tag, a negative step, an
 *     overlong key, a repeated field or a malformed message: Python decodes it (and says what is wrong with it).
 * A record naming no wanted tag is counted (skipped) and never decoded, as in Python. A sure record's values go
 * into `pending` as _event puts them: pending.setdefault(step, {})[column] = float(value) * factor, in order, (with the
 * step's first wall time as "_wall_s"; a `... vs samples` copy, column "_consumed", goes to consumed[value] = step)
 * counts[tag] += 1 (int64 per column). The walk also stops after a record that leaves more than max_pending steps
 * pending, so that the caller flushes at the same record as Python does.
 * Returns (offset reached, records numbered so far, records skipped in this walk). Holds the GIL (it fills dicts).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_TAGS 512
#define MAX_VALUES 32
#define HEADER 12

typedef struct {
    const char *text;
    Py_ssize_t len;
    PyObject *column; /* borrowed: the STEP_SCHEMA column a sure tag fills; NULL for the other wanted tags */
    double factor;
    int consumed; /* column "_consumed": a `... vs samples` copy, whose step is the samples consumed so far */
    int next; /* the next tag of the same length, -1 at the end */
} tag_t;

typedef struct {
    tag_t tag[MAX_TAGS];
    int n;
    int by_len[256]; /* the first tag of each length, -1 when none */
} spec_t;

typedef struct {
    uint64_t step;
    double wall; /* 0 when the Event has none */
    int n;
    int tag[MAX_VALUES];
    double value[MAX_VALUES];
} event_t;

static uint32_t crc_table[256];

static void init_crc_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[i] = c;
    }
}

/* TFRecord's masked CRC32C (tensorboard's masked_crc32c). */
static uint32_t masked_crc32c(const unsigned char *p, size_t n) {
    uint32_t c = 0xffffffffu;
    while (n--)
        c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    c ^= 0xffffffffu;
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint64_t le64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A varint of at most max_bytes bytes ending before end; 0 when longer or cut. */
static int varint(const unsigned char **pp, const unsigned char *end, int max_bytes, uint64_t *out) {
    const unsigned char *p = *pp;
    uint64_t v = 0;
    for (int i = 0; i < max_bytes && p < end; i++) {
        unsigned char c = *p++;
        v |= (uint64_t)(c & 0x7f) << (7 * i);
        if (!(c & 0x80)) {
            *pp = p;
            *out = v;
            return 1;
        }
    }
    return 0;
}

static int find_tag(const spec_t *s, const unsigned char *text, uint64_t len) {
    if (len > 255)
        return -1;
    for (int t = s->by_len[len]; t >= 0; t = s->tag[t].next)
        if (memcmp(text, s->tag[t].text, (size_t)len) == 0)
            return t;
    return -1;
}

/* Whether any wanted tag's wire bytes (0x0a, its length, it) lie in p[0:n]: _WANTED.search(payload) is not None. */
static int is_wanted(const spec_t *s, const unsigned char *p, Py_ssize_t n) {
    const unsigned char *end = p + n, *q = p;
    while (end - q >= 2 && (q = memchr(q, 0x0a, (size_t)(end - q - 1))) != NULL) {
        uint64_t len = q[1];
        if ((uint64_t)(end - q - 2) >= len && find_tag(s, q + 2, len) >= 0)
            return 1;
        q++;
    }
    return 0;
}

/* One Summary.Value holding a sure tag and a simple_value; 0 otherwise. */
static int decode_value(const spec_t *s, const unsigned char *v, const unsigned char *end, event_t *ev) {
    const unsigned char *tag = NULL;
    uint64_t tag_len = 0;
    int has_value = 0;
    uint32_t bits = 0;
    while (v < end) {
        unsigned char key = *v++;
        if (key == 0x0a) {
            if (tag || !varint(&v, end, 5, &tag_len) || tag_len > (uint64_t)(end - v))
                return 0;
            tag = v;
            v += tag_len;
        } else if (key == 0x15) {
            if (has_value || end - v < 4)
                return 0;
            has_value = 1;
            bits = le32(v);
            v += 4;
        } else {
            return 0;
        }
    }
    if (!tag || !has_value || ev->n == MAX_VALUES)
        return 0;
    int t = find_tag(s, tag, tag_len);
    if (t < 0 || s->tag[t].column == NULL)
        return 0;
    float f;
    memcpy(&f, &bits, 4);
    ev->tag[ev->n] = t;
    ev->value[ev->n] = (double)f;
    ev->n++;
    return 1;
}

/* An Event of the one shape read here (see the head of this file); 0 for Python to decode. */
static int decode_event(const spec_t *s, const unsigned char *p, Py_ssize_t n, event_t *ev) {
    const unsigned char *end = p + n, *summary = NULL, *summary_end = NULL;
    int seen_wall = 0, seen_step = 0;
    ev->step = 0;
    ev->wall = 0.0;
    ev->n = 0;
    while (p < end) {
        unsigned char key = *p++;
        if (key == 0x09) {
            if (seen_wall || end - p < 8)
                return 0;
            seen_wall = 1;
            memcpy(&ev->wall, p, 8); /* little-endian IEEE double, as on every machine this builds for */
            p += 8;
        } else if (key == 0x10) {
            if (seen_step || !varint(&p, end, 9, &ev->step))
                return 0;
            seen_step = 1;
        } else if (key == 0x2a) {
            uint64_t len;
            if (summary || !varint(&p, end, 5, &len) || len > (uint64_t)(end - p))
                return 0;
            summary = p;
            summary_end = p + len;
            p += len;
        } else {
            return 0;
        }
    }
    for (p = summary; p && p < summary_end;) {
        uint64_t len;
        if (*p++ != 0x0a || !varint(&p, summary_end, 5, &len) || len > (uint64_t)(summary_end - p))
            return 0;
        if (!decode_value(s, p, p + len, ev))
            return 0;
        p += len;
    }
    return 1;
}

/* The row of the last step stored in this walk: a writer puts each tag of a step in an Event of its own. Within one
 * walk, pending only grows, so the row stays in it (borrowed). */
typedef struct {
    uint64_t step;
    PyObject *row;
} last_t;

static PyObject *wall_key, *consumed_key; /* "_wall_s": a row's first event's wall time, as TensorBoardParser._event keeps it */

/* consumed[value] = step for each `... vs samples` value (TensorBoardParser._other); 1 when the event holds only
 * those, 0 when it holds others too, -1 with an exception set. */
static int store_consumed(const spec_t *s, const event_t *ev, PyObject *consumed) {
    int others = 0;
    for (int i = 0; i < ev->n; i++) {
        const tag_t *t = &s->tag[ev->tag[i]];
        if (!t->consumed) {
            others = 1;
            continue;
        }
        PyObject *value = PyFloat_FromDouble(ev->value[i]), *step = PyFloat_FromDouble((double)ev->step);
        int bad = !value || !step || PyDict_SetItem(consumed, value, step) < 0;
        Py_XDECREF(value);
        Py_XDECREF(step);
        if (bad)
            return -1;
    }
    return others ? 0 : 1;
}

/* pending.setdefault(step, {})[column] = value * factor for each value, in order, and the row's "_wall_s" set from
 * the first of its events that has a wall time; -1 with an exception set. */
static int store(const spec_t *s, const event_t *ev, PyObject *pending, int64_t *counts, last_t *last) {
    PyObject *row = last->row;
    if (!row || last->step != ev->step) {
        PyObject *key = PyLong_FromUnsignedLongLong(ev->step);
        if (!key)
            return -1;
        row = PyDict_GetItemWithError(pending, key); /* borrowed */
        if (!row) {
            if (PyErr_Occurred() || !(row = PyDict_New()) || PyDict_SetItem(pending, key, row) < 0) {
                Py_XDECREF(row);
                Py_DECREF(key);
                return -1;
            }
            Py_DECREF(row); /* pending holds it */
        }
        Py_DECREF(key);
        last->step = ev->step;
        last->row = row;
    }
    for (int i = 0; i < ev->n; i++) {
        const tag_t *t = &s->tag[ev->tag[i]];
        if (t->consumed)
            continue;
        PyObject *x = PyFloat_FromDouble(ev->value[i] * t->factor);
        if (!x || PyDict_SetItem(row, t->column, x) < 0) {
            Py_XDECREF(x);
            return -1;
        }
        Py_DECREF(x);
        counts[ev->tag[i]]++;
    }
    if (ev->wall != 0.0) {
        int has = PyDict_Contains(row, wall_key);
        if (has < 0)
            return -1;
        if (!has) {
            PyObject *w = PyFloat_FromDouble(ev->wall);
            if (!w || PyDict_SetItem(row, wall_key, w) < 0) {
                Py_XDECREF(w);
                return -1;
            }
            Py_DECREF(w);
        }
    }
    return 0;
}

/* wanted: tuple of tag bytes; columns: tuple of (column str, factor) for wanted[0:len(columns)]. */
static int read_spec(PyObject *wanted, PyObject *columns, spec_t *s) {
    Py_ssize_t n = PyTuple_GET_SIZE(wanted), n_sure = PyTuple_GET_SIZE(columns);
    if (n > MAX_TAGS || n_sure > n) {
        PyErr_SetString(PyExc_ValueError, "too many tags, or more columns than tags");
        return -1;
    }
    for (int i = 0; i < 256; i++)
        s->by_len[i] = -1;
    s->n = (int)n;
    for (Py_ssize_t i = n - 1; i >= 0; i--) {
        tag_t *t = &s->tag[i];
        PyObject *text = PyTuple_GET_ITEM(wanted, i);
        if (!PyBytes_Check(text) || PyBytes_GET_SIZE(text) > 255) {
            PyErr_SetString(PyExc_TypeError, "each wanted tag is bytes of at most 255");
            return -1;
        }
        t->text = PyBytes_AS_STRING(text);
        t->len = PyBytes_GET_SIZE(text);
        t->column = NULL;
        t->factor = 1.0;
        t->consumed = 0;
        if (i < n_sure) {
            PyObject *pair = PyTuple_GET_ITEM(columns, i);
            if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))) {
                PyErr_SetString(PyExc_TypeError, "each column is (str, float)");
                return -1;
            }
            t->column = PyTuple_GET_ITEM(pair, 0);
            t->factor = PyFloat_AsDouble(PyTuple_GET_ITEM(pair, 1));
            if (t->factor == -1.0 && PyErr_Occurred())
                return -1;
            int is_consumed = PyUnicode_Compare(t->column, consumed_key);
            if (is_consumed == -1 && PyErr_Occurred())
                return -1;
            t->consumed = is_consumed == 0;
        }
        t->next = s->by_len[t->len];
        s->by_len[t->len] = (int)i;
    }
    return 0;
}

static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *wanted, *columns, *pending, *consumed;
    Py_ssize_t max_pending, at;
    unsigned long long max_record;
    long long number;
    Py_buffer counts_buf, buf;
    if (!PyArg_ParseTuple(args, "O!O!O!O!nKw*y*nL", &PyTuple_Type, &wanted, &PyTuple_Type, &columns, &PyDict_Type,
                          &pending, &PyDict_Type, &consumed, &max_pending, &max_record, &counts_buf, &buf, &at,
                          &number))
        return NULL;
    PyObject *result = NULL;
    spec_t *s = PyMem_Malloc(sizeof(spec_t));
    if (!s) {
        PyErr_NoMemory();
        goto done;
    }
    if (read_spec(wanted, columns, s) < 0)
        goto done;
    if (counts_buf.len < (Py_ssize_t)(8 * PyTuple_GET_SIZE(columns)) || at < 0 || at > buf.len) {
        PyErr_SetString(PyExc_ValueError, "counts too short for the columns, or `at` outside the buffer");
        goto done;
    }
    int64_t *counts = counts_buf.buf;
    const unsigned char *b = buf.buf;
    long long skipped = 0;
    event_t ev;
    last_t last = {0, NULL};
    unsigned char checked[HEADER] = {0}; /* the last header whose length passed its checksum */
    int any_checked = 0;
    while (buf.len - at >= HEADER) {
        const unsigned char *h = b + at;
        uint64_t length = le64(h);
        if (!(any_checked && memcmp(h, checked, HEADER) == 0)) {
            if (masked_crc32c(h, 8) != le32(h + 8))
                break;
            memcpy(checked, h, HEADER);
            any_checked = 1;
        }
        if (length > max_record)
            break;
        if ((uint64_t)(buf.len - at) < HEADER + length + 4)
            break;
        const unsigned char *payload = h + HEADER;
        if (!is_wanted(s, payload, (Py_ssize_t)length)) {
            skipped++, number++;
            at += HEADER + (Py_ssize_t)length + 4;
            continue;
        }
        if (!decode_event(s, payload, (Py_ssize_t)length, &ev))
            break;
        number++;
        at += HEADER + (Py_ssize_t)length + 4;
        if (ev.n) {
            int only = store_consumed(s, &ev, consumed);
            if (only < 0 || (!only && store(s, &ev, pending, counts, &last) < 0))
                goto done;
        }
        if (PyDict_GET_SIZE(pending) > max_pending)
            break;
    }
    result = Py_BuildValue("nLL", at, number, skipped);
done:
    PyMem_Free(s);
    PyBuffer_Release(&counts_buf);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS,
     "walk(wanted, columns, pending, consumed, max_pending, max_record, counts, buf, at, number) -> (at, number, "
     "skipped) "
     "(see tfrecord_scan.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tfrecord_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_tfrecord_scan(void) {
    init_crc_table();
    if (!(wall_key = PyUnicode_InternFromString("_wall_s")) || !(consumed_key = PyUnicode_InternFromString("_consumed")))
        return NULL;
    return PyModule_Create(&module);
}
