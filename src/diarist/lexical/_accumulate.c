/* BM25 over posting blocks in one compiled pass: the compiled form of the numpy pipeline in
 * diarist/lexical/bm25.py (score_blocks), which it must match float for float.
 *
 * At a million chunks a question reaches ~300k postings. numpy spends ~10 passes over them
 * (join, positions, two gathers, four arithmetic passes, a scatter into a fresh 8 MB array and
 * a scan of it); this reads each posting once, outside the GIL, sums a block of chunk ids at a
 * time in a window that stays in cache, and writes out only the chunks that can still rank.
 *
 * Optional: the package works without it (setup.py builds it when a C compiler is present,
 * and bm25.py falls back to numpy when it is missing).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    int64_t base;            /* position of offset 0 of the block: (number << bits) - first id */
    const uint16_t *pairs;   /* (offset, term frequency), little-endian uint16 */
    Py_ssize_t count;        /* postings in the block */
    double weight;           /* the term's idf */
} Row;

/* Fills `rows` from one term's list of (block number, bytes); returns postings or -1. */
static Py_ssize_t read_rows(PyObject *term_rows, double weight, int64_t first_id, int bits,
                            Row *rows, Py_ssize_t *used) {
    Py_ssize_t total = 0;
    Py_ssize_t n_rows = PyList_GET_SIZE(term_rows);
    for (Py_ssize_t i = 0; i < n_rows; i++) {
        PyObject *row = PyList_GET_ITEM(term_rows, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 2) {
            PyErr_SetString(PyExc_TypeError, "a posting row is a (block number, bytes) tuple");
            return -1;
        }
        long long number = PyLong_AsLongLong(PyTuple_GET_ITEM(row, 0));
        if (number == -1 && PyErr_Occurred()) return -1;
        PyObject *data = PyTuple_GET_ITEM(row, 1);
        if (!PyBytes_Check(data)) {
            PyErr_SetString(PyExc_TypeError, "a posting block is bytes");
            return -1;
        }
        if (number < 0 || number > (INT64_MAX >> 17)) {
            PyErr_SetString(PyExc_ValueError, "block number out of range");
            return -1;
        }
        Row *out = &rows[(*used)++];
        out->base = ((int64_t)number << bits) - first_id;
        out->pairs = (const uint16_t *)PyBytes_AS_STRING(data);
        out->count = PyBytes_GET_SIZE(data) / 4;
        out->weight = weight;
        total += out->count;
    }
    return total;
}

/* A min-heap of the best `cap` sums so far: its least is a lower bound on the final cap-th best. */
typedef struct { double *v; Py_ssize_t size, cap; } Heap;

static void heap_offer(Heap *h, double x) {
    if (h->size < h->cap) {  /* sift up */
        Py_ssize_t i = h->size++;
        while (i > 0) {
            Py_ssize_t parent = (i - 1) / 2;
            if (h->v[parent] <= x) break;
            h->v[i] = h->v[parent];
            i = parent;
        }
        h->v[i] = x;
        return;
    }
    if (x <= h->v[0]) return;
    Py_ssize_t i = 0;  /* replace the least, sift down */
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= h->size) break;
        if (child + 1 < h->size && h->v[child + 1] < h->v[child]) child++;
        if (h->v[child] >= x) break;
        h->v[i] = h->v[child];
        i = child;
    }
    h->v[i] = x;
}

PyDoc_STRVAR(score_doc,
"score(terms, weights, first_id, bits, id_table, lengths, table, k1_plus_1, depth, positions, sums)\n"
"-> (k, bad)\n\n"
"terms: one list per term (ascending term id) of (block number, bytes) rows in ascending block\n"
"number; weights: each term's idf. A posting's chunk id is (number << bits) + offset; its\n"
"position is chunk id - first_id (id_table None) or id_table[chunk id - first_id] (int32, -1:\n"
"not held);\n"
"lengths: uint16 per position; table: float64 norm per length. Each chunk's BM25 sum is\n"
"idf * tf * k1_plus_1 / (tf + table[length]) added in term order, as numpy's bincount adds it.\n"
"Writes to positions[:k], sums[:k] every chunk reached (depth <= 0), or a superset of the\n"
"depth best that holds every chunk tied with the depth-th (depth > 0). bad: a posting lay\n"
"outside lengths or table, or blocks were out of order: the output is not to be trusted.");

/* One block of 1 << bits chunk ids at a time, every term's postings in it summed into a window
 * of that many floats (64 KiB): the sums stay in cache, where a float per chunk of the store
 * (8 MB a million chunks) was read and written at memory speed. A block's sums are final when
 * its terms are done; a heap of the depth best so far decides which are written out. */
static PyObject *score(PyObject *self, PyObject *args) {
    PyObject *terms, *weights;
    long long first_id;
    int bits;
    double k1p1;
    Py_ssize_t depth;
    PyObject *id_table_arg;
    Py_buffer lengths = {0}, table = {0}, positions = {0}, sums_out = {0}, id_table = {0};
    Row *rows = NULL;
    Py_ssize_t *term_start = NULL, *cursor = NULL;
    double *window = NULL, *best = NULL;
    uint16_t *reached = NULL;
    PyObject *result = NULL;

    if (!PyArg_ParseTuple(args, "O!O!LiOy*y*dnw*w*", &PyList_Type, &terms, &PyList_Type, &weights,
                          &first_id, &bits, &id_table_arg, &lengths, &table, &k1p1, &depth, &positions, &sums_out))
        return NULL;
    if (id_table_arg != Py_None && PyObject_GetBuffer(id_table_arg, &id_table, PyBUF_SIMPLE) < 0) goto done;
    /* None: positions are chunk id - first_id; else int32 positions per (chunk id - first_id), -1: none. */
    const int32_t *position_of = id_table_arg != Py_None ? id_table.buf : NULL;
    Py_ssize_t id_span = id_table.len / (Py_ssize_t)sizeof(int32_t);
    Py_ssize_t n = lengths.len / (Py_ssize_t)sizeof(uint16_t);
    Py_ssize_t table_n = table.len / (Py_ssize_t)sizeof(double);
    Py_ssize_t room = positions.len / (Py_ssize_t)sizeof(int64_t);
    if (sums_out.len / (Py_ssize_t)sizeof(double) < room) room = sums_out.len / (Py_ssize_t)sizeof(double);
    if (bits < 0 || bits > 16 || PyList_GET_SIZE(weights) != PyList_GET_SIZE(terms)) {
        PyErr_SetString(PyExc_ValueError, "bits out of range, or not one weight per term");
        goto done;
    }
    Py_ssize_t n_terms = PyList_GET_SIZE(terms), n_rows = 0;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        PyObject *term_rows = PyList_GET_ITEM(terms, t);
        if (!PyList_Check(term_rows)) {
            PyErr_SetString(PyExc_TypeError, "each term's rows are a list");
            goto done;
        }
        n_rows += PyList_GET_SIZE(term_rows);
    }
    Py_ssize_t span = (Py_ssize_t)1 << bits;
    rows = PyMem_Malloc(sizeof(Row) * (size_t)(n_rows + 1));
    term_start = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n_terms + 1));
    cursor = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(n_terms + 1));
    window = PyMem_Calloc((size_t)span, sizeof(double));
    reached = PyMem_Malloc(sizeof(uint16_t) * (size_t)span);
    if (!rows || !term_start || !cursor || !window || !reached) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t used = 0, total = 0;
    int bad = 0;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        double weight = PyFloat_AsDouble(PyList_GET_ITEM(weights, t));
        if (weight == -1.0 && PyErr_Occurred()) goto done;
        term_start[t] = cursor[t] = used;
        Py_ssize_t got = read_rows(PyList_GET_ITEM(terms, t), weight, (int64_t)first_id, bits, rows, &used);
        if (got < 0) goto done;
        total += got;
        for (Py_ssize_t r = term_start[t] + 1; r < used; r++)
            if (rows[r].base <= rows[r - 1].base) bad = 1;  /* the merge below needs ascending blocks */
    }
    term_start[n_terms] = used;
    if (room < total) {
        PyErr_SetString(PyExc_ValueError, "positions and sums must have room for every posting");
        goto done;
    }
    /* No more chunks can be reached than there are postings: a depth beyond that keeps all. */
    Py_ssize_t cap = depth <= 0 || depth >= total ? 0 : depth;
    best = PyMem_Malloc(sizeof(double) * (size_t)(cap > 0 ? cap : 1));
    if (!best) {
        PyErr_NoMemory();
        goto done;
    }

    const uint16_t *len_of = lengths.buf;
    const double *norm = table.buf;
    int64_t *out_positions = positions.buf;
    double *out_sums = sums_out.buf;
    Heap heap = {best, 0, cap};
    Py_ssize_t k = 0;
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        for (;;) {
            /* The next block: the least block any term has left. */
            int64_t base = INT64_MAX;
            for (Py_ssize_t t = 0; t < n_terms; t++)
                if (cursor[t] < term_start[t + 1] && rows[cursor[t]].base < base) base = rows[cursor[t]].base;
            if (base == INT64_MAX) break;
            Py_ssize_t m = 0;
            for (Py_ssize_t t = 0; t < n_terms; t++) {  /* ascending term id: numpy's order */
                if (cursor[t] >= term_start[t + 1] || rows[cursor[t]].base != base) continue;
                const Row row = rows[cursor[t]++];
                for (Py_ssize_t j = 0; j < row.count; j++) {
                    uint16_t offset = row.pairs[2 * j];
                    uint16_t tf = row.pairs[2 * j + 1];
                    int64_t p = base + offset;
                    if (position_of != NULL) p = (p >= 0 && p < id_span) ? position_of[p] : -1;
                    if (offset >= span || p < 0 || p >= n) { bad = 1; continue; }
                    uint16_t length = len_of[p];
                    if (length >= table_n) { bad = 1; continue; }
                    if (tf == 0) continue;  /* adds nothing (numpy adds 0.0: the same sum) */
                    /* The order of bm25.normed_term_scores: ((tf * idf) * (k1 + 1)) / (tf + norm). */
                    double s = (double)tf;
                    double d = norm[length] + s;
                    s = s * row.weight;
                    s = s * k1p1;
                    s = s / d;
                    double before = window[offset];
                    reached[m] = offset;  /* kept when first reached: no branch to mispredict */
                    m += (before == 0.0);
                    window[offset] = before + s;
                }
            }
            for (Py_ssize_t i = 0; i < m; i++) {  /* the block's sums are final */
                uint16_t offset = reached[i];
                double v = window[offset];
                window[offset] = 0.0;
                if (heap.cap == 0 || heap.size < heap.cap || v >= heap.v[0]) {
                    /* In range: checked when the offset was first reached. */
                    out_positions[k] = position_of != NULL ? position_of[base + offset] : base + offset;
                    out_sums[k++] = v;
                    if (heap.cap) heap_offer(&heap, v);
                }
            }
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_BuildValue("(ni)", k, bad);

done:
    PyMem_Free(rows);
    PyMem_Free(term_start);
    PyMem_Free(cursor);
    PyMem_Free(window);
    PyMem_Free(reached);
    PyMem_Free(best);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&table);
    PyBuffer_Release(&positions);
    PyBuffer_Release(&id_table);
    PyBuffer_Release(&sums_out);
    return result;
}

PyDoc_STRVAR(count_doc,
"postings_per_term(terms) -> list[int]\n\n"
"How many postings each term's (block number, bytes) rows hold (its df): the idf is\n"
"computed from these before score runs.");

static PyObject *postings_per_term(PyObject *self, PyObject *terms) {
    if (!PyList_Check(terms)) {
        PyErr_SetString(PyExc_TypeError, "terms is a list");
        return NULL;
    }
    Py_ssize_t n_terms = PyList_GET_SIZE(terms);
    PyObject *out = PyList_New(n_terms);
    if (out == NULL) return NULL;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        PyObject *term_rows = PyList_GET_ITEM(terms, t);
        if (!PyList_Check(term_rows)) {
            PyErr_SetString(PyExc_TypeError, "each term's rows are a list");
            Py_DECREF(out);
            return NULL;
        }
        Py_ssize_t count = 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(term_rows); i++) {
            PyObject *row = PyList_GET_ITEM(term_rows, i);
            if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(row, 1))) {
                PyErr_SetString(PyExc_TypeError, "a posting row is a (block number, bytes) tuple");
                Py_DECREF(out);
                return NULL;
            }
            count += PyBytes_GET_SIZE(PyTuple_GET_ITEM(row, 1)) / 4;
        }
        PyObject *value = PyLong_FromSsize_t(count);
        if (value == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, t, value);
    }
    return out;
}

static PyMethodDef methods[] = {
    {"score", score, METH_VARARGS, score_doc},
    {"postings_per_term", postings_per_term, METH_O, count_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_accumulate",
    "BM25 accumulation over posting blocks in one compiled pass (optional; see bm25.py).", -1, methods,
};

PyMODINIT_FUNC PyInit__accumulate(void) { return PyModule_Create(&module); }
