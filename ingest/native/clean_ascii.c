/* A block of a log as text, in one pass without the GIL, when it is plain ASCII: nothing to decode.
 *
 * ingest/text.py defines a chunk's text: UTF-8 decoded with replacement, NULs removed, then ANSI escapes removed
 * (clean_text: its _ANSI pattern). For a block with no byte >= 0x80 the decoded text is the bytes themselves, so
 * they are copied straight into a new ASCII str while its newlines are counted; a block that held a NUL or an
 * ESC (0x1b) is then compacted in place as clean_text would (NULs out first, then each escape the pattern
 * matches), which removes no newline. A block with a byte >= 0x80 returns None and Python's path (decode,
 * clean_text) reads it. Four passes holding the GIL (decode, two searches, count), and Python's regex over a
 * coloured log (torchtitan's step lines), become one or two that let the other reader thread run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* 0x80 in each byte of v that is zero, nothing elsewhere (exact, unlike the borrow-based test). */
static inline uint64_t zero_bytes(uint64_t v) {
    return ~(((v & ~HIGHS) + ~HIGHS) | v) & HIGHS;
}

/* Copies src to dst; returns the number of '\n' bytes, or -1 at a byte >= 0x80. *dirty is set when a NUL or an
 * ESC was copied. Newlines are tallied per byte lane (0 or 1 per word) and summed every 255 words, before a lane
 * could overflow. */
static Py_ssize_t copy_counting_newlines(const unsigned char *src, unsigned char *dst, Py_ssize_t n, int *dirty) {
    Py_ssize_t newlines = 0, i = 0;
    uint64_t odd = 0;
    while (i + 8 <= n) {
        uint64_t lanes = 0;
        for (int k = 0; k < 255 && i + 8 <= n; k++, i += 8) {
            uint64_t v;
            memcpy(&v, src + i, 8);
            if (v & HIGHS)
                return -1;
            odd |= zero_bytes(v) | zero_bytes(v ^ (0x1bULL * ONES));
            lanes += zero_bytes(v ^ (0x0aULL * ONES)) >> 7;
            memcpy(dst + i, &v, 8);
        }
        for (int b = 0; b < 8; b++)
            newlines += (Py_ssize_t)((lanes >> (8 * b)) & 0xff);
    }
    for (; i < n; i++) {
        unsigned char c = src[i];
        if (c >= 0x80)
            return -1;
        odd |= c == 0 || c == 0x1b;
        newlines += c == '\n';
        dst[i] = c;
    }
    *dirty = odd != 0;
    return newlines;
}

/* Removes the NULs of buf[0:n] in place; returns the new length. */
static Py_ssize_t drop_nuls(unsigned char *buf, Py_ssize_t n) {
    unsigned char *end = buf + n, *at = memchr(buf, 0, (size_t)n);
    if (!at)
        return n;
    unsigned char *out = at;
    for (unsigned char *p = at; p < end; p++)
        if (*p)
            *out++ = *p;
    return out - buf;
}

/* The length of the escape at s[0] (an ESC) that \x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z] matches, or 0.
 * The three classes of the first form are disjoint, so its greedy match never needs to back off. */
static Py_ssize_t escape_length(const unsigned char *s, Py_ssize_t left) {
    if (left >= 2 && s[1] == '[') {
        Py_ssize_t i = 2;
        while (i < left && ((s[i] >= '0' && s[i] <= '9') || s[i] == ';' || s[i] == '?'))
            i++;
        while (i < left && s[i] >= ' ' && s[i] <= '/')
            i++;
        if (i < left && s[i] >= '@' && s[i] <= '~')
            return i + 1;
    }
    if (left >= 3 && (s[1] == '(' || s[1] == ')')) {
        unsigned char c = s[2];
        if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
            return 3;
    }
    return 0;
}

/* Removes, left to right, each escape that escape_length matches from buf[0:n] in place; returns the new length
 * (as re.sub does: an ESC that starts no match stays, and the scan goes on from the next byte). */
static Py_ssize_t drop_escapes(unsigned char *buf, Py_ssize_t n) {
    unsigned char *end = buf + n, *at = memchr(buf, 0x1b, (size_t)n);
    if (!at)
        return n;
    unsigned char *out = at, *p = at;
    while (p < end) {
        Py_ssize_t skip = *p == 0x1b ? escape_length(p, end - p) : 0;
        if (skip) {
            p += skip;
            continue;
        }
        unsigned char *next = memchr(p + 1, 0x1b, (size_t)(end - p - 1));
        Py_ssize_t run = (next ? next : end) - p;
        memmove(out, p, (size_t)run);
        out += run;
        p += run;
    }
    return out - buf;
}

static PyObject *text(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *str = PyUnicode_New(view.len, 127);
    if (!str) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const unsigned char *src = view.buf;
    unsigned char *dst = PyUnicode_1BYTE_DATA(str); /* nobody else sees str yet: written without the GIL */
    Py_ssize_t n = view.len, kept = view.len, newlines;
    int dirty = 0;
    Py_BEGIN_ALLOW_THREADS
    newlines = copy_counting_newlines(src, dst, n, &dirty);
    if (newlines >= 0 && dirty)
        kept = drop_escapes(dst, drop_nuls(dst, n));
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (newlines < 0) {
        Py_DECREF(str);
        Py_RETURN_NONE;
    }
    if (kept < n) {
        dst[kept] = 0;
        if (PyUnicode_Resize(&str, kept) < 0)
            return NULL;
        dst = PyUnicode_1BYTE_DATA(str);
    }
    Py_ssize_t lines = kept == 0 ? 0 : newlines + (dst[kept - 1] != '\n');
    return Py_BuildValue("Nn", str, lines);
}

static PyMethodDef methods[] = {
    {"text", text, METH_O,
     "text(block) -> (str, number of lines) for a block of plain ASCII, NULs and ANSI escapes removed; None otherwise"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "clean_ascii", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_clean_ascii(void) { return PyModule_Create(&module); }
