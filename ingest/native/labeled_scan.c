/* Megatron-style "label value |" lines read in one pass over a chunk's text, without the GIL.
 *
 * The definition of every value is the Polars reading in ingest/parsers/megatron.py (its regexes); this scanner
 * only answers where it is sure to agree, and says "ask the regex" (status 2) everywhere else:
 *   status 0  the label is not in the line (the regex cannot match either)
 *   status 1  the label's first occurrence is followed, up to the next "|" within WINDOW bytes, by a token of
 *             the field's shape, and the value was converted exactly (see parse_decimal)
 *   status 2  anything else: a sign, nan/inf, a wide or odd token, a spoiler spelling in the line, too many digits
 * An iteration line where the step's regex matches nowhere is left out of the iteration rows, as _segment_of
 * leaves out a row without a step (checkpoint messages name the iteration: 6% of a Megatron log's such lines).
 * It gives up on a whole chunk (returns None) when the text is not ASCII, a line is longer than max_line, or an
 * iteration line holds a "bail" literal (a field only a regex reads): the caller then reads the chunk with Polars.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_PATTERNS 64
#define MAX_FIELDS 24
#define WINDOW 64
#define MAX_PAIRS 8

enum kind { STEP_INT64 = 0, DIGITS_DOUBLE = 1, NUM_DOUBLE = 2 };
enum tail { TAIL_NONE = 0, TAIL_RATIO = 1, TAIL_OF_TOTAL = 2 };
enum role { ROLE_LABEL = 0, ROLE_SPOILER = 1, ROLE_BAIL = 2, ROLE_LAUNCH = 3, ROLE_ITERATION = 4 };

typedef struct {
    const char *text;
    Py_ssize_t len;
    int role;
    int field;     /* the field a label or spoiler belongs to; -1 otherwise */
    uint32_t tail; /* a pattern found from its colon: its last four bytes */
    int count;     /* the label of a count: every occurrence is looked at, not only the first */
} pattern_t;

typedef struct {
    int label;  /* pattern index */
    int kind, head_plus, tail, count;
} field_t;

typedef struct {
    pattern_t pat[MAX_PATTERNS];
    int n_pat;
    field_t fld[MAX_FIELDS];
    int n_fld;
    /* A pattern that ends in ':' (every label) is found from the colons of a line: ids by the byte before the
     * colon. Any other is found from where its first two bytes are: ids by first byte, and those pairs. */
    short by_before_colon[256][MAX_PATTERNS];
    short by_first[256][MAX_PATTERNS]; /* -1 ends each list */
    uint8_t starts_pair[65536 / 8];     /* bit (a | b << 8): a pattern not found from a colon starts with a, b */
    unsigned char pair_first[MAX_PAIRS], pair_second[MAX_PAIRS];
    int n_pairs;
#ifdef __SSE2__
    __m128i pair_first16[MAX_PAIRS], pair_second16[MAX_PAIRS]; /* each byte of a pair, sixteen times */
#endif
    Py_ssize_t max_line;
    int step_field; /* the field read as an int64 step "n / total" (-1: none) */
} spec_t;

typedef struct {
    int64_t *launch, *other_start, *other_end, *other_idx, *iter_idx, *iter_start, *iter_end;
    Py_ssize_t n_launch, n_other, n_iter;
    Py_ssize_t stride; /* rows per column of values, status and nonzero: the line capacity */
    unsigned char *values; /* n_fld columns of 8 bytes per iteration line */
    unsigned char *status, *nonzero;
    int bailed;
} out_t;

static const double P10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static inline int is_ws(unsigned char c) { return c == ' ' || (c >= 9 && c <= 13); }
static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* Digits from p: the integer (leading zeros skipped), how many significant digits, where they end. */
static const char *read_digits(const char *p, const char *end, uint64_t *m, int *significant) {
    while (p < end && is_digit((unsigned char)*p)) {
        unsigned d = (unsigned)(*p - '0');
        if (*m || d) {
            if (*significant < 19)
                *m = *m * 10 + d;
            (*significant)++;
        }
        p++;
    }
    return p;
}

/* An unsigned decimal as the NUM regex's numeric branches read it: \d+\.?\d*(?:[eE][-+]?\d+)? | \.\d+(...)?
 * Returns where it ends, or NULL when no branch matches at p. *exact: the double is the correctly rounded value,
 * by Clinger's fast path (an integer of at most 2^53 times or over an exact power of ten: one rounding). */
static const char *parse_decimal(const char *p, const char *end, double *value, int *exact) {
    uint64_t m = 0;
    int significant = 0, scale = 0;
    const char *int_start = p;
    p = read_digits(p, end, &m, &significant);
    int int_digits = (int)(p - int_start);
    int frac_digits = 0;
    if (p < end && *p == '.') {
        const char *frac_start = ++p;
        p = read_digits(p, end, &m, &significant);
        frac_digits = (int)(p - frac_start);
        scale = -frac_digits; /* m holds the fraction's digits after its leading zeros: 0.0012 is 12e-4 */
    }
    if (int_digits == 0 && frac_digits == 0)
        return NULL;
    long exponent = 0;
    int exp_ok = 1;
    if (p < end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        int negative = 0;
        if (q < end && (*q == '-' || *q == '+'))
            negative = *q++ == '-';
        if (q < end && is_digit((unsigned char)*q)) {
            while (q < end && is_digit((unsigned char)*q)) {
                if (exponent < 100000)
                    exponent = exponent * 10 + (*q - '0');
                else
                    exp_ok = 0;
                q++;
            }
            if (negative)
                exponent = -exponent;
            p = q;
        } /* else: "e" not followed by an exponent is not part of the number (the caller's check then fails) */
    }
    long e10 = exponent + scale;
    *exact = exp_ok && significant <= 19 && m <= (1ULL << 53) && e10 >= -22 && e10 <= 22;
    /* m dropped digits past 19 significant ones; then *exact is 0 and value unused. Trailing zeros of a
     * fraction are in m (1.000000E-04: m = 1000000, e10 = -10), which keeps m exact as long as it fits. */
    if (*exact)
        *value = e10 >= 0 ? (double)m * P10[e10] : (double)m / P10[-e10];
    return p;
}

/* The field's value in line [ls, le) given its label's first occurrence at `at`: status 1 or 2. */
static int read_field(const spec_t *s, const field_t *f, const char *at, const char *le, unsigned char *slot) {
    const char *w = at + s->pat[f->label].len;
    const char *wend = le - w > WINDOW ? w + WINDOW : le;
    const char *bar = w < wend ? memchr(w, '|', (size_t)(wend - w)) : NULL;
    if (!bar)
        return 2;
    const char *p = w;
    while (p < bar && is_ws((unsigned char)*p))
        p++;
    if (f->head_plus && p == w)
        return 2;
    if (p == bar || !(is_digit((unsigned char)*p) || (*p == '.' && f->kind == NUM_DOUBLE)))
        return 2;
    uint64_t m = 0;
    int significant = 0, exact = 0;
    double value = 0.0;
    if (f->kind == NUM_DOUBLE) {
        p = parse_decimal(p, bar, &value, &exact);
        if (!p)
            return 2;
    } else {
        p = read_digits(p, bar, &m, &significant);
        exact = f->kind == STEP_INT64 ? significant <= 18 : (significant <= 19 && m <= (1ULL << 53));
        value = (double)m;
    }
    if (f->tail == TAIL_RATIO && p < bar && *p == '/') {
        int ratio_exact;
        double ignored;
        p = parse_decimal(p + 1, bar, &ignored, &ratio_exact);
        if (!p)
            return 2;
    } else if (f->tail == TAIL_OF_TOTAL) {
        while (p < bar && is_ws((unsigned char)*p))
            p++;
        if (p == bar || *p != '/')
            return 2;
        p++;
        while (p < bar && is_ws((unsigned char)*p))
            p++;
        if (p == bar || !is_digit((unsigned char)*p))
            return 2;
        while (p < bar && is_digit((unsigned char)*p))
            p++;
    }
    while (p < bar && is_ws((unsigned char)*p))
        p++;
    if (p != bar || !exact)
        return 2;
    if (f->kind == STEP_INT64) {
        int64_t step = (int64_t)m;
        memcpy(slot, &step, 8);
    } else {
        memcpy(slot, &value, 8);
    }
    return 1;
}

/* What one pass over a line finds: where each pattern first occurs (NULL: nowhere), and for a count's label
 * whether some occurrence of it is followed by \s*[1-9] (the line states the count as non-zero). */
typedef struct {
    const char *first[MAX_PATTERNS];
    unsigned char nonzero[MAX_PATTERNS];
    int touched[MAX_PATTERNS]; /* the patterns found, in the order first found: only they are reset per line */
    int n_touched;
} found_t;

static int digit_1_to_9_after(const char *p, const char *le) {
    while (p < le && is_ws((unsigned char)*p))
        p++;
    return p < le && *p >= '1' && *p <= '9';
}

static inline void occurs(const spec_t *s, int id, const char *at, const char *le, found_t *f) {
    if (!f->first[id]) {
        f->first[id] = at;
        f->touched[f->n_touched++] = id;
    }
    if (s->pat[id].count && !f->nonzero[id])
        f->nonzero[id] = (unsigned char)digit_1_to_9_after(at + s->pat[id].len, le);
}

static inline uint32_t load4(const char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline int from_colon(const pattern_t *pt) { return pt->len >= 4 && pt->text[pt->len - 1] == ':'; }

/* The patterns that occur at p in [ls, le): those ending at a colon there, those starting there. Checked in the
 * line's order, so the first hit of each pattern is its first occurrence. */
static inline void candidates_at(const spec_t *s, const char *ls, const char *le, const char *p, found_t *f) {
    if (*p == ':' && p > ls) {
        for (const short *ids = s->by_before_colon[(unsigned char)p[-1]]; *ids >= 0; ids++) {
            const pattern_t *pt = &s->pat[*ids];
            const char *at = p + 1 - pt->len;
            if ((!f->first[*ids] || pt->count) && at >= ls && load4(p - 3) == pt->tail &&
                memcmp(at, pt->text, (size_t)pt->len - 4) == 0)
                occurs(s, *ids, at, le, f);
        }
    }
    for (const short *ids = s->by_first[(unsigned char)*p]; *ids >= 0; ids++) {
        const pattern_t *pt = &s->pat[*ids];
        if ((!f->first[*ids] || pt->count) && le - p >= pt->len && memcmp(p, pt->text, (size_t)pt->len) == 0)
            occurs(s, *ids, p, le, f);
    }
}

static inline int is_candidate(const spec_t *s, const char *p, const char *le) {
    if (*p == ':')
        return 1;
    if (p + 1 >= le)
        return 0;
    unsigned pair = (unsigned char)p[0] | (unsigned)(unsigned char)p[1] << 8;
    return (s->starts_pair[pair >> 3] >> (pair & 7)) & 1;
}

/* Where each pattern first occurs in the line (NULL: nowhere). Most bytes of a line are neither a colon nor the
 * start of a non-colon pattern: with SSE2 sixteen of them are ruled out at a time. */
static void first_occurrences(const spec_t *s, const char *ls, const char *le, found_t *f) {
    for (int k = 0; k < f->n_touched; k++) {
        f->first[f->touched[k]] = NULL;
        f->nonzero[f->touched[k]] = 0;
    }
    f->n_touched = 0;
    const char *p = ls;
#ifdef __SSE2__
    const __m128i colon = _mm_set1_epi8(':');
    for (; le - p >= 17; p += 16) {
        __m128i b0 = _mm_loadu_si128((const __m128i *)p), b1 = _mm_loadu_si128((const __m128i *)(p + 1));
        unsigned mask = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b0, colon));
        for (int k = 0; k < s->n_pairs; k++)
            mask |= (unsigned)_mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(b0, s->pair_first16[k]),
                                                               _mm_cmpeq_epi8(b1, s->pair_second16[k])));
        while (mask) {
            candidates_at(s, ls, le, p + __builtin_ctz(mask), f);
            mask &= mask - 1;
        }
    }
#endif
    for (; p < le; p++)
        if (is_candidate(s, p, le))
            candidates_at(s, ls, le, p, f);
}

/* Whether the step field's regex (label \s+ \d+ \s* / \s* \d+ \s* "|") matches at some occurrence of its label
 * in [ls, le). The classes it walks through (spaces, digits, "/", "|") are disjoint, so one greedy walk from
 * each occurrence decides, with no window: "no" is then as sure as the regex's own answer. */
static int step_anywhere(const spec_t *s, const field_t *f, const char *ls, const char *le) {
    const pattern_t *label = &s->pat[f->label];
    for (const char *at = ls; le - at >= label->len; at++) {
        if (!(at = memmem(at, (size_t)(le - at), label->text, (size_t)label->len)))
            return 0;
        const char *p = at + label->len, *q = p;
        while (q < le && is_ws((unsigned char)*q))
            q++;
        if (f->head_plus && q == p)
            continue;
        for (p = q; q < le && is_digit((unsigned char)*q); q++)
            ;
        if (q == p)
            continue;
        while (q < le && is_ws((unsigned char)*q))
            q++;
        if (q == le || *q != '/')
            continue;
        for (q++; q < le && is_ws((unsigned char)*q); q++)
            ;
        for (p = q; q < le && is_digit((unsigned char)*q); q++)
            ;
        if (q == p)
            continue;
        while (q < le && is_ws((unsigned char)*q))
            q++;
        if (q < le && *q == '|')
            return 1;
    }
    return 0;
}

/* "iteration" without a step (a checkpoint message): a row the regex leaves without a step, which _segment_of
 * drops. Kept when it states a count as non-zero: that decides how the segment's other lines read the count. */
static int stepless(const spec_t *s, const out_t *o, Py_ssize_t row, const char *ls, const char *le) {
    if (s->step_field < 0 || o->status[(Py_ssize_t)s->step_field * o->stride + row] != 2)
        return 0;
    for (int j = 0; j < s->n_fld; j++)
        if (o->nonzero[(Py_ssize_t)j * o->stride + row])
            return 0;
    return !step_anywhere(s, &s->fld[s->step_field], ls, le);
}

static void iteration_line(const spec_t *s, out_t *o, const found_t *found, const char *le, Py_ssize_t row) {
    int spoiled[MAX_FIELDS] = {0};
    for (int k = 0; k < found->n_touched; k++) {
        int i = found->touched[k];
        if (s->pat[i].role == ROLE_BAIL)
            o->bailed = 1;
        else if (s->pat[i].role == ROLE_SPOILER)
            spoiled[s->pat[i].field] = 1;
    }
    for (int j = 0; j < s->n_fld; j++) {
        const field_t *f = &s->fld[j];
        Py_ssize_t cell = (Py_ssize_t)j * o->stride + row;
        const char *at = found->first[f->label];
        unsigned char st = 0;
        if (spoiled[j]) /* another spelling of the label is in the line, with or without this one */
            st = 2;
        else if (at)
            st = (unsigned char)read_field(s, f, at, le, o->values + 8 * cell);
        o->status[cell] = st;
        o->nonzero[cell] = (unsigned char)(f->count && found->nonzero[f->label]);
    }
}

static int any_of_role(const spec_t *s, const found_t *found, int role) {
    for (int k = 0; k < found->n_touched; k++)
        if (s->pat[found->touched[k]].role == role)
            return 1;
    return 0;
}

/* Walks the lines as TextChunk.lines() splits them: on "\n", one trailing "\r" dropped, no empty last line. */
static void scan_text(const spec_t *s, const char *text, Py_ssize_t len, out_t *o) {
    const char *p = text, *end = text + len;
    found_t found;
    memset(&found, 0, sizeof found);
    Py_ssize_t line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        if (le > p && le[-1] == '\r')
            le--;
        if (le - p > s->max_line) {
            o->bailed = 1;
            break;
        }
        first_occurrences(s, p, le, &found);
        if (any_of_role(s, &found, ROLE_LAUNCH))
            o->launch[o->n_launch++] = line;
        if (any_of_role(s, &found, ROLE_ITERATION)) {
            o->iter_idx[o->n_iter] = line;
            o->iter_start[o->n_iter] = p - text;
            o->iter_end[o->n_iter] = le - text;
            iteration_line(s, o, &found, le, o->n_iter);
            if (o->bailed)
                break;
            if (!stepless(s, o, o->n_iter, p, le))
                o->n_iter++; /* else the next iteration line takes the row's place */
        } else {
            o->other_idx[o->n_other] = line;
            o->other_start[o->n_other] = p - text;
            o->other_end[o->n_other] = le - text;
            o->n_other++;
        }
        line++;
        p = next;
    }
}

static int add_pattern(spec_t *s, PyObject *bytes, int role, int field) {
    if (!PyBytes_Check(bytes) || PyBytes_GET_SIZE(bytes) < 2 || s->n_pat >= MAX_PATTERNS) {
        PyErr_SetString(PyExc_ValueError, "patterns are bytes of two or more, at most 64 of them");
        return -1;
    }
    pattern_t *pt = &s->pat[s->n_pat];
    pt->text = PyBytes_AS_STRING(bytes);
    pt->len = PyBytes_GET_SIZE(bytes);
    pt->role = role;
    pt->field = field;
    return s->n_pat++;
}

/* fields: ((label, kind, head_plus, tail, count, (spoiler, ...)), ...); bail, launch: (bytes, ...) */
static int read_spec(spec_t *s, PyObject *fields, PyObject *bail, PyObject *launch, PyObject *iter_lit,
                     Py_ssize_t max_line) {
    memset(s, 0, sizeof *s);
    s->step_field = -1;
    if (!PyTuple_Check(fields) || !PyTuple_Check(bail) || !PyTuple_Check(launch) || !PyBytes_Check(iter_lit)) {
        PyErr_SetString(PyExc_TypeError, "fields, bail and launch are tuples; the iteration literal is bytes");
        return -1;
    }
    if (PyTuple_GET_SIZE(fields) > MAX_FIELDS) {
        PyErr_SetString(PyExc_ValueError, "at most 24 fields");
        return -1;
    }
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fields); j++) {
        PyObject *label, *spoilers;
        field_t *f = &s->fld[j];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(fields, j), "SiiiiO!", &label, &f->kind, &f->head_plus, &f->tail,
                              &f->count, &PyTuple_Type, &spoilers))
            return -1;
        if ((f->label = add_pattern(s, label, ROLE_LABEL, (int)j)) < 0)
            return -1;
        s->pat[f->label].count = f->count;
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(spoilers); k++)
            if (add_pattern(s, PyTuple_GET_ITEM(spoilers, k), ROLE_SPOILER, (int)j) < 0)
                return -1;
        if (f->kind == STEP_INT64 && f->tail == TAIL_OF_TOTAL)
            s->step_field = (int)j;
        s->n_fld++;
    }
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(bail); k++)
        if (add_pattern(s, PyTuple_GET_ITEM(bail, k), ROLE_BAIL, -1) < 0)
            return -1;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(launch); k++)
        if (add_pattern(s, PyTuple_GET_ITEM(launch, k), ROLE_LAUNCH, -1) < 0)
            return -1;
    if (add_pattern(s, iter_lit, ROLE_ITERATION, -1) < 0)
        return -1;
    int fill_first[256] = {0}, fill_colon[256] = {0};
    for (int c = 0; c < 256; c++)
        s->by_first[c][0] = s->by_before_colon[c][0] = -1;
    for (int i = 0; i < s->n_pat; i++) {
        pattern_t *pt = &s->pat[i];
        if (from_colon(pt)) {
            unsigned char c = (unsigned char)pt->text[pt->len - 2];
            pt->tail = load4(pt->text + pt->len - 4);
            s->by_before_colon[c][fill_colon[c]++] = (short)i;
            s->by_before_colon[c][fill_colon[c]] = -1;
            continue;
        }
        unsigned char c = (unsigned char)pt->text[0], c2 = (unsigned char)pt->text[1];
        s->by_first[c][fill_first[c]++] = (short)i;
        s->by_first[c][fill_first[c]] = -1;
        unsigned pair = c | (unsigned)c2 << 8;
        if (!(s->starts_pair[pair >> 3] & (1u << (pair & 7)))) {
            if (s->n_pairs == MAX_PAIRS) {
                PyErr_SetString(PyExc_ValueError, "at most 8 distinct first pairs of patterns not ending in ':'");
                return -1;
            }
            s->pair_first[s->n_pairs] = c;
            s->pair_second[s->n_pairs++] = c2;
        }
        s->starts_pair[pair >> 3] |= (uint8_t)(1u << (pair & 7));
    }
#ifdef __SSE2__
    for (int k = 0; k < s->n_pairs; k++) {
        s->pair_first16[k] = _mm_set1_epi8((char)s->pair_first[k]);
        s->pair_second16[k] = _mm_set1_epi8((char)s->pair_second[k]);
    }
#endif
    s->max_line = max_line;
    return 0;
}

static PyObject *int64_bytes(const int64_t *a, Py_ssize_t n) {
    return PyBytes_FromStringAndSize((const char *)a, n * 8);
}

static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *text_obj, *fields, *bail, *launch, *iter_lit;
    Py_ssize_t max_line;
    (void)self;
    if (!PyArg_ParseTuple(args, "UO!O!O!Sn", &text_obj, &PyTuple_Type, &fields, &PyTuple_Type, &bail,
                          &PyTuple_Type, &launch, &iter_lit, &max_line))
        return NULL;
    if (!PyUnicode_IS_ASCII(text_obj))
        Py_RETURN_NONE;
    spec_t *s = malloc(sizeof *s);
    if (!s)
        return PyErr_NoMemory();
    if (read_spec(s, fields, bail, launch, iter_lit, max_line) < 0) {
        free(s);
        return NULL;
    }
    const char *text = (const char *)PyUnicode_DATA(text_obj);
    Py_ssize_t len = PyUnicode_GET_LENGTH(text_obj);
    out_t o;
    memset(&o, 0, sizeof o);
    Py_ssize_t cap = 1;
    PyObject *result = NULL;
    Py_BEGIN_ALLOW_THREADS
    for (const char *p = text, *end = text + len; p < end && (p = memchr(p, '\n', (size_t)(end - p))); p++)
        cap++;
    o.stride = cap;
    o.launch = malloc(cap * 8);
    o.other_idx = malloc(cap * 8);
    o.other_start = malloc(cap * 8);
    o.other_end = malloc(cap * 8);
    o.iter_idx = malloc(cap * 8);
    o.iter_start = malloc(cap * 8);
    o.iter_end = malloc(cap * 8);
    o.values = calloc((size_t)(cap * (s->n_fld ? s->n_fld : 1)), 8);
    o.status = malloc((size_t)(cap * (s->n_fld ? s->n_fld : 1)));
    o.nonzero = malloc((size_t)(cap * (s->n_fld ? s->n_fld : 1)));
    if (o.launch && o.other_idx && o.other_start && o.other_end && o.iter_idx && o.iter_start && o.iter_end &&
        o.values && o.status && o.nonzero)
        scan_text(s, text, len, &o);
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
    PyObject *others = PyList_New(o.n_other);
    PyObject *values = PyList_New(s->n_fld), *status = PyList_New(s->n_fld), *nonzero = PyList_New(s->n_fld);
    if (!others || !values || !status || !nonzero) {
        Py_XDECREF(others), Py_XDECREF(values), Py_XDECREF(status), Py_XDECREF(nonzero);
        goto done;
    }
    for (Py_ssize_t i = 0; i < o.n_other; i++) {
        PyObject *line = PyUnicode_Substring(text_obj, o.other_start[i], o.other_end[i]);
        if (!line) {
            Py_DECREF(others), Py_DECREF(values), Py_DECREF(status), Py_DECREF(nonzero);
            goto done;
        }
        PyList_SET_ITEM(others, i, line);
    }
    for (int j = 0; j < s->n_fld; j++) {
        Py_ssize_t at = (Py_ssize_t)j * cap;
        PyList_SET_ITEM(values, j, PyBytes_FromStringAndSize((const char *)o.values + 8 * at, o.n_iter * 8));
        PyList_SET_ITEM(status, j, PyBytes_FromStringAndSize((const char *)o.status + at, o.n_iter));
        PyList_SET_ITEM(nonzero, j, PyBytes_FromStringAndSize((const char *)o.nonzero + at, o.n_iter));
    }
    Py_ssize_t n_lines = 0;
    if (len) {
        n_lines = cap;
        if (text[len - 1] == '\n')
            n_lines--;
    }
    result = Py_BuildValue("nNNNNNNNNN", n_lines, int64_bytes(o.launch, o.n_launch),
                           int64_bytes(o.other_idx, o.n_other), others, int64_bytes(o.iter_idx, o.n_iter),
                           int64_bytes(o.iter_start, o.n_iter), int64_bytes(o.iter_end, o.n_iter), values, status,
                           nonzero);
done:
    free(o.launch), free(o.other_idx), free(o.other_start), free(o.other_end), free(o.iter_idx);
    free(o.iter_start), free(o.iter_end), free(o.values), free(o.status), free(o.nonzero);
    free(s);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(text, fields, bail, launch, iteration_literal, max_line) -> tuple | None (see labeled_scan.c)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "labeled_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_labeled_scan(void) { return PyModule_Create(&module); }
