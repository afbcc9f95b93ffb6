/* The per-request character work of the body path (a body's divergence, its tools' text), compiled.
 *
 * Each function here is the exact equivalent of a Python definition in pipelines/ingest/fingerprints.py,
 * which stays the reference (tests/lib/test_divergence_compiled.py holds the two equal on generated
 * texts: ASCII, Latin-1, BMP and astral characters, lone surrogates). Why compiled: the divergence of
 * every logged request body from its predecessor was a third of the body path's Python time, in loops
 * over characters that no library offers (bench/README.md, "The divergence compiled").
 *
 * Characters are code points, as Python's str indexes them; the character classes are CPython's own
 * (Py_UNICODE_ISSPACE is str.isspace, Py_UNICODE_ISDIGIT str.isdigit, and so on), so a text gives the
 * same answer here and there whatever its script. Nothing is stored or returned but offsets and flags.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define RUN 16 /* fingerprints.RESYNC_RUN */
#define SLOTS 2048 /* hash slots for the runs of one window: a power of two over twice RESYNC_WINDOW */

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
} text_t;

static int text_of(PyObject *object, text_t *text) {
    if (!PyUnicode_Check(object)) {
        PyErr_SetString(PyExc_TypeError, "expected str");
        return -1;
    }
    text->kind = PyUnicode_KIND(object);
    text->data = PyUnicode_DATA(object);
    text->length = PyUnicode_GET_LENGTH(object);
    return 0;
}

#define AT(text, index) PyUnicode_READ((text).kind, (text).data, (index))

/* fingerprints.common_prefix_chars: how many leading characters the two texts share. */
static PyObject *common_prefix(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *a, *b;
    text_t x, y;
    if (!PyArg_ParseTuple(args, "UU", &a, &b) || text_of(a, &x) || text_of(b, &y)) return NULL;
    Py_ssize_t limit = x.length < y.length ? x.length : y.length, i = 0;
    if (x.kind == y.kind) { /* same width: compare memory in blocks, then find the character */
        const char *p = x.data, *q = y.data;
        Py_ssize_t width = x.kind, block = 256 / width;
        while (i + block <= limit && memcmp(p + i * width, q + i * width, block * width) == 0) i += block;
    }
    while (i < limit && AT(x, i) == AT(y, i)) i++;
    return PyLong_FromSsize_t(i);
}

#define BASE 1099511628211ULL

/* BASE ** (RUN - 1), modulo 2 ** 64: what the leaving character weighs in a rolling hash */
static uint64_t leaving_weight(void) {
    uint64_t w = 1;
    for (int k = 1; k < RUN; k++) w *= BASE;
    return w;
}

/* polynomial hash of the RUN characters at `at` (modulo 2 ** 64); rolled on by roll_hash */
static uint64_t run_hash(text_t t, Py_ssize_t at) {
    uint64_t h = 0;
    for (Py_ssize_t k = 0; k < RUN; k++) h = h * BASE + AT(t, at + k) + 1;
    return h;
}

static uint64_t roll_hash(uint64_t h, uint64_t weight, Py_UCS4 leaving, Py_UCS4 entering) {
    return (h - (leaving + 1) * weight) * BASE + entering + 1;
}

static Py_ssize_t slot(uint64_t h) { return (Py_ssize_t)((h * 0x9E3779B97F4A7C15ULL) >> 53); } /* 11 bits: SLOTS */

static int same_run(text_t a, Py_ssize_t i, text_t b, Py_ssize_t j) {
    for (Py_ssize_t k = 0; k < RUN; k++)
        if (AT(a, i + k) != AT(b, j + k)) return 0;
    return 1;
}

/* fingerprints.realign_reference: the first offset of current whose next RUN characters occur in
 * previous, else len(current). Each RUN-character run of previous is put in a hash table (the windows
 * are at most RESYNC_WINDOW characters, so at most SLOTS / 4 runs), then current's runs are looked up
 * in order: linear in the two lengths, where a substring search per offset was quadratic. */
static PyObject *realign(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *a, *b;
    text_t previous, current;
    if (!PyArg_ParseTuple(args, "UU", &a, &b) || text_of(a, &previous) || text_of(b, &current)) return NULL;
    if (previous.length > SLOTS / 2) {
        PyErr_SetString(PyExc_ValueError, "realign: previous window longer than SLOTS / 2 characters");
        return NULL;
    }
    Py_ssize_t last = current.length - RUN;
    if (last < 0 || previous.length < RUN) return PyLong_FromSsize_t(current.length);
    Py_ssize_t slot_of[SLOTS]; /* position of a run of previous + 1, 0 = empty */
    uint64_t hash_of[SLOTS];
    memset(slot_of, 0, sizeof slot_of);
    uint64_t weight = leaving_weight(), h = run_hash(previous, 0);
    for (Py_ssize_t i = 0; i + RUN <= previous.length; i++) {
        if (i) h = roll_hash(h, weight, AT(previous, i - 1), AT(previous, i + RUN - 1));
        Py_ssize_t s = slot(h);
        while (slot_of[s] && !(hash_of[s] == h && same_run(previous, slot_of[s] - 1, previous, i))) s = (s + 1) & (SLOTS - 1);
        if (!slot_of[s]) { /* a run seen before is kept once: repeated text does not lengthen the probes */
            slot_of[s] = i + 1;
            hash_of[s] = h;
        }
    }
    h = run_hash(current, 0);
    for (Py_ssize_t o = 0; o <= last; o++) {
        if (o) h = roll_hash(h, weight, AT(current, o - 1), AT(current, o + RUN - 1));
        for (Py_ssize_t s = slot(h); slot_of[s]; s = (s + 1) & (SLOTS - 1))
            if (hash_of[s] == h && same_run(previous, slot_of[s] - 1, current, o)) return PyLong_FromSsize_t(o);
    }
    return PyLong_FromSsize_t(current.length);
}

static int is_boundary(Py_UCS4 c) {
    return Py_UNICODE_ISSPACE(c) || (c < 128 && c && strchr("\"'()[]{}<>,;=", (int)c) != NULL);
}

/* fingerprints.widen_reference: (start, end) widened to the whitespace- or punctuation-delimited value
 * they sit in. For 0 <= start <= len(text) and end >= 0 (what divergence passes); outside that, where the
 * reference would follow Python's negative indexing or raise IndexError, this raises ValueError. */
static PyObject *widen(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *a;
    Py_ssize_t start, end;
    text_t t;
    if (!PyArg_ParseTuple(args, "Unn", &a, &start, &end) || text_of(a, &t)) return NULL;
    if (start < 0 || start > t.length || end < 0) {
        PyErr_SetString(PyExc_ValueError, "widen: start or end outside the text");
        return NULL;
    }
    while (start > 0 && !is_boundary(AT(t, start - 1))) start--;
    while (end < t.length && !is_boundary(AT(t, end))) end++;
    return Py_BuildValue("nn", start, end);
}

/* The character classes span_facts reads, of the ASCII characters: CPython's own tests, looked up once at import
 * (a span is mostly ASCII, and the Unicode database's lookups cost about 14 ns a character: most of a span's
 * description). */
#define CLASS_DIGIT 1
#define CLASS_ALPHA 2
#define CLASS_SPACE 4
#define CLASS_ALNUM 8
static unsigned char ascii_classes[128];

static void fill_ascii_classes(void) {
    for (Py_UCS4 c = 0; c < 128; c++)
        ascii_classes[c] = (Py_UNICODE_ISDIGIT(c) ? CLASS_DIGIT : 0) | (Py_UNICODE_ISALPHA(c) ? CLASS_ALPHA : 0) |
                           (Py_UNICODE_ISSPACE(c) ? CLASS_SPACE : 0) | (Py_UNICODE_ISALNUM(c) ? CLASS_ALNUM : 0);
}

static int classes_of(Py_UCS4 c) {
    if (c < 128) return ascii_classes[c];
    return (Py_UNICODE_ISDIGIT(c) ? CLASS_DIGIT : 0) | (Py_UNICODE_ISALPHA(c) ? CLASS_ALPHA : 0) |
           (Py_UNICODE_ISSPACE(c) ? CLASS_SPACE : 0) | (Py_UNICODE_ISALNUM(c) ? CLASS_ALNUM : 0);
}

/* fingerprints.span_facts_reference: (has a digit, has a letter, has a space, has a character that is
 * neither alphanumeric nor a space, every character a letter or a space, how many characters are digits). */
static PyObject *span_facts(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *a;
    text_t t;
    if (!PyArg_ParseTuple(args, "U", &a) || text_of(a, &t)) return NULL;
    int digit = 0, alpha = 0, space = 0, other = 0, letters_or_spaces = 1;
    Py_ssize_t digits = 0;
    for (Py_ssize_t i = 0; i < t.length; i++) {
        int classes = classes_of(AT(t, i));
        int is_digit = (classes & CLASS_DIGIT) != 0, is_alpha = (classes & CLASS_ALPHA) != 0;
        int is_space = (classes & CLASS_SPACE) != 0;
        digits += is_digit;
        digit |= is_digit;
        alpha |= is_alpha;
        space |= is_space;
        other |= !((classes & CLASS_ALNUM) || is_space);
        letters_or_spaces &= is_alpha || is_space;
    }
    return Py_BuildValue("OOOOOn", digit ? Py_True : Py_False, alpha ? Py_True : Py_False,
                         space ? Py_True : Py_False, other ? Py_True : Py_False,
                         letters_or_spaces ? Py_True : Py_False, digits);
}


static int is_json_space(Py_UCS4 c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* index of the next '"' at or after i that no backslash escapes, or -1. One byte a character (most logs):
 * memchr finds each quote, then the backslashes before it are counted; wider texts are read character by
 * character. Prompt text sits inside strings, so this is where a scan spends its time. */
static Py_ssize_t closing_quote(text_t t, Py_ssize_t i) {
    while (i < t.length) {
        if (t.kind == PyUnicode_1BYTE_KIND) {
            const char *base = t.data, *hit = memchr(base + i, '"', (size_t)(t.length - i));
            if (hit == NULL) return -1;
            i = hit - base;
        } else {
            while (i < t.length && AT(t, i) != '"') i++;
            if (i >= t.length) return -1;
        }
        Py_ssize_t slashes = 0;
        while (i - slashes - 1 >= 0 && AT(t, i - slashes - 1) == '\\') slashes++;
        if (slashes % 2 == 0) return i;
        i++;
    }
    return -1;
}

/* index after the JSON string whose opening quote is at i; sets *escaped (unless NULL) when it holds a backslash */
static Py_ssize_t skip_string(text_t t, Py_ssize_t i, int *escaped) {
    Py_ssize_t close = closing_quote(t, i + 1);
    if (close < 0) return -1;
    for (Py_ssize_t j = i + 1; escaped && j < close && !*escaped; j++) *escaped = AT(t, j) == '\\';
    return close + 1;
}

/* index after the JSON value starting at i (the text is known to be valid JSON: json.loads read it) */
static Py_ssize_t skip_value(text_t t, Py_ssize_t i) {
    Py_UCS4 c = AT(t, i);
    if (c == '"') return skip_string(t, i, NULL);
    if (c == '{' || c == '[') {
        Py_ssize_t depth = 0;
        for (; i < t.length; i++) {
            c = AT(t, i);
            if (c == '"') {
                i = skip_string(t, i, NULL);
                if (i < 0) return -1;
                i--;
            } else if (c == '{' || c == '[') {
                depth++;
            } else if (c == '}' || c == ']') {
                if (--depth == 0) return i + 1;
            }
        }
        return -1;
    }
    while (i < t.length && !is_json_space(c = AT(t, i)) && c != ',' && c != '}' && c != ']') i++;
    return i;
}

/* fingerprints.member_span_reference: (start, end) of the text of member `key` of the JSON object at
 * `start` (after JSON whitespace), None when the object has no such member or has it twice (json.loads
 * keeps the last copy, the walk none). The text must be valid JSON (the caller parsed it). Raises
 * ValueError where this scan cannot decide: a member name written with an escape, or text that is not
 * an object there. */
static PyObject *member_span(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *a, *k;
    Py_ssize_t i, found_start = -1, found_end = -1, copies = 0;
    text_t t, key;
    if (!PyArg_ParseTuple(args, "UnU", &a, &i, &k) || text_of(a, &t) || text_of(k, &key)) return NULL;
    if (i < 0) i = 0; /* as the reference: a regex match from a negative position starts at 0 */
    while (i < t.length && is_json_space(AT(t, i))) i++;
    if (i >= t.length || AT(t, i) != '{') goto undecided;
    for (i++;;) {
        while (i < t.length && is_json_space(AT(t, i))) i++;
        if (i >= t.length) goto undecided;
        if (AT(t, i) == '}') break;
        if (AT(t, i) != '"') goto undecided;
        int escaped = 0;
        Py_ssize_t name = i + 1, after = skip_string(t, i, &escaped);
        if (after < 0 || escaped) goto undecided;
        int same = after - 1 - name == key.length;
        for (Py_ssize_t j = 0; same && j < key.length; j++) same = AT(t, name + j) == AT(key, j);
        for (i = after; i < t.length && (is_json_space(AT(t, i)) || AT(t, i) == ':'); i++) {}
        if (i >= t.length) goto undecided;
        Py_ssize_t end = skip_value(t, i);
        if (end < 0) goto undecided;
        if (same) {
            copies++;
            found_start = i;
            found_end = end;
        }
        for (i = end; i < t.length && is_json_space(AT(t, i)); i++) {}
        if (i >= t.length) goto undecided;
        if (AT(t, i) == '}') break;
        if (AT(t, i) != ',') goto undecided;
        i++;
    }
    if (copies != 1) Py_RETURN_NONE;
    return Py_BuildValue("nn", found_start, found_end);
undecided:
    PyErr_SetString(PyExc_ValueError, "member_span: not a JSON object this scan reads, or an escaped member name");
    return NULL;
}

/* fingerprints.digit_run_reference: whether the text holds `run` or more ASCII digits in a row (orjson reads an
 * integer beyond 64 bits as a float, where json.loads keeps it whole: a line with so long a number is read by json).
 * Any `run` consecutive characters hold exactly one index that is a multiple of `run`, so only those are looked at,
 * and the digits around one that is a digit counted: a 22 KB body costs about 1,200 looks, not 22,000. */
#define IS_DIGIT(c) ((c) >= '0' && (c) <= '9')
static PyObject *digit_run(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *a;
    Py_ssize_t run;
    text_t t;
    if (!PyArg_ParseTuple(args, "Un", &a, &run) || text_of(a, &t)) return NULL;
    if (run <= 0) Py_RETURN_TRUE;
    for (Py_ssize_t i = run - 1; i < t.length; i += run) {
        if (!IS_DIGIT(AT(t, i))) continue;
        Py_ssize_t first = i, last = i;
        while (first > 0 && IS_DIGIT(AT(t, first - 1))) first--;
        while (last + 1 < t.length && IS_DIGIT(AT(t, last + 1))) last++;
        if (last - first + 1 >= run) Py_RETURN_TRUE; /* else the run ends before the next look, i + run */
    }
    Py_RETURN_FALSE;
}

/* stage.block_lines_reference: of the first `size` bytes of a buffer (a block of a JSONL text being counted), how many
 * newlines it holds, the offset of the first (-1: none), and whether it holds a vertical tab or form feed byte. One
 * pass of memchr in place of NumPy's compare, count and search and two finds: the count read a 2.2 GB file at about
 * 1 GB/s, single-threaded, before the fast lane could start (bench/README.md, "Workers read the lines they
 * fingerprint"). The buffer is read with the GIL released. */
static PyObject *block_lines(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    Py_ssize_t size, count = 0, first = -1;
    int trims;
    if (!PyArg_ParseTuple(args, "y*n", &view, &size)) return NULL;
    if (size < 0 || size > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "block_lines: size outside the buffer");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    const char *start = view.buf, *end = start + size, *at = start;
    while (at < end && (at = memchr(at, '\n', (size_t)(end - at))) != NULL) {
        if (first < 0) first = at - start;
        count++;
        at++;
    }
    trims = size > 0 && (memchr(start, '\v', (size_t)size) != NULL || memchr(start, '\f', (size_t)size) != NULL);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("nnO", count, first, trims ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
    {"common_prefix", common_prefix, METH_VARARGS, "common_prefix(a, b) -> leading characters the two share"},
    {"realign", realign, METH_VARARGS, "realign(previous, current) -> first offset of current whose run occurs in previous"},
    {"widen", widen, METH_VARARGS, "widen(text, start, end) -> (start, end) widened to the value they sit in"},
    {"member_span", member_span, METH_VARARGS, "member_span(text, start, key) -> (start, end) of a member's text, or None"},
    {"digit_run", digit_run, METH_VARARGS, "digit_run(text, run) -> whether text holds run ASCII digits in a row"},
    {"span_facts", span_facts, METH_VARARGS, "span_facts(span) -> character-class facts of the span"},
    {"block_lines", block_lines, METH_VARARGS, "block_lines(buffer, size) -> (newlines, first newline or -1, has \\v or \\f)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_divergence", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__divergence(void) {
    fill_ascii_classes();
    return PyModule_Create(&module);
}
