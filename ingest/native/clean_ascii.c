/* A block of a log as text, in one pass without the GIL, when it is plain ASCII: nothing to decode or clean.
 *
 * ingest/text.py defines a chunk's text: UTF-8 decoded with replacement, ANSI escapes and NULs removed. For a
 * block with no byte >= 0x80, no NUL and no ESC (0x1b), that is the bytes themselves, so they are copied
 * straight into a new ASCII str while its newlines are counted; any other block returns None and Python's
 * path (decode, clean_text) reads it. Four passes holding the GIL (decode, two searches, count) become one
 * that lets the other reader thread run.
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

/* Copies src to dst; returns the number of '\n' bytes, or -1 at a byte >= 0x80, a NUL or an ESC. Newlines are
 * tallied per byte lane (0 or 1 per word) and summed every 255 words, before a lane could overflow. */
static Py_ssize_t copy_counting_newlines(const unsigned char *src, unsigned char *dst, Py_ssize_t n) {
    Py_ssize_t newlines = 0, i = 0;
    while (i + 8 <= n) {
        uint64_t lanes = 0;
        for (int k = 0; k < 255 && i + 8 <= n; k++, i += 8) {
            uint64_t v;
            memcpy(&v, src + i, 8);
            if ((v & HIGHS) | zero_bytes(v) | zero_bytes(v ^ (0x1bULL * ONES)))
                return -1;
            lanes += zero_bytes(v ^ (0x0aULL * ONES)) >> 7;
            memcpy(dst + i, &v, 8);
        }
        for (int b = 0; b < 8; b++)
            newlines += (Py_ssize_t)((lanes >> (8 * b)) & 0xff);
    }
    for (; i < n; i++) {
        unsigned char c = src[i];
        if (c >= 0x80 || c == 0 || c == 0x1b)
            return -1;
        newlines += c == '\n';
        dst[i] = c;
    }
    return newlines;
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
    Py_ssize_t n = view.len, newlines;
    Py_BEGIN_ALLOW_THREADS
    newlines = copy_counting_newlines(src, dst, n);
    Py_END_ALLOW_THREADS
    Py_ssize_t lines = n == 0 ? 0 : newlines + (src[n - 1] != '\n');
    PyBuffer_Release(&view);
    if (newlines < 0) {
        Py_DECREF(str);
        Py_RETURN_NONE;
    }
    return Py_BuildValue("Nn", str, lines);
}

static PyMethodDef methods[] = {
    {"text", text, METH_O,
     "text(block) -> (str, number of lines) for a block of plain ASCII without NUL or ESC; None otherwise"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "clean_ascii", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_clean_ascii(void) { return PyModule_Create(&module); }
