/* Native kernels of the curation chain (issue 33), each the twin of a Python reference it must equal.
 *
 * minhash_into: oro_assets.curation.dedup.minhash_signature_py in C - the words of str.split() (Unicode
 * whitespace, as Python splits), the first max_words of them, each word's odd crc32 of its UTF-8 bytes,
 * word 3-shingles h[i] * 0x9E3779B1 + h[i+1] * 0x85EBCA77 + h[i+2] (the hashes themselves under three words),
 * and per permutation p the top 32 bits of min over shingles s of a[p] * s + b[p], all modulo 2^64.
 *
 * collapse_whitespace: " ".join(text.split()) (oro_assets.curation.dedup.collapse_whitespace_py), the text
 * dedup's exact hash is taken of, without a string object per word.
 *
 * walk_result: the rule judge's walk over one parsed tool result (oro_assets.judge.rule.ResultData._walk and
 * what _read makes of its texts): words, ids, product ids, prices, phrases and titles into the sets and dict
 * given. ASCII text is lower-cased and cut into [A-Za-z0-9]+ words here; any other text goes through the
 * Python helpers passed in (normalize_text, words, numbers), so Unicode is read exactly as the reference reads it.
 *
 * era_counts: the normaliser's one pass over a record's proxy calls (oro_assets.traces.calls._era_counts_py):
 * the recorder-era signs and ORO's agentic_richness counts, read from the dicts in C, with the names of an
 * answer's structured tool calls; the route of a path and the tools named by an answer holding <tool_call> text
 * blocks come from the Python helpers passed in (_str_route, _named_tools).
 *
 * collect_ids: the product ids of one parsed tool result or search response, as the normaliser reads them
 * (oro_assets.traces.formats._collect_ids: exact-type tests, a dict with a product_id not searched further, the
 * depth limit, first-seen order), without a Python frame per list and dict.
 *
 * proxy_evidence: the normaliser's inference and search evidence of one step's proxy calls
 * (oro_assets.traces.formats.proxy_evidence_py): the dicts read and the evidence dicts built in C, in the reference's
 * key order; an answer's calls (answer_calls), a body read as text (jsonio.loads, _evidence_from_text) and a str
 * search response (product_ids) by the Python helpers passed in.
 *
 * step_words: the rule judge's result words and references of one step's thinking
 * (oro_assets.judge.rule.step_words_py): set lookups and the two sorted lists, without the comprehensions.
 *
 * own_titles, absorb_titles, trigram_names: the rule judge's index of product title trigrams (which product's title
 * has a trigram, or several) kept up to date as results are read, and the product ids a text's trigrams name
 * (oro_assets.judge.rule.own_titles_py, absorb_titles_py, trigram_names_py): dict and set operations in C, the
 * trigrams of a title from the reference's own (cached) helper.
 *
 * trace_steps: the judge's evidence of a trace's steps (oro_assets.judge.evidence._trace_steps_py): the messages'
 * tool results and answers by call id, and each step's call, inference, search and step evidence objects built from
 * the dicts in C (the classes called as the reference calls them), a value that is not plain text, int or a list
 * of ids read by the reference's own helpers.
 *
 * claimed_length: the characters a dropped body must hold to have written a step's thinking and calls
 * (oro_assets.curation.structural._claimed_length_py): a str thinking's JSON length counted here, each call's text by
 * the reference's cached helper.
 *
 * ascii_words_numbers: the rule judge's words ([A-Za-z0-9]+) and numbers (rule._NUMBER, with its backtracking) of an
 * ASCII text in one C pass (oro_assets.judge.rule.ascii_words_numbers_py); the numbers' values by float() of their
 * text without commas, as the reference reads them.
 *
 * word_count: len(text.split()) (Unicode whitespace, as str.split() cuts) without making the words: the token estimate
 * of the gates' budget check (oro_assets.curation.gates.estimate_tokens).
 *
 * label_steps: the structural filter's pass over a trace's steps (oro_assets.curation.structural._label_steps_py):
 * each step's evidence (step_evidence), the in-sequence override, the verdict counts, step shapes and the other
 * tallies, the query-copy test by the reference's own helper.
 *
 * step_evidence: the structural filter's evidence of one step (oro_assets.curation.structural._step_evidence_py):
 * the step's dicts read and its evidence dict built in C, in the reference's key order; the call comparison
 * (same_calls), the claimed length of a dropped body and a status that is neither int nor None by the Python
 * helpers passed in.
 *
 * walk_steps: the normaliser's pass over a dialogue's steps (oro_assets.traces.normalize.walk_steps_py): each step's
 * dicts read, its assistant message, tool messages, evidence calls and step dict built in C, in the reference's key
 * order, JSON text by orjson's encoder and the ids of a result walked as collect_ids walks them; a step's prompt,
 * <think> text, harness content, ShoppingBench observations and odd timestamps by the reference's own helpers; the
 * proxy calls attributed to the steps by their stamps (calls.attribute_calls) in C where every stamp is an int64 in
 * order, by the reference's helper otherwise. None (the reference then reads the dialogue) wherever the reference
 * raises its FieldError or reads a subclass.
 *
 * meta_search: whether the rule judge's META_SENTENCE (lines that address the grader) matches anywhere in an ASCII text
 * (oro_assets.judge.rule.meta_search_py): its alternatives read in place at each word's first character (where its \b
 * can hold), not tried by the regex engine at every position; None for any other text.
 *
 * utf8_column: the buffers of an Arrow string column of a list of str and None (what pyarrow.array(values,
 * type=pa.string()) builds: oro_assets.storage.string_array_py), the UTF-8 bytes copied once into buffers of their
 * exact size from Arrow's memory pool (the allocator passed in); None for anything else (a value of another type or a subclass, a str that has no UTF-8 form, more than
 * 2**31 - 1 bytes), which pyarrow then converts, or refuses, itself.
 *
 * answer_calls: the tool calls of one chat-completion message (oro_assets.traces.calls.answer_calls_py) where its text
 * needs no lenient reading: no <tool_call> block, or closed blocks of exact JSON calls (decoded by the decoder passed in);
 * the reference, passed in, reads any other message.
 *
 * named_tools: the tools one inference answer named as ORO's calculator reads them (oro_assets.traces.calls.
 * _named_tools_py): the structured names and the <tool_call> blocks its regex finds, found in place (the first closing
 * bracket followed by </tool_call>) and decoded by the decoder passed in; the reference, passed in, where that raises.
 *
 * table_rows: a table's rows as pyarrow's Table.to_pylist() reads them back (oro_assets.storage.table_rows_py), where the
 * table was just built from these rows and every row is already what the reader gives: a dict with exactly the
 * schema's names in its order, each value None or exactly the Python type the column's type reads back as (str,
 * int in int64, float, bool); then each row's copy, without decoding the columns again. None for anything else.
 *
 * Built by setup.py (an optional extension: without a compiler the package keeps its Python path);
 * oro_assets/native.py loads it. ORO_NATIVE_SOURCE_SHA256 is this file's sha256, defined by setup.py, so
 * the loader can refuse a build older than the source beside it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#ifndef ORO_NATIVE_SOURCE_SHA256
#define ORO_NATIVE_SOURCE_SHA256 ""
#endif

/* zlib's crc32 (IEEE 802.3, reflected), sliced by 8: eight table lookups a step instead of a chain of eight */
static uint32_t crc_table[8][256];
/* Py_UNICODE_ISSPACE of the ASCII characters (what str.split() cuts at), filled from it when the module loads:
 * a table of this module's own is addressed directly, CPython's through the GOT on every character */
static unsigned char ascii_space[128];

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int t = 1; t < 8; t++)
            crc_table[t][n] = crc_table[0][crc_table[t - 1][n] & 0xFF] ^ (crc_table[t - 1][n] >> 8);
}

/* the running crc (not yet inverted back) continued over `len` bytes */
static inline uint32_t crc_bytes(uint32_t crc, const unsigned char *p, size_t len) {
    while (len >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = __builtin_bswap64(x);
#endif
        x ^= crc;
        crc = crc_table[7][x & 0xFF] ^ crc_table[6][(x >> 8) & 0xFF] ^ crc_table[5][(x >> 16) & 0xFF] ^
              crc_table[4][(x >> 24) & 0xFF] ^ crc_table[3][(x >> 32) & 0xFF] ^ crc_table[2][(x >> 40) & 0xFF] ^
              crc_table[1][(x >> 48) & 0xFF] ^ crc_table[0][x >> 56];
        p += 8;
        len -= 8;
    }
    while (len--) crc = crc_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

/* The odd crc32 of the UTF-8 encoding of text[start:end] (any kind but ASCII-only text, whose bytes are its
 * UTF-8); -1 with UnicodeEncodeError set on a surrogate, which str.encode() refuses: the error is raised by
 * encoding the word itself, as the reference does. */
static int64_t word_hash(PyObject *text, int kind, const void *data, Py_ssize_t start, Py_ssize_t end) {
    uint32_t crc = 0xFFFFFFFFu;
    unsigned char buf[256];
    size_t used = 0;
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, i);
        if (used > sizeof(buf) - 4) {
            crc = crc_bytes(crc, buf, used);
            used = 0;
        }
        if (ch < 0x80) {
            buf[used++] = (unsigned char)ch;
        } else if (ch < 0x800) {
            buf[used++] = (unsigned char)(0xC0 | (ch >> 6));
            buf[used++] = (unsigned char)(0x80 | (ch & 0x3F));
        } else if (ch >= 0xD800 && ch <= 0xDFFF) {
            PyObject *word = PyUnicode_Substring(text, start, end);
            if (word != NULL) {
                PyObject *encoded = PyUnicode_AsUTF8String(word);  /* raises UnicodeEncodeError */
                Py_XDECREF(encoded);
                Py_DECREF(word);
                if (encoded != NULL) PyErr_SetString(PyExc_SystemError, "a surrogate encoded");
            }
            return -1;
        } else if (ch < 0x10000) {
            buf[used++] = (unsigned char)(0xE0 | (ch >> 12));
            buf[used++] = (unsigned char)(0x80 | ((ch >> 6) & 0x3F));
            buf[used++] = (unsigned char)(0x80 | (ch & 0x3F));
        } else {
            buf[used++] = (unsigned char)(0xF0 | (ch >> 18));
            buf[used++] = (unsigned char)(0x80 | ((ch >> 12) & 0x3F));
            buf[used++] = (unsigned char)(0x80 | ((ch >> 6) & 0x3F));
            buf[used++] = (unsigned char)(0x80 | (ch & 0x3F));
        }
    }
    crc = crc_bytes(crc, buf, used);
    return (int64_t)((crc ^ 0xFFFFFFFFu) | 1u);
}

/* The words of text (as str.split() cuts them), at most cap, hashed into hashes; their number, or -1 with an
 * exception set. */
static Py_ssize_t hash_words(PyObject *text, Py_ssize_t cap, uint64_t *hashes) {
    const Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    Py_ssize_t n = 0, i = 0;
    if (PyUnicode_IS_ASCII(text)) {  /* the common case: the characters are the UTF-8 bytes */
        const unsigned char *s = (const unsigned char *)PyUnicode_DATA(text);
        while (n < cap) {
            while (i < length && ascii_space[s[i]]) i++;
            if (i >= length) break;
            Py_ssize_t start = i;
            while (i < length && !ascii_space[s[i]]) i++;
            uint32_t crc = crc_bytes(0xFFFFFFFFu, s + start, (size_t)(i - start));
            hashes[n++] = (uint64_t)((crc ^ 0xFFFFFFFFu) | 1u);
        }
        return n;
    }
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    while (n < cap) {
        while (i < length && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
        if (i >= length) break;
        Py_ssize_t start = i;
        while (i < length && !Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
        int64_t h = word_hash(text, kind, data, start, i);
        if (h < 0) return -1;
        hashes[n++] = (uint64_t)h;
    }
    return n;
}

/* a buffer of `count` unsigned integers of `itemsize` bytes, C-contiguous */
static int get_uints(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count, int writable,
                     const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    const char *fmt = view->format ? view->format : "B";
    if (*fmt == '<' || *fmt == '=' || *fmt == '@') fmt++;
    int unsigned_int = fmt[0] != '\0' && fmt[1] == '\0' && strchr("BHILQ", fmt[0]) != NULL;
    if (!unsigned_int || view->itemsize != itemsize || (count >= 0 && view->len != itemsize * count)) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd unsigned integers of %zd bytes", what,
                     count, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Cloned per instruction set, chosen when the module loads (GNU ifunc): AVX-512DQ multiplies and compares
 * eight uint64 lanes at once, which the plain x86-64 build must emulate. */
#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void min_permutations(const uint64_t *shingles, Py_ssize_t n, const uint64_t *a, const uint64_t *b,
                             Py_ssize_t perms, uint64_t *mins) {
    for (Py_ssize_t p = 0; p < perms; p++) mins[p] = UINT64_MAX;
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint64_t s = shingles[i];
        for (Py_ssize_t p = 0; p < perms; p++) {
            const uint64_t v = a[p] * s + b[p];
            mins[p] = v < mins[p] ? v : mins[p];
        }
    }
}

PyDoc_STRVAR(minhash_into_doc,
"minhash_into(text, a, b, max_words, out)\n--\n\n"
"MinHash of the word 3-shingles of ``text`` written into ``out`` (uint32, one per permutation): the C twin\n"
"of ``oro_assets.curation.dedup.minhash_signature_py``. ``a`` and ``b``: the permutations' uint64\n"
"multipliers and offsets.");

static PyObject *minhash_into(PyObject *self, PyObject *args) {
    PyObject *text, *a_obj, *b_obj, *out_obj;
    Py_ssize_t max_words;
    if (!PyArg_ParseTuple(args, "UOOnO:minhash_into", &text, &a_obj, &b_obj, &max_words, &out_obj)) return NULL;
    if (max_words < 0) {
        PyErr_SetString(PyExc_ValueError, "max_words must be >= 0");
        return NULL;
    }
    Py_buffer a, b, out;
    if (get_uints(a_obj, &a, 8, -1, 0, "a") < 0) return NULL;
    Py_ssize_t perms = a.len / 8;
    if (get_uints(b_obj, &b, 8, perms, 0, "b") < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    if (get_uints(out_obj, &out, 4, perms, 1, "out") < 0) {
        PyBuffer_Release(&a);
        PyBuffer_Release(&b);
        return NULL;
    }
    PyObject *result = NULL;
    uint64_t *hashes = NULL, *mins = NULL;
    const Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    /* words are at most (length + 1) / 2 and at most max_words */
    Py_ssize_t cap = (length + 1) / 2 < max_words ? (length + 1) / 2 : max_words;
    hashes = PyMem_Malloc(sizeof(uint64_t) * (size_t)(cap > 0 ? cap : 1));
    mins = PyMem_Malloc(sizeof(uint64_t) * (size_t)(perms > 0 ? perms : 1));
    if (hashes == NULL || mins == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n = hash_words(text, cap, hashes);
    if (n < 0) goto done;
    uint32_t *sig = (uint32_t *)out.buf;
    if (n == 0) {
        for (Py_ssize_t p = 0; p < perms; p++) sig[p] = UINT32_MAX;
    } else {
        if (n >= 3) {  /* shingles in place: hashes[i] only reads hashes[i..i+2] */
            for (Py_ssize_t k = 0; k + 2 < n; k++)
                hashes[k] = hashes[k] * 0x9E3779B1u + hashes[k + 1] * 0x85EBCA77u + hashes[k + 2];
            n -= 2;
        }
        const uint64_t *av = (const uint64_t *)a.buf, *bv = (const uint64_t *)b.buf;
        if (n >= 256) {
            Py_BEGIN_ALLOW_THREADS
            min_permutations(hashes, n, av, bv, perms, mins);
            Py_END_ALLOW_THREADS
        } else {
            min_permutations(hashes, n, av, bv, perms, mins);
        }
        for (Py_ssize_t p = 0; p < perms; p++) sig[p] = (uint32_t)(mins[p] >> 32);
    }
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(hashes);
    PyMem_Free(mins);
    PyBuffer_Release(&a);
    PyBuffer_Release(&b);
    PyBuffer_Release(&out);
    return result;
}

/* A kernel taking one str: its TypeError, as a Python function's would read, for anything else (0 when ``text`` is
 * not a str). */
static int is_str_argument(const char *kernel, PyObject *text) {
    if (PyUnicode_Check(text)) return 1;
    PyErr_Format(PyExc_TypeError, "%s() argument must be str, not %.100s", kernel, Py_TYPE(text)->tp_name);
    return 0;
}

PyDoc_STRVAR(collapse_whitespace_doc,
"collapse_whitespace(text)\n--\n\n"
"``\" \".join(text.split())``: the words of ``text`` (cut at Unicode whitespace, as str.split() cuts) joined by\n"
"single spaces.");

static PyObject *collapse_whitespace(PyObject *self, PyObject *text) {
    if (!is_str_argument("collapse_whitespace", text)) return NULL;
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    void *buf = PyMem_Malloc((size_t)(length > 0 ? length : 1) * (size_t)kind);
    if (buf == NULL) return PyErr_NoMemory();
    Py_ssize_t n = 0, i = 0;
    if (PyUnicode_IS_ASCII(text)) {  /* the common case: whole words copied at once */
        const unsigned char *s = (const unsigned char *)data;
        unsigned char *o = (unsigned char *)buf;
        for (;;) {
            while (i < length && ascii_space[s[i]]) i++;
            if (i >= length) break;
            if (n > 0) o[n++] = ' ';
            Py_ssize_t start = i;
            while (i < length && !ascii_space[s[i]]) i++;
            memcpy(o + n, s + start, (size_t)(i - start));
            n += i - start;
        }
        PyObject *out = PyUnicode_FromStringAndSize((const char *)buf, n);  /* ASCII is valid UTF-8 */
        PyMem_Free(buf);
        return out;
    }
    for (;;) {
        while (i < length && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
        if (i >= length) break;
        if (n > 0) PyUnicode_WRITE(kind, buf, n++, ' ');
        while (i < length) {
            Py_UCS4 ch = PyUnicode_READ(kind, data, i);
            if (Py_UNICODE_ISSPACE(ch)) break;
            PyUnicode_WRITE(kind, buf, n++, ch);
            i++;
        }
    }
    /* the smallest kind that holds the result (whitespace may have been its only wide characters) */
    PyObject *out = PyUnicode_FromKindAndData(kind, buf, n);
    PyMem_Free(buf);
    return out;
}

/* ---- the rule judge's result walk ---- */

static PyObject *s_product_id, *s_title, *s_attributes, *s_sku_options, *s_brand, *s_price, *s_shop_id,
    *s_description, *s_short_description, *s_specification, *s_strip, *round_fn;

typedef struct {
    PyObject *words, *ids, *product_ids, *prices, *phrases, *titles; /* borrowed: what the walk fills */
    PyObject *normalize_text, *words_fn, *numbers_fn;                /* borrowed: the Python helpers */
} Facts;

/* WALK_DEPTH: deeper results are left to the reference (its recursion limit is Python's, not this) */
#define WALK_DEPTH 64

static int too_deep(PyObject *value, int depth) {
    if (PyDict_Check(value) || PyList_Check(value)) {
        if (depth >= WALK_DEPTH) return 1;
        if (PyDict_Check(value)) {
            Py_ssize_t pos = 0;
            PyObject *k, *v;
            while (PyDict_Next(value, &pos, &k, &v))
                if (too_deep(v, depth + 1)) return 1;
        } else {
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++)
                if (too_deep(PyList_GET_ITEM(value, i), depth + 1)) return 1;
        }
    }
    return 0;
}

static inline int ascii_alnum(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* text.lower() of an ASCII str (normalize_text's ASCII path); a new reference */
static PyObject *ascii_lower(PyObject *text) {
    const unsigned char *s = (const unsigned char *)PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
    while (i < n && !(s[i] >= 'A' && s[i] <= 'Z')) i++;
    if (i == n && PyUnicode_CheckExact(text)) return Py_NewRef(text);
    PyObject *out = PyUnicode_New(n, 127);
    if (out == NULL) return NULL;
    unsigned char *o = (unsigned char *)PyUnicode_DATA(out);
    for (i = 0; i < n; i++) o[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (unsigned char)(s[i] + 32) : s[i];
    return out;
}

/* normalize_text(text): a new reference */
static PyObject *normalize(Facts *f, PyObject *text) {
    if (PyUnicode_IS_ASCII(text)) return ascii_lower(text);
    return PyObject_CallOneArg(f->normalize_text, text);
}

/* the lower-cased [A-Za-z0-9]+ words of an ASCII str, added to `set` or appended to `list` */
static int ascii_words(PyObject *text, PyObject *set, PyObject *list) {
    const unsigned char *s = (const unsigned char *)PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
    for (;;) {
        while (i < n && !ascii_alnum(s[i])) i++;
        if (i >= n) return 0;
        Py_ssize_t start = i;
        while (i < n && ascii_alnum(s[i])) i++;
        PyObject *word = PyUnicode_New(i - start, 127);
        if (word == NULL) return -1;
        unsigned char *o = (unsigned char *)PyUnicode_DATA(word);
        for (Py_ssize_t k = start; k < i; k++) o[k - start] = (s[k] >= 'A' && s[k] <= 'Z') ? (unsigned char)(s[k] + 32) : s[k];
        int rc = set != NULL ? PySet_Add(set, word) : PyList_Append(list, word);
        Py_DECREF(word);
        if (rc < 0) return -1;
    }
}

/* words(normalized) of a non-ASCII normalised str into `set` (or as a new list when set is NULL) */
static PyObject *python_words(Facts *f, PyObject *normalized, PyObject *set) {
    PyObject *found = PyObject_CallOneArg(f->words_fn, normalized);
    if (found == NULL || set == NULL) return found;
    PyObject *it = PyObject_GetIter(found);
    Py_DECREF(found);
    if (it == NULL) return NULL;
    PyObject *w;
    while ((w = PyIter_Next(it)) != NULL) {
        int rc = PySet_Add(set, w);
        Py_DECREF(w);
        if (rc < 0) {
            Py_DECREF(it);
            return NULL;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
}

static int key_is(PyObject *key, PyObject *name) {
    return key == name || (PyUnicode_Check(key) && PyUnicode_Compare(key, name) == 0);
}

static int add_rounded(PyObject *prices, PyObject *number) {
    PyObject *rounded = PyObject_CallFunction(round_fn, "Oi", number, 2);
    if (rounded == NULL) return -1;
    int rc = PySet_Add(prices, rounded);
    Py_DECREF(rounded);
    return rc;
}

/* ResultData._scalar: `key` is NULL for None */
static int scalar(Facts *f, PyObject *value, PyObject *key) {
    PyObject *raw = PyUnicode_CheckExact(value) ? Py_NewRef(value) : PyObject_Str(value);
    if (raw == NULL) return -1;
    int prose = key != NULL && (key_is(key, s_description) || key_is(key, s_short_description) ||
                                key_is(key, s_specification));
    int is_id = 0, is_brand = 0, is_price = 0;
    if (key != NULL) {
        is_id = key_is(key, s_product_id) || key_is(key, s_shop_id);
        is_brand = !is_id && key_is(key, s_brand);
        if (!is_id && !is_brand) {
            int found = PySequence_Contains(key, s_price);
            if (found < 0) goto fail;
            is_price = found;
        }
    }
    PyObject *text = NULL;
    if (PyUnicode_IS_ASCII(raw)) {
        if (!prose && ascii_words(raw, f->words, NULL) < 0) goto fail;
        if (is_id || is_brand || is_price) {
            text = ascii_lower(raw);
            if (text == NULL) goto fail;
        }
    } else {
        text = PyObject_CallOneArg(f->normalize_text, raw);
        if (text == NULL) goto fail;
        if (!prose) {
            PyObject *done = python_words(f, text, f->words);
            if (done == NULL) goto fail_text;
            Py_DECREF(done);
        }
    }
    if (is_id) {
        if (PySet_Add(f->ids, text) < 0) goto fail_text;
        if (key_is(key, s_product_id) && PySet_Add(f->product_ids, text) < 0) goto fail_text;
    } else if (is_brand) {
        PyObject *stripped = PyObject_CallMethodNoArgs(text, s_strip);
        if (stripped == NULL) goto fail_text;
        int rc = PySet_Add(f->phrases, stripped);
        Py_DECREF(stripped);
        if (rc < 0) goto fail_text;
    } else if (is_price) {
        if (PyLong_CheckExact(value) || PyFloat_CheckExact(value)) {
            PyObject *number = PyNumber_Float(value);
            if (number == NULL) goto fail_text;
            int rc = add_rounded(f->prices, number);
            Py_DECREF(number);
            if (rc < 0) goto fail_text;
        } else {
            PyObject *found = PyObject_CallOneArg(f->numbers_fn, text);
            if (found == NULL) goto fail_text;
            PyObject *it = PyObject_GetIter(found);
            Py_DECREF(found);
            if (it == NULL) goto fail_text;
            PyObject *pair;
            while ((pair = PyIter_Next(it)) != NULL) {
                PyObject *number = PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2 ? PyTuple_GET_ITEM(pair, 0) : NULL;
                int rc = number != NULL ? add_rounded(f->prices, number) : -1;
                if (number == NULL) PyErr_SetString(PyExc_TypeError, "numbers() must give (value, decimal) pairs");
                Py_DECREF(pair);
                if (rc < 0) {
                    Py_DECREF(it);
                    goto fail_text;
                }
            }
            Py_DECREF(it);
            if (PyErr_Occurred()) goto fail_text;
        }
    }
    Py_XDECREF(text);
    Py_DECREF(raw);
    return 0;
fail_text:
    Py_XDECREF(text);
fail:
    Py_DECREF(raw);
    return -1;
}

/* ResultData._collect_values */
static int collect_values(Facts *f, PyObject *value) {
    if (PyDict_Check(value)) {
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(value, &pos, &k, &v))
            if (collect_values(f, v) < 0) return -1;
        return 0;
    }
    if (PyList_Check(value)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++)
            if (collect_values(f, PyList_GET_ITEM(value, i)) < 0) return -1;
        return 0;
    }
    if (!PyUnicode_Check(value)) return 0;
    PyObject *normalized = normalize(f, value);
    if (normalized == NULL) return -1;
    PyObject *text = PyObject_CallMethodNoArgs(normalized, s_strip);
    Py_DECREF(normalized);
    if (text == NULL) return -1;
    Py_ssize_t colon = PyUnicode_FindChar(text, ':', 0, PyUnicode_GET_LENGTH(text), 1);
    if (colon == -2) {
        Py_DECREF(text);
        return -1;
    }
    if (colon >= 0) {  /* "int:xs" style sku values: the part after the prefix */
        PyObject *after = PyUnicode_Substring(text, colon + 1, PyUnicode_GET_LENGTH(text));
        Py_DECREF(text);
        if (after == NULL) return -1;
        text = after;
    }
    int rc = PySet_Add(f->phrases, text);
    Py_DECREF(text);
    return rc;
}

static int walk(Facts *f, PyObject *value, PyObject *key);

static int walk_item(Facts *f, PyObject *v, PyObject *key) {
    if (PyDict_CheckExact(v) || PyList_CheckExact(v)) return walk(f, v, key);
    if (v != Py_None && v != Py_True && v != Py_False) return scalar(f, v, key);
    return 0;
}

/* the product's title words: tuple(words(normalize_text(title))) */
static PyObject *title_words(Facts *f, PyObject *title) {
    if (PyUnicode_IS_ASCII(title)) {
        PyObject *list = PyList_New(0);
        if (list == NULL) return NULL;
        if (ascii_words(title, NULL, list) < 0) {
            Py_DECREF(list);
            return NULL;
        }
        PyObject *tuple = PyList_AsTuple(list);
        Py_DECREF(list);
        return tuple;
    }
    PyObject *normalized = PyObject_CallOneArg(f->normalize_text, title);
    if (normalized == NULL) return NULL;
    PyObject *found = python_words(f, normalized, NULL);
    Py_DECREF(normalized);
    if (found == NULL) return NULL;
    PyObject *tuple = PySequence_Tuple(found);
    Py_DECREF(found);
    return tuple;
}

/* ResultData._walk */
static int walk(Facts *f, PyObject *value, PyObject *key) {
    if (PyDict_CheckExact(value)) {
        PyObject *pid = PyDict_GetItemWithError(value, s_product_id);
        if (pid == NULL && PyErr_Occurred()) return -1;
        PyObject *title = PyDict_GetItemWithError(value, s_title);
        if (title == NULL && PyErr_Occurred()) return -1;
        if (pid != NULL && pid != Py_None && title != NULL && PyUnicode_CheckExact(title)) {
            PyObject *raw = PyObject_Str(pid);
            if (raw == NULL) return -1;
            PyObject *id = normalize(f, raw);
            Py_DECREF(raw);
            if (id == NULL) return -1;
            PyObject *tw = title_words(f, title);
            int rc = tw != NULL ? PyDict_SetItem(f->titles, id, tw) : -1;
            Py_DECREF(id);
            Py_XDECREF(tw);
            if (rc < 0) return -1;
        }
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        while (PyDict_Next(value, &pos, &k, &v)) {
            PyObject *name = PyUnicode_CheckExact(k) ? Py_NewRef(k) : PyObject_Str(k);
            if (name == NULL) return -1;
            int rc = 0;
            if (key_is(name, s_attributes) || key_is(name, s_sku_options)) rc = collect_values(f, v);
            if (rc == 0) rc = walk_item(f, v, name);
            Py_DECREF(name);
            if (rc < 0) return -1;
        }
        return 0;
    }
    if (PyList_CheckExact(value)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++)
            if (walk_item(f, PyList_GET_ITEM(value, i), key) < 0) return -1;
        return 0;
    }
    if (value != Py_None && value != Py_True && value != Py_False) return scalar(f, value, key);
    return 0;
}

PyDoc_STRVAR(walk_result_doc,
"walk_result(parsed, words, ids, product_ids, prices, phrases, titles, normalize_text, words_fn, numbers_fn)\n--\n\n"
"What one parsed tool result makes available, added to the five sets and the titles dict given (the C twin of\n"
"``ResultData._walk`` plus the words of the texts it collects). False, with nothing touched, for a value nested\n"
"deeper than the kernel walks (the reference then reads it).");

static PyObject *walk_result(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10) {
        PyErr_Format(PyExc_TypeError, "walk_result() takes 10 arguments (%zd given)", nargs);
        return NULL;
    }
    for (int i = 1; i <= 5; i++)
        if (!PySet_Check(args[i])) {
            PyErr_SetString(PyExc_TypeError, "walk_result(): words, ids, product_ids, prices and phrases must be sets");
            return NULL;
        }
    if (!PyDict_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "walk_result(): titles must be a dict");
        return NULL;
    }
    if (too_deep(args[0], 0)) Py_RETURN_FALSE;
    Facts f = {args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9]};
    if (walk(&f, args[0], NULL) < 0) return NULL;
    Py_RETURN_TRUE;
}

/* ---- the normaliser's recorder era and ORO's agentic_richness ---- */

static PyObject *s_path, *s_kind, *s_attempt, *s_summary, *s_response, *s_response_truncated, *s_json_data,
    *s_messages, *s_choices, *s_message, *s_content, *s_reasoning_content, *s_result_product_ids, *s_inference_part,
    *s_completions_tail, *s_find_product_part, *s_tool_call_tag, *s_tool_calls, *s_function, *s_name;
/* answer_calls' */
static PyObject *s_tool_close_tag, *s_text_array, *s_qwen3_object;

/* calls._answer_text_length: characters of content + reasoning text in a chat-completion body; -1 with no
 * exception set for a value of a subclass of dict, list or str (whose methods the reference would call), which
 * the kernel leaves to the reference; -2 with an exception set */
static Py_ssize_t answer_text_length(PyObject *response) {
    PyObject *choices = PyDict_GetItemWithError(response, s_choices);
    if (choices == NULL) return PyErr_Occurred() ? -2 : 0;
    if (!PyList_Check(choices)) return 0;
    if (!PyList_CheckExact(choices)) return -1;
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(choices); i++) {
        PyObject *choice = PyList_GET_ITEM(choices, i);
        if (!PyDict_Check(choice)) continue;
        if (!PyDict_CheckExact(choice)) return -1;
        PyObject *msg = PyDict_GetItemWithError(choice, s_message);
        if (msg == NULL) {
            if (PyErr_Occurred()) return -2;
            continue;
        }
        if (!PyDict_Check(msg)) continue;
        if (!PyDict_CheckExact(msg)) return -1;
        PyObject *keys[2] = {s_content, s_reasoning_content};
        for (int k = 0; k < 2; k++) {
            PyObject *value = PyDict_GetItemWithError(msg, keys[k]);
            if (value == NULL) {
                if (PyErr_Occurred()) return -2;
                continue;
            }
            if (!PyUnicode_Check(value)) continue;
            if (!PyUnicode_CheckExact(value)) return -1;
            n += PyUnicode_GET_LENGTH(value);
        }
    }
    return n;
}

/* calls._named_tools(call) for a call whose response is a dict: the native tool_calls[].function.name of each
 * choice's message, in order, as a new list; an answer with a <tool_call> text block in some message's content
 * is read by the reference itself (named_tools, passed in), which parses those blocks. NULL with an exception. */
static PyObject *answer_names(PyObject *call, PyObject *response, PyObject *named_tools) {
    PyObject *choices = PyDict_GetItemWithError(response, s_choices);
    if (choices == NULL && PyErr_Occurred()) return NULL;
    PyObject *names = PyList_New(0);
    if (names == NULL) return NULL;
    if (choices == NULL || !PyList_CheckExact(choices)) return names;
    for (int pass = 0; pass < 2; pass++) {  /* 0: any text block? (then the reference reads it); 1: the names */
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(choices); i++) {
            PyObject *choice = PyList_GET_ITEM(choices, i);
            if (!PyDict_CheckExact(choice)) continue;
            PyObject *msg = PyDict_GetItemWithError(choice, s_message);
            if (msg == NULL && PyErr_Occurred()) goto fail;
            if (msg == NULL || !PyDict_CheckExact(msg)) continue;
            if (pass == 0) {
                PyObject *content = PyDict_GetItemWithError(msg, s_content);
                if (content == NULL && PyErr_Occurred()) goto fail;
                if (content == NULL || !PyUnicode_CheckExact(content)) continue;
                Py_ssize_t at = PyUnicode_Find(content, s_tool_call_tag, 0, PyUnicode_GET_LENGTH(content), 1);
                if (at == -2) goto fail;
                if (at >= 0) {
                    Py_DECREF(names);
                    return PyObject_CallOneArg(named_tools, call);
                }
                continue;
            }
            PyObject *tcs = PyDict_GetItemWithError(msg, s_tool_calls);
            if (tcs == NULL && PyErr_Occurred()) goto fail;
            if (tcs == NULL || !PyList_CheckExact(tcs)) continue;
            for (Py_ssize_t k = 0; k < PyList_GET_SIZE(tcs); k++) {
                PyObject *tc = PyList_GET_ITEM(tcs, k);
                if (!PyDict_CheckExact(tc)) continue;
                PyObject *fn = PyDict_GetItemWithError(tc, s_function);
                if (fn == NULL && PyErr_Occurred()) goto fail;
                if (fn == NULL || !PyDict_CheckExact(fn)) continue;
                PyObject *name = PyDict_GetItemWithError(fn, s_name);
                if (name == NULL && PyErr_Occurred()) goto fail;
                if (name == NULL || !PyUnicode_CheckExact(name)) continue;
                if (PyList_Append(names, name) < 0) goto fail;
            }
        }
    }
    return names;
fail:
    Py_DECREF(names);
    return NULL;
}

enum { LAST_UNSET, LAST_READ, LAST_DROPPED, LAST_NONE };

PyDoc_STRVAR(era_counts_doc,
"era_counts(listed, catalogue_tools, str_route, named_tools, inference_path, drop_limit)\n--\n\n"
"The counts of ``oro_assets.traces.calls._era_counts_py`` (its C twin): the six recorder signs, the dispatches\n"
"emitted, the dispatches, the dispatches by tool (a dict) and the four kinds of miss, as one tuple. None, having\n"
"changed nothing, where ``listed`` is not a list of lists of dicts or a body holds a subclass of dict, list or\n"
"str: the reference reads those.");

static PyObject *era_counts(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "era_counts() takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *listed = args[0], *catalogue = args[1], *str_route = args[2], *named_tools = args[3],
             *inference_path = args[4];
    if (!PyDict_Check(catalogue)) {
        PyErr_SetString(PyExc_TypeError, "era_counts(): catalogue_tools must be a dict");
        return NULL;
    }
    Py_ssize_t drop_limit = PyLong_AsSsize_t(args[5]);
    if (drop_limit == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(listed)) Py_RETURN_NONE;
    Py_ssize_t dropped = 0, no_messages = 0, list_no_ids = 0, with_messages = 0, ids_beside = 0, whole_over = 0;
    Py_ssize_t emitted = 0, dispatches = 0, miss_no_answer = 0, miss_dropped = 0, miss_no_body = 0,
               miss_not_named = 0;
    PyObject *by_tool = PyDict_New(), *pending = NULL, *route = NULL;
    if (by_tool == NULL) return NULL;
    for (Py_ssize_t b = 0; b < PyList_GET_SIZE(listed); b++) {
        PyObject *bucket = PyList_GET_ITEM(listed, b);
        if (!PyList_CheckExact(bucket)) goto leave;
        Py_CLEAR(pending);  /* pending: the step's latest answer's named tools, from pending_at on */
        Py_ssize_t pending_at = 0;
        int last = LAST_UNSET;
        for (Py_ssize_t c = 0; c < PyList_GET_SIZE(bucket); c++) {
            PyObject *call = PyList_GET_ITEM(bucket, c);
            if (!PyDict_CheckExact(call)) goto leave;
            PyObject *path = PyDict_GetItemWithError(call, s_path);
            if (path == NULL && PyErr_Occurred()) goto fail;
            if (path == NULL || !PyUnicode_CheckExact(path)) continue;
            PyObject *kind = PyDict_GetItemWithError(call, s_kind);
            if (kind == NULL && PyErr_Occurred()) goto fail;
            if (kind == NULL) kind = Py_None;
            int eq = PyObject_RichCompareBool(kind, s_attempt, Py_EQ);
            if (eq < 0) goto fail;
            if (eq) continue;
            PyObject *response = PyDict_GetItemWithError(call, s_response);
            if (response == NULL && PyErr_Occurred()) goto fail;
            if (response == NULL) response = Py_None;
            PyObject *flag = PyDict_GetItemWithError(call, s_response_truncated);
            if (flag == NULL && PyErr_Occurred()) goto fail;
            const int truncated = flag == Py_True;
            if (truncated) dropped++;
            const Py_ssize_t plen = PyUnicode_GET_LENGTH(path);
            Py_ssize_t at = PyUnicode_Find(path, s_inference_part, 0, plen, 1);
            if (at == -2) goto fail;
            int inference = at >= 0;
            if (!inference) {
                Py_ssize_t tail = PyUnicode_Tailmatch(path, s_completions_tail, 0, PY_SSIZE_T_MAX, 1);
                if (tail == -1) goto fail;
                inference = tail == 1;
            }
            if (inference) {
                PyObject *request = PyDict_GetItemWithError(call, s_json_data);
                if (request == NULL && PyErr_Occurred()) goto fail;
                if (request != NULL && PyDict_CheckExact(request)) {
                    int has = PyDict_Contains(request, s_messages);
                    if (has < 0) goto fail;
                    if (has) with_messages++;
                    else no_messages++;
                }
                if (PyDict_CheckExact(response)) {
                    Py_ssize_t n = answer_text_length(response);
                    if (n == -2) goto fail;
                    if (n == -1) goto leave;
                    if (n > drop_limit) whole_over++;
                }
            } else if (PyList_CheckExact(response)) {
                at = PyUnicode_Find(path, s_find_product_part, 0, plen, 1);
                if (at == -2) goto fail;
                if (at >= 0) {
                    int has = PyDict_Contains(call, s_result_product_ids);
                    if (has < 0) goto fail;
                    if (has) ids_beside++;
                    else list_no_ids++;
                }
            }
            eq = PyObject_RichCompareBool(kind, s_summary, Py_EQ);
            if (eq < 0) goto fail;
            if (!eq) continue;
            /* held across the calls back into Python below (str_route, and named_tools for a text block) */
            Py_INCREF(response);
            Py_XSETREF(route, PyObject_CallOneArg(str_route, path));
            if (route == NULL) {
                Py_DECREF(response);
                goto fail;
            }
            eq = PyObject_RichCompareBool(route, inference_path, Py_EQ);
            if (eq <= 0) Py_DECREF(response);
            if (eq < 0) goto fail;
            if (eq) {
                const int response_is_dict = PyDict_CheckExact(response);
                PyObject *named = response_is_dict ? answer_names(call, response, named_tools) : Py_NewRef(Py_None);
                Py_DECREF(response);
                if (named == NULL) goto fail;
                if (named != Py_None && !PyList_CheckExact(named)) {
                    Py_DECREF(named);
                    goto leave;
                }
                Py_CLEAR(pending);
                pending_at = 0;
                if (named != Py_None) pending = Py_NewRef(named);  /* pending = named or [] */
                last = named != Py_None ? LAST_READ : truncated ? LAST_DROPPED : LAST_NONE;
                Py_DECREF(named);
                continue;
            }
            PyObject *tool = PyDict_GetItemWithError(catalogue, route);
            if (tool == NULL) {
                if (PyErr_Occurred()) goto fail;
                continue;
            }
            Py_INCREF(tool);
            dispatches++;
            PyObject *seen = PyDict_GetItemWithError(by_tool, tool);
            if (seen == NULL && PyErr_Occurred()) {
                Py_DECREF(tool);
                goto fail;
            }
            PyObject *count = PyLong_FromSsize_t(seen == NULL ? 1 : PyLong_AsSsize_t(seen) + 1);  /* its own ints */
            int rc = count != NULL ? PyDict_SetItem(by_tool, tool, count) : -1;
            Py_XDECREF(count);
            if (rc < 0) {
                Py_DECREF(tool);
                goto fail;
            }
            const int has_pending = pending != NULL && pending_at < PyList_GET_SIZE(pending);
            eq = has_pending ? PyObject_RichCompareBool(PyList_GET_ITEM(pending, pending_at), tool, Py_EQ) : 0;
            Py_DECREF(tool);
            if (eq < 0) goto fail;
            if (eq) emitted++;
            else if (last == LAST_UNSET) miss_no_answer++;
            else if (last == LAST_DROPPED) miss_dropped++;
            else if (last == LAST_NONE) miss_no_body++;
            else miss_not_named++;
            if (has_pending) pending_at++;  /* pending.pop(0) */
        }
    }
    Py_XDECREF(pending);
    Py_XDECREF(route);
    PyObject *out = Py_BuildValue("(nnnnnnnnNnnnn)", dropped, no_messages, list_no_ids, with_messages, ids_beside,
                                  whole_over, emitted, dispatches, by_tool, miss_no_answer, miss_dropped,
                                  miss_no_body, miss_not_named);
    return out;
leave:
    Py_XDECREF(pending);
    Py_XDECREF(route);
    Py_DECREF(by_tool);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(pending);
    Py_XDECREF(route);
    Py_DECREF(by_tool);
    return NULL;
}

/* ---- the normaliser's product ids of a tool result ---- */

/* MAX_ID_DEPTH_LIMIT: the deepest walk a caller may ask for (the normaliser asks for 6); the C recursion stays
 * this shallow whatever the value, as the reference's stays under Python's recursion limit */
#define MAX_ID_DEPTH_LIMIT 64

/* out[pid] = None for a non-empty str, out[str(pid)] = None for an int (not a bool); nothing for any other value */
static int ids_add(PyObject *out, PyObject *pid) {
    if (PyUnicode_CheckExact(pid))
        return PyUnicode_GET_LENGTH(pid) ? PyDict_SetItem(out, pid, Py_None) : 0;
    if (PyLong_CheckExact(pid)) {
        PyObject *text = PyObject_Str(pid); /* raises as str() does past the int's digit limit */
        if (text == NULL) return -1;
        int r = PyDict_SetItem(out, text, Py_None);
        Py_DECREF(text);
        return r;
    }
    return 0;
}

/* value.get("product_id") of an exact dict as a new reference (None when absent), NULL with an exception */
static PyObject *product_id_of(PyObject *dict) {
    PyObject *pid = PyDict_GetItemWithError(dict, s_product_id);
    if (pid == NULL) {
        if (PyErr_Occurred()) return NULL;
        pid = Py_None;
    }
    Py_INCREF(pid);
    return pid;
}

/* oro_assets.traces.formats._collect_ids: a dict that has a product_id is a product and is not searched further */
static int ids_walk(PyObject *value, PyObject *out, int depth, int max_depth) {
    if (depth > max_depth) return 0;
    if (PyList_CheckExact(value)) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(value); i++) {
            PyObject *item = PyList_GET_ITEM(value, i);
            int r = 0;
            Py_INCREF(item);
            if (PyDict_CheckExact(item)) {
                PyObject *pid = product_id_of(item);
                if (pid == NULL) r = -1;
                else {
                    r = pid == Py_None ? ids_walk(item, out, depth + 1, max_depth) : ids_add(out, pid);
                    Py_DECREF(pid);
                }
            } else if (PyList_CheckExact(item)) {
                r = ids_walk(item, out, depth + 1, max_depth);
            }
            Py_DECREF(item);
            if (r < 0) return -1;
        }
    } else if (PyDict_CheckExact(value)) {
        PyObject *pid = product_id_of(value);
        if (pid == NULL) return -1;
        int r = 0;
        if (pid != Py_None) r = ids_add(out, pid);
        else {
            Py_ssize_t pos = 0;
            PyObject *key, *item;
            while (r == 0 && PyDict_Next(value, &pos, &key, &item)) {
                if (PyDict_CheckExact(item) || PyList_CheckExact(item)) {
                    Py_INCREF(item);
                    r = ids_walk(item, out, depth + 1, max_depth);
                    Py_DECREF(item);
                }
            }
        }
        Py_DECREF(pid);
        return r;
    }
    return 0;
}

PyDoc_STRVAR(collect_ids_doc,
"collect_ids(value, max_depth) -> list[str]\n\n"
"The product ids of a parsed tool result in first-seen order: oro_assets.traces.formats._collect_ids from depth 0\n"
"and list(out) (formats.product_ids_py on a value that is not a str). max_depth: 0 to 64.");

static PyObject *collect_ids(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "collect_ids(value, max_depth) takes 2 arguments");
        return NULL;
    }
    long max_depth = PyLong_AsLong(args[1]);
    if (max_depth == -1 && PyErr_Occurred()) return NULL;
    if (max_depth < 0 || max_depth > MAX_ID_DEPTH_LIMIT) {
        PyErr_Format(PyExc_ValueError, "max_depth must be 0 to %d", MAX_ID_DEPTH_LIMIT);
        return NULL;
    }
    PyObject *out = PyDict_New();
    if (out == NULL) return NULL;
    if (ids_walk(args[0], out, 0, (int)max_depth) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    PyObject *keys = PyDict_Keys(out);
    Py_DECREF(out);
    return keys;
}

/* ---- the normaliser's evidence of one step's proxy calls ---- */

static PyObject *s_usage, *s_completion_tokens, *s_status_code, *s_response_length, *s_timestamp, *s_params,
    *s_search_part, *s_none_shape, *s_tool_call_names, *s_answer_shape, *s_cut, *s_truncated, *s_dropped,
    *s_content_chars;

/* the value when it is an exact int in [lo, 2**63) (lo: -2**63 or 0), else None; a new reference */
static PyObject *int64_or_none(PyObject *value, int non_negative) {
    if (value != NULL && PyLong_CheckExact(value)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (!overflow && (!non_negative || v >= 0)) return Py_NewRef(value);
    }
    Py_RETURN_NONE;
}

/* dict.get(key) as a borrowed reference (NULL: absent, no exception) */
static inline PyObject *get(PyObject *dict, PyObject *key) { return PyDict_GetItemWithError(dict, key); }

typedef struct {
    PyObject *answer_calls, *evidence_from_text, *loads, *decode_error, *product_ids;
    int max_id_depth;
    Py_ssize_t content_limit;
} Helpers;

/* formats.inference_evidence of one exact-dict call; a new reference */
static PyObject *inference_evidence(Helpers *h, PyObject *call) {
    PyObject *tokens = NULL, *names = NULL, *parsed_calls = NULL, *shape = NULL;
    PyObject *cut = NULL, *content = NULL, *parsed = NULL, *out = NULL, *v = NULL;
    PyObject *flag = get(call, s_response_truncated);
    if (flag == NULL && PyErr_Occurred()) return NULL;
    int truncated = flag == Py_True;
    PyObject *resp = get(call, s_response);
    if (resp == NULL && PyErr_Occurred()) return NULL;
    int dropped = truncated && resp == NULL;  /* truncated and "response" not in call */
    Py_XINCREF(resp);  /* held across the helpers called back */
    tokens = Py_NewRef(Py_None);
    names = PyList_New(0);
    parsed_calls = PyList_New(0);
    shape = Py_NewRef(s_none_shape);
    cut = Py_NewRef(Py_False);
    content = PyUnicode_New(0, 0);
    if (names == NULL || parsed_calls == NULL || content == NULL) goto fail;
    if (resp != NULL && PyUnicode_CheckExact(resp)) {
        if (!truncated) {  /* a body cut at 2000 characters never parses: go straight to the scan */
            parsed = PyObject_CallOneArg(h->loads, resp);
            if (parsed == NULL) {
                if (!PyErr_ExceptionMatches(h->decode_error)) goto fail;
                PyErr_Clear();
            }
        }
        if (parsed == NULL) {
            PyObject *found = PyObject_CallOneArg(h->evidence_from_text, resp);
            if (found == NULL) goto fail;
            if (!PyTuple_CheckExact(found) || PyTuple_GET_SIZE(found) != 3) {
                Py_DECREF(found);
                PyErr_SetString(PyExc_TypeError, "the text scan must return (tokens, names, content)");
                goto fail;
            }
            Py_SETREF(tokens, Py_NewRef(PyTuple_GET_ITEM(found, 0)));
            Py_SETREF(names, Py_NewRef(PyTuple_GET_ITEM(found, 1)));
            Py_SETREF(content, Py_NewRef(PyTuple_GET_ITEM(found, 2)));
            Py_DECREF(found);
            truncated = 1;
            Py_SETREF(cut, Py_NewRef(Py_True));
            parsed = Py_NewRef(Py_None);
        }
    } else {
        parsed = Py_NewRef(resp != NULL ? resp : Py_None);
    }
    if (PyDict_CheckExact(parsed)) {
        PyObject *usage = get(parsed, s_usage);
        if (usage == NULL && PyErr_Occurred()) goto fail;
        if (usage != NULL && PyDict_CheckExact(usage)) {
            PyObject *t = get(usage, s_completion_tokens);
            if (t == NULL && PyErr_Occurred()) goto fail;
            Py_SETREF(tokens, int64_or_none(t, 0));
            if (tokens == NULL) goto fail;
        }
        PyObject *choices = get(parsed, s_choices);
        if (choices == NULL && PyErr_Occurred()) goto fail;
        if (choices != NULL && PyList_CheckExact(choices)) {
            Py_INCREF(choices);
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(choices); i++) {
                PyObject *choice = PyList_GET_ITEM(choices, i), *msg = NULL;
                if (!PyDict_CheckExact(choice)) continue;
                msg = get(choice, s_message);
                if (msg == NULL && PyErr_Occurred()) { Py_DECREF(choices); goto fail; }
                if (msg == NULL || !PyDict_CheckExact(msg)) continue;
                Py_INCREF(msg);
                int empty = PyObject_Not(content);
                if (empty < 0) { Py_DECREF(msg); Py_DECREF(choices); goto fail; }
                if (empty) {  /* content = msg.get("content") or ""; a non-str is "" */
                    PyObject *c = get(msg, s_content);
                    if (c == NULL && PyErr_Occurred()) { Py_DECREF(msg); Py_DECREF(choices); goto fail; }
                    int truth = c == NULL ? 0 : PyObject_IsTrue(c);
                    if (truth < 0) { Py_DECREF(msg); Py_DECREF(choices); goto fail; }
                    if (truth && PyUnicode_CheckExact(c)) Py_SETREF(content, Py_NewRef(c));
                    else Py_SETREF(content, PyUnicode_New(0, 0));
                    if (content == NULL) { Py_DECREF(msg); Py_DECREF(choices); goto fail; }
                }
                PyObject *got = PyObject_CallOneArg(h->answer_calls, msg);
                Py_DECREF(msg);
                if (got == NULL) { Py_DECREF(choices); goto fail; }
                if (!PyTuple_CheckExact(got) || PyTuple_GET_SIZE(got) != 3) {
                    Py_DECREF(got);
                    Py_DECREF(choices);
                    PyErr_SetString(PyExc_TypeError, "answer_calls must return (calls, shape, cut)");
                    goto fail;
                }
                PyObject *got_calls = PyTuple_GET_ITEM(got, 0), *got_shape = PyTuple_GET_ITEM(got, 1);
                int other = PyObject_RichCompareBool(got_shape, s_none_shape, Py_NE);
                int unset = other > 0 ? PyObject_RichCompareBool(shape, s_none_shape, Py_EQ) : 0;
                int was_cut = (other < 0 || unset < 0) ? -1 : PyObject_IsTrue(cut);
                if (was_cut < 0) { Py_DECREF(got); Py_DECREF(choices); goto fail; }
                if (other && unset) Py_SETREF(shape, Py_NewRef(got_shape));
                if (!was_cut) Py_SETREF(cut, Py_NewRef(PyTuple_GET_ITEM(got, 2)));  /* cut = cut or got_cut */
                int r = PyList_SetSlice(parsed_calls, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, got_calls);
                Py_DECREF(got);
                if (r < 0) { Py_DECREF(choices); goto fail; }
            }
            Py_DECREF(choices);
        }
        /* names = names + [c["name"] for c in parsed_calls] */
        PyObject *joined = PySequence_List(names);
        if (joined == NULL) goto fail;
        Py_SETREF(names, joined);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(parsed_calls); i++) {
            PyObject *name = PyObject_GetItem(PyList_GET_ITEM(parsed_calls, i), s_name);
            if (name == NULL) goto fail;
            int r = PyList_Append(names, name);
            Py_DECREF(name);
            if (r < 0) goto fail;
        }
    }
    out = PyDict_New();
    if (out == NULL) goto fail;
    Py_ssize_t n_content = PyObject_Length(content);
    if (n_content < 0) goto fail;
    v = n_content <= h->content_limit ? Py_NewRef(content) : PySequence_GetSlice(content, 0, h->content_limit);
    if (v == NULL) goto fail;
#define PUT(key, value) if (PyDict_SetItem(out, key, value) < 0) goto fail
    PUT(s_completion_tokens, tokens);
    PUT(s_tool_call_names, names);
    PUT(s_tool_calls, parsed_calls);
    PUT(s_answer_shape, shape);
    PUT(s_cut, cut);
    PUT(s_content, v);
    Py_SETREF(v, NULL);
    PyObject *raw = get(call, s_status_code);
    if (raw == NULL && PyErr_Occurred()) goto fail;
    if ((v = int64_or_none(raw, 0)) == NULL) goto fail;
    PUT(s_status_code, v);
    Py_SETREF(v, NULL);
    PUT(s_truncated, truncated ? Py_True : Py_False);
    PUT(s_dropped, dropped ? Py_True : Py_False);
    raw = get(call, s_response_length);
    if (raw == NULL && PyErr_Occurred()) goto fail;
    if ((v = int64_or_none(raw, 1)) == NULL) goto fail;
    PUT(s_response_length, v);
    Py_SETREF(v, NULL);
    raw = get(call, s_timestamp);
    if (raw == NULL && PyErr_Occurred()) goto fail;
    if ((v = int64_or_none(raw, 0)) == NULL) goto fail;
    PUT(s_timestamp, v);
    Py_SETREF(v, NULL);
    if (n_content > h->content_limit) {  /* a whole long answer (later recorder): the evidence says what it cut */
        if ((v = PyLong_FromSsize_t(n_content)) == NULL) goto fail;
        PUT(s_content_chars, v);
        Py_SETREF(v, NULL);
    }
#undef PUT
    Py_DECREF(tokens); Py_DECREF(names); Py_DECREF(parsed_calls); Py_DECREF(shape); Py_DECREF(cut);
    Py_DECREF(content); Py_DECREF(parsed); Py_XDECREF(resp);
    return out;
fail:
    Py_XDECREF(tokens); Py_XDECREF(names); Py_XDECREF(parsed_calls); Py_XDECREF(shape); Py_XDECREF(cut);
    Py_XDECREF(content); Py_XDECREF(parsed); Py_XDECREF(out); Py_XDECREF(v); Py_XDECREF(resp);
    return NULL;
}

/* formats.id_list: a list's str and int (not bool) items, first-seen, as str; None when not a list */
static PyObject *id_list(PyObject *value) {
    if (value == NULL || !PyList_Check(value)) Py_RETURN_NONE;
    PyObject *out = PyDict_New(), *it = NULL, *item;
    if (out == NULL) return NULL;
    if ((it = PyObject_GetIter(value)) == NULL) goto fail;
    while ((item = PyIter_Next(it)) != NULL) {
        int r = 0;
        if (PyUnicode_Check(item)) r = PyDict_SetItem(out, item, Py_None);
        else if (PyLong_Check(item) && !PyBool_Check(item)) {
            PyObject *text = PyObject_Str(item);
            r = text == NULL ? -1 : PyDict_SetItem(out, text, Py_None);
            Py_XDECREF(text);
        }
        Py_DECREF(item);
        if (r < 0) goto fail;
    }
    if (PyErr_Occurred()) goto fail;
    Py_DECREF(it);
    PyObject *keys = PyDict_Keys(out);
    Py_DECREF(out);
    return keys;
fail:
    Py_XDECREF(it);
    Py_DECREF(out);
    return NULL;
}

/* formats.search_evidence of one exact-dict call; a new reference */
static PyObject *search_evidence(Helpers *h, PyObject *call, PyObject *path) {
    PyObject *params = get(call, s_params), *ids = NULL, *ts = NULL, *out = NULL;
    if (params == NULL && PyErr_Occurred()) return NULL;
    if (params == NULL || !PyDict_Check(params)) {
        params = get(call, s_json_data);
        if (params == NULL && PyErr_Occurred()) return NULL;
    }
    if (params == NULL || !PyDict_Check(params)) {
        if ((params = PyDict_New()) == NULL) return NULL;
    } else {
        Py_INCREF(params);
    }
    PyObject *listed = get(call, s_result_product_ids);
    if (listed == NULL && PyErr_Occurred()) goto fail;
    if ((ids = id_list(listed)) == NULL) goto fail;
    if (ids == Py_None) {
        Py_DECREF(ids);
        PyObject *resp = get(call, s_response);
        if (resp == NULL && PyErr_Occurred()) goto fail;
        if (resp == NULL) resp = Py_None;
        if (PyUnicode_Check(resp)) {  /* JSON text: read by product_ids itself */
            ids = PyObject_CallOneArg(h->product_ids, resp);
        } else {
            ids = PyDict_New();
            if (ids != NULL && ids_walk(resp, ids, 0, h->max_id_depth) < 0) Py_CLEAR(ids);
            if (ids != NULL) Py_SETREF(ids, PyDict_Keys(ids));
        }
        if (ids == NULL) goto fail;
    }
    PyObject *raw = get(call, s_timestamp);
    if (raw == NULL && PyErr_Occurred()) goto fail;
    if ((ts = int64_or_none(raw, 0)) == NULL) goto fail;
    if ((out = PyDict_New()) == NULL) goto fail;
    if (PyDict_SetItem(out, s_path, path) < 0 || PyDict_SetItem(out, s_params, params) < 0 ||
        PyDict_SetItem(out, s_result_product_ids, ids) < 0 || PyDict_SetItem(out, s_timestamp, ts) < 0)
        goto fail;
    Py_DECREF(params); Py_DECREF(ids); Py_DECREF(ts);
    return out;
fail:
    Py_XDECREF(params); Py_XDECREF(ids); Py_XDECREF(ts); Py_XDECREF(out);
    return NULL;
}

PyDoc_STRVAR(proxy_evidence_doc,
"proxy_evidence(proxy_calls, answer_calls, evidence_from_text, loads, decode_error, product_ids, max_id_depth,\n"
"               content_limit) -> (inference, search)\n\n"
"oro_assets.traces.formats.proxy_evidence_py: the inference and search evidence of one step's proxy calls, with\n"
"the reference's own helpers for what is read as text (answer_calls, _evidence_from_text, jsonio.loads and its\n"
"JSONDecodeError, product_ids of a str response).");

static PyObject *proxy_evidence(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "proxy_evidence takes 8 arguments");
        return NULL;
    }
    Helpers h = {args[1], args[2], args[3], args[4], args[5], 0, 0};
    long depth = PyLong_AsLong(args[6]);
    if (depth == -1 && PyErr_Occurred()) return NULL;
    if (depth < 0 || depth > MAX_ID_DEPTH_LIMIT) {
        PyErr_Format(PyExc_ValueError, "max_id_depth must be 0 to %d", MAX_ID_DEPTH_LIMIT);
        return NULL;
    }
    h.max_id_depth = (int)depth;
    h.content_limit = PyLong_AsSsize_t(args[7]);
    if (h.content_limit == -1 && PyErr_Occurred()) return NULL;
    if (h.content_limit < 0) {
        PyErr_SetString(PyExc_ValueError, "content_limit must be >= 0");
        return NULL;
    }
    if (!PyType_Check(h.decode_error) || !PyType_IsSubtype((PyTypeObject *)h.decode_error,
                                                            (PyTypeObject *)PyExc_BaseException)) {
        PyErr_SetString(PyExc_TypeError, "decode_error must be an exception class");
        return NULL;
    }
    PyObject *inference = PyList_New(0), *search = PyList_New(0), *it = NULL, *call = NULL;
    if (inference == NULL || search == NULL || (it = PyObject_GetIter(args[0])) == NULL) goto fail;
    while ((call = PyIter_Next(it)) != NULL) {
        PyObject *entry = NULL, *into = NULL;
        if (PyDict_CheckExact(call)) {
            PyObject *kind = get(call, s_kind), *path;
            if (kind == NULL && PyErr_Occurred()) goto fail;
            int attempt = PyObject_RichCompareBool(kind != NULL ? kind : Py_None, s_attempt, Py_EQ);
            if (attempt < 0) goto fail;
            if (!attempt && (path = get(call, s_path)) != NULL && PyUnicode_CheckExact(path)) {
                Py_INCREF(path);  /* held across the helpers the evidence calls back */
                int inf = PyUnicode_Contains(path, s_inference_part);
                if (inf == 0) {
                    Py_ssize_t tail = PyUnicode_Tailmatch(path, s_completions_tail, 0, PY_SSIZE_T_MAX, 1);
                    inf = tail < 0 ? -1 : (int)tail;
                }
                if (inf > 0) {
                    entry = inference_evidence(&h, call);
                    into = inference;
                } else if (inf == 0) {
                    int found = PyUnicode_Contains(path, s_search_part);
                    if (found > 0) {
                        entry = search_evidence(&h, call, path);
                        into = search;
                    }
                    inf = found < 0 ? -1 : 0;
                }
                Py_DECREF(path);
                if (inf < 0 || (into != NULL && entry == NULL)) goto fail;
            } else if (PyErr_Occurred()) {
                goto fail;
            }
        }
        if (entry != NULL) {
            int r = PyList_Append(into, entry);
            Py_DECREF(entry);
            if (r < 0) goto fail;
        }
        Py_CLEAR(call);
    }
    if (PyErr_Occurred()) goto fail;
    Py_DECREF(it);
    return Py_BuildValue("(NN)", inference, search);
fail:
    Py_XDECREF(call);
    Py_XDECREF(it);
    Py_XDECREF(inference);
    Py_XDECREF(search);
    return NULL;
}

/* ---- the rule judge's per-step word features ---- */

/* `w in s` for a set or frozenset of str: 1, 0, or -1 with an exception */
static inline int in_set(PyObject *set, PyObject *w) { return PySet_Contains(set, w); }

/* the sorted list of a set of str (sorted({...})); steals `set` */
static PyObject *sorted_list(PyObject *set) {
    PyObject *list = PySequence_List(set);
    Py_DECREF(set);
    if (list == NULL) return NULL;
    if (PyList_Sort(list) < 0) {
        Py_DECREF(list);
        return NULL;
    }
    return list;
}

PyDoc_STRVAR(step_words_doc,
"step_words(think_words, result_words, query_words, own_words, stopwords, agent_vocabulary, result_references)\n--\n\n"
"``(found, references)``: the C twin of ``oro_assets.judge.rule.step_words_py``. None, having computed nothing,\n"
"where ``think_words`` is not a tuple of str (the reference reads it).");

static PyObject *step_words(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 7) {
        PyErr_Format(PyExc_TypeError, "step_words() takes 7 arguments (%zd given)", nargs);
        return NULL;
    }
    for (int i = 1; i < 7; i++)
        if (!PyAnySet_Check(args[i])) {
            PyErr_SetString(PyExc_TypeError, "step_words(): every argument after think_words must be a set");
            return NULL;
        }
    PyObject *think = args[0], *results = args[1], *query = args[2], *own = args[3], *stop = args[4],
             *vocabulary = args[5], *references = args[6];
    if (!PyTuple_CheckExact(think)) Py_RETURN_NONE;
    const Py_ssize_t n = PyTuple_GET_SIZE(think);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(think, i))) Py_RETURN_NONE;
    PyObject *found = PySet_New(NULL), *refs = PySet_New(NULL);
    if (found == NULL || refs == NULL) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *w = PyTuple_GET_ITEM(think, i);
        int r = in_set(results, w);
        if (r < 0) goto fail;
        int in_query = -2;  /* not looked up yet */
        if (r) {
            in_query = in_set(query, w);
            if (in_query < 0) goto fail;
            int keep = !in_query;
            if (keep && (r = in_set(own, w)) != 0) keep = 0;
            if (r < 0) goto fail;
            if (keep && (r = in_set(stop, w)) != 0) keep = 0;
            if (r < 0) goto fail;
            if (keep && (r = in_set(vocabulary, w)) != 0) keep = 0;
            if (r < 0) goto fail;
            if (keep && PyUnicode_GET_LENGTH(w) >= 3 && PySet_Add(found, w) < 0) goto fail;
        }
        r = in_set(references, w);
        if (r < 0) goto fail;
        if (r) {
            if (in_query == -2) in_query = in_set(query, w);
            if (in_query < 0) goto fail;
            if (!in_query && PySet_Add(refs, w) < 0) goto fail;
        }
    }
    PyObject *found_list = sorted_list(found);
    found = NULL;
    PyObject *refs_list = found_list != NULL ? sorted_list(refs) : NULL;
    if (found_list == NULL) Py_DECREF(refs);
    refs = NULL;
    if (refs_list == NULL) {
        Py_XDECREF(found_list);
        return NULL;
    }
    return Py_BuildValue("(NN)", found_list, refs_list);
fail:
    Py_XDECREF(found);
    Py_XDECREF(refs);
    return NULL;
}

/* ---- step_evidence: the structural filter's evidence of one step (oro_assets.curation.structural._step_evidence_py) */

static PyObject *s_get, *s_inference, *s_step, *s_n_inference, *s_verdict, *s_code_made, *s_arguments,
    *s_dropped_lengths, *s_no_calls, *s_no_inference_in_window, *s_carried, *s_names_only, *s_dropped_too_short,
    *s_not_carried;

/* obj.get(key) as the reference calls it: a new reference, NULL with the exception raised. An exact dict is read
 * directly; anything else has its own ``get`` called (a dict subclass's override, or the AttributeError of a value
 * that has none). */
static PyObject *get_of(PyObject *obj, PyObject *key) {
    if (PyDict_CheckExact(obj)) {
        PyObject *v = PyDict_GetItemWithError(obj, key);
        if (v != NULL) return Py_NewRef(v);
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    return PyObject_CallMethodOneArg(obj, s_get, key);
}

/* truthiness of obj.get(key): 1, 0, or -1 with the exception raised */
static int get_true(PyObject *obj, PyObject *key) {
    PyObject *v = get_of(obj, key);
    if (v == NULL) return -1;
    int t = PyObject_IsTrue(v);
    Py_DECREF(v);
    return t;
}

/* ``value or ()`` as the reference iterates it: a new iterator, or NULL with *empty set (a falsy value) or with the
 * exception raised (*empty 0) */
static PyObject *iter_or_empty(PyObject *value, int *empty) {
    *empty = 0;
    int t = PyObject_IsTrue(value);
    if (t < 0) return NULL;
    if (!t) {
        *empty = 1;
        return NULL;
    }
    return PyObject_GetIter(value);
}

/* inference_succeeded(status_code), an int or None read here, any other value by the reference (passed in) */
static int succeeded_of(PyObject *status, PyObject *succeeded) {
    if (status == Py_None) return 1;
    if (PyLong_CheckExact(status)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(status, &overflow);
        if (v == -1 && PyErr_Occurred()) return -1;
        return !overflow && v >= 200 && v < 300;
    }
    PyObject *r = PyObject_CallOneArg(succeeded, status);
    if (r == NULL) return -1;
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    return t;
}

/* [c.get("name") for c in calls], or [{"name": c.get("name"), "arguments": c.get("arguments")} for c in calls]
 * (``pairs``), calls being ``step.get("tool_calls") or ()`` (NULL: the value was falsy) */
static PyObject *call_list(PyObject *calls, int pairs) {
    PyObject *out = PyList_New(0);
    if (out == NULL || calls == NULL) return out;
    PyObject *it = PyObject_GetIter(calls);
    if (it == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    PyObject *c;
    while ((c = PyIter_Next(it)) != NULL) {
        PyObject *name = get_of(c, s_name), *item = name;
        if (name != NULL && pairs) {
            PyObject *arguments = get_of(c, s_arguments);
            item = arguments == NULL ? NULL : PyDict_New();
            if (item != NULL && (PyDict_SetItem(item, s_name, name) < 0 ||
                                 PyDict_SetItem(item, s_arguments, arguments) < 0))
                Py_CLEAR(item);
            Py_XDECREF(arguments);
            Py_DECREF(name);
        }
        Py_DECREF(c);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(it);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* what an answer said it called: ``entry.get("tool_calls") or [{"name": n, "arguments": None} for n in
 * entry.get("tool_call_names") or ()]`` */
static PyObject *said_of(PyObject *entry) {
    PyObject *said = get_of(entry, s_tool_calls);
    if (said == NULL) return NULL;
    int t = PyObject_IsTrue(said);
    if (t != 0) {
        if (t < 0) Py_CLEAR(said);
        return said;
    }
    Py_DECREF(said);
    PyObject *names = get_of(entry, s_tool_call_names);
    if (names == NULL) return NULL;
    PyObject *out = PyList_New(0);
    int empty;
    PyObject *it = out == NULL ? NULL : iter_or_empty(names, &empty);
    Py_DECREF(names);
    if (it == NULL) {
        if (out != NULL && empty) return out;
        Py_XDECREF(out);
        return NULL;
    }
    PyObject *n;
    while ((n = PyIter_Next(it)) != NULL) {
        PyObject *item = PyDict_New();
        int bad = item == NULL || PyDict_SetItem(item, s_name, n) < 0 || PyDict_SetItem(item, s_arguments, Py_None) < 0 ||
                  PyList_Append(out, item) < 0;
        Py_XDECREF(item);
        Py_DECREF(n);
        if (bad) {
            Py_DECREF(it);
            Py_DECREF(out);
            return NULL;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) Py_CLEAR(out);
    return out;
}

PyDoc_STRVAR(step_evidence_doc,
"step_evidence(step, same_calls, claimed_length, inference_succeeded, max)\n--\n\n"
"The structural filter's evidence dict of one step: the C twin of\n"
"``oro_assets.curation.structural._step_evidence_py``, with the reference's own helpers passed in (the call\n"
"comparison, the claimed length, the success test of a status that is neither an int nor None, and ``max``).\n"
"``same_calls`` must return a pair (a tuple of two).");

static PyObject *evidence_of(PyObject *const *args);

static PyObject *step_evidence(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "step_evidence() takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    return evidence_of(args);
}

/* step_evidence's work: args are (step, same_calls, claimed_length, inference_succeeded, max) */
static PyObject *evidence_of(PyObject *const *args) {
    PyObject *step = args[0], *same_calls = args[1], *claimed_length = args[2], *succeeded = args[3],
             *max_fn = args[4];
    PyObject *calls = NULL, *names = NULL, *inferences = NULL, *out = NULL, *done = NULL, *dropped = NULL,
             *value = NULL, *it = NULL, *entry = NULL;
    PyObject *verdict = NULL; /* borrowed: an interned name */

    int t;
    if ((calls = get_of(step, s_tool_calls)) == NULL || (t = PyObject_IsTrue(calls)) < 0) goto fail;
    if (!t) Py_CLEAR(calls); /* ``or ()``: nothing to iterate */
    if ((names = call_list(calls, 0)) == NULL) goto fail;
    if ((inferences = PyList_New(0)) == NULL || (value = get_of(step, s_inference)) == NULL) goto fail;
    int empty;
    it = iter_or_empty(value, &empty);
    Py_CLEAR(value);
    if (it == NULL && !empty) goto fail;
    if (it != NULL) {
        while ((entry = PyIter_Next(it)) != NULL) {
            PyObject *status = get_of(entry, s_status_code);
            if (status == NULL) goto fail;
            int ok = succeeded_of(status, succeeded);
            Py_DECREF(status);
            if (ok < 0 || (ok && PyList_Append(inferences, entry) < 0)) goto fail;
            Py_CLEAR(entry);
        }
        Py_CLEAR(it);
        if (PyErr_Occurred()) goto fail;
    }
    const Py_ssize_t n_inference = PyList_GET_SIZE(inferences);
    if ((out = PyDict_New()) == NULL || (value = get_of(step, s_step)) == NULL ||
        PyDict_SetItem(out, s_step, value) < 0 || PyDict_SetItem(out, s_tool_call_names, names) < 0)
        goto fail;
    Py_CLEAR(value);
    if ((value = PyLong_FromSsize_t(n_inference)) == NULL || PyDict_SetItem(out, s_n_inference, value) < 0) goto fail;
    Py_CLEAR(value);
    if (PyList_GET_SIZE(names) == 0) {
        verdict = s_no_calls;
        goto done;
    }
    if ((t = get_true(step, s_code_made)) < 0) goto fail;
    if (t) {
        verdict = s_code_made;
        goto done;
    }
    if (n_inference == 0) {
        verdict = s_no_inference_in_window;
        goto done;
    }
    if ((done = call_list(calls, 1)) == NULL || (dropped = PyList_New(0)) == NULL) goto fail;
    for (Py_ssize_t i = 0; i < n_inference; i++) {
        PyObject *e = PyList_GET_ITEM(inferences, i);
        int is_dropped = get_true(e, s_dropped);
        if (is_dropped < 0) goto fail;
        if (!is_dropped) {
            if ((t = get_true(e, s_truncated)) < 0) goto fail;
            if (t) {
                if ((t = get_true(e, s_tool_calls)) < 0) goto fail;
                is_dropped = !t;
            }
        }
        if (is_dropped) {
            if ((value = get_of(e, s_response_length)) == NULL || (t = PyObject_IsTrue(value)) < 0) goto fail;
            if (!t) {
                Py_DECREF(value);
                if ((value = PyLong_FromLong(0)) == NULL) goto fail;
            }
            if (PyList_Append(dropped, value) < 0) goto fail;
            Py_CLEAR(value);
            continue;
        }
        PyObject *said = said_of(e);
        if (said == NULL) goto fail;
        if ((t = PyObject_IsTrue(said)) <= 0) {
            Py_DECREF(said);
            if (t < 0) goto fail;
            continue;
        }
        value = PyObject_CallFunctionObjArgs(same_calls, said, done, NULL);
        Py_DECREF(said);
        if (value == NULL) goto fail;
        if (!PyTuple_CheckExact(value) || PyTuple_GET_SIZE(value) != 2) {
            PyErr_SetString(PyExc_TypeError, "step_evidence(): same_calls must return a pair");
            goto fail;
        }
        int args_ok = PyObject_IsTrue(PyTuple_GET_ITEM(value, 1)), names_ok = -2; /* -2: not read yet */
        if (args_ok < 0) goto fail;
        int carried = args_ok;
        if (!carried) {
            if ((names_ok = PyObject_IsTrue(PyTuple_GET_ITEM(value, 0))) < 0) goto fail;
            if (names_ok && (carried = get_true(e, s_cut)) < 0) goto fail;
        }
        Py_CLEAR(value);
        if (carried) {
            verdict = s_carried;
            if ((value = get_of(e, s_answer_shape)) == NULL || PyDict_SetItem(out, s_answer_shape, value) < 0)
                goto fail;
            Py_CLEAR(value);
            break;
        }
        if (names_ok) verdict = s_names_only;
    }
    if (verdict == NULL) {
        const Py_ssize_t n_dropped = PyList_GET_SIZE(dropped);
        const int kept_whole = n_dropped < n_inference;
        if (n_dropped) {
            PyObject *longest = PyObject_CallOneArg(max_fn, dropped);
            if (longest == NULL) goto fail;
            PyObject *claimed = PyObject_CallOneArg(claimed_length, step);
            if (claimed == NULL) {
                Py_DECREF(longest);
                goto fail;
            }
            value = PyObject_RichCompare(longest, claimed, Py_GE);
            Py_DECREF(longest);
            Py_DECREF(claimed);
            if (value == NULL || (t = PyObject_IsTrue(value)) < 0) goto fail;
            Py_CLEAR(value);
            if (t) verdict = s_dropped;
        }
        if (verdict == NULL) verdict = n_dropped && !kept_whole ? s_dropped_too_short : s_not_carried;
    }
done:
    if (PyDict_SetItem(out, s_verdict, verdict) < 0) goto fail;
    if (dropped != NULL && PyList_GET_SIZE(dropped) && PyDict_SetItem(out, s_dropped_lengths, dropped) < 0) goto fail;
    Py_XDECREF(calls);
    Py_DECREF(names);
    Py_DECREF(inferences);
    Py_XDECREF(done);
    Py_XDECREF(dropped);
    return out;
fail:
    Py_XDECREF(calls);
    Py_XDECREF(names);
    Py_XDECREF(inferences);
    Py_XDECREF(out);
    Py_XDECREF(done);
    Py_XDECREF(dropped);
    Py_XDECREF(value);
    Py_XDECREF(it);
    Py_XDECREF(entry);
    return NULL;
}

/* ---- title trigrams: the rule judge's index of product title trigrams (oro_assets.judge.rule.own_titles_py,
 * absorb_titles_py, trigram_names_py) */

/* _own(owners, grams, pid) and firsts.update(gram[0] for gram in grams) */
static int own_grams(PyObject *owners, PyObject *grams, PyObject *pid, PyObject *several, PyObject *firsts) {
    PyObject *it = PyObject_GetIter(grams), *gram;
    if (it == NULL) return -1;
    while ((gram = PyIter_Next(it)) != NULL) {
        PyObject *have = PyDict_GetItemWithError(owners, gram); /* borrowed */
        int bad = 0;
        if (have == NULL && PyErr_Occurred()) bad = 1;
        else if (have == NULL || have == Py_None) bad = PyDict_SetItem(owners, gram, pid) < 0;
        else {
            Py_INCREF(have);
            int ne = PyObject_RichCompareBool(have, pid, Py_NE);
            Py_DECREF(have);
            bad = ne < 0 || (ne && PyDict_SetItem(owners, gram, several) < 0);
        }
        if (!bad) {
            PyObject *first = PyTuple_CheckExact(gram) && PyTuple_GET_SIZE(gram) > 0
                                  ? Py_NewRef(PyTuple_GET_ITEM(gram, 0)) : PySequence_GetItem(gram, 0);
            bad = first == NULL || PySet_Add(firsts, first) < 0;
            Py_XDECREF(first);
        }
        Py_DECREF(gram);
        if (bad) {
            Py_DECREF(it);
            return -1;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* the (pid, title_words) pair `item`, borrowed into *pid and *words */
static int title_pair(PyObject *item, PyObject **pid, PyObject **words) {
    if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 2) {
        PyErr_SetString(PyExc_TypeError, "title trigrams: each title must be a (product id, title words) tuple");
        return -1;
    }
    *pid = PyTuple_GET_ITEM(item, 0);
    *words = PyTuple_GET_ITEM(item, 1);
    return 0;
}

static int index_args(PyObject *const *args, int owners_may_be_none) {
    if (!(PyDict_CheckExact(args[0]) || (owners_may_be_none && args[0] == Py_None)) || !PySet_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "title trigrams: owners must be a dict and firsts a set");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(own_titles_doc,
"own_titles(owners, firsts, titles, title_trigrams, several)\n--\n\n"
"Each (product id, title words) pair of ``titles``: its trigrams (``title_trigrams(words)``) recorded in\n"
"``owners`` (the id, or ``several`` where another id has the trigram) and their first words added to\n"
"``firsts``. The C twin of ``oro_assets.judge.rule.own_titles_py``.");

static PyObject *own_titles(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "own_titles() takes 5 arguments (%zd given)", nargs);
        return NULL;
    }
    if (index_args(args, 0) < 0) return NULL;
    PyObject *it = PyObject_GetIter(args[2]), *item;
    if (it == NULL) return NULL;
    while ((item = PyIter_Next(it)) != NULL) {
        PyObject *pid, *words, *grams = NULL;
        int bad = title_pair(item, &pid, &words) < 0 || (grams = PyObject_CallOneArg(args[3], words)) == NULL ||
                  own_grams(args[0], grams, pid, args[4], args[1]) < 0;
        Py_XDECREF(grams);
        Py_DECREF(item);
        if (bad) {
            Py_DECREF(it);
            return NULL;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(absorb_titles_doc,
"absorb_titles(titles, owners, firsts, new_titles, title_trigrams, several)\n--\n\n"
"A tool result's (product id, title words) pairs taken into ``titles``; a new product's trigrams into\n"
"``owners`` and ``firsts`` while ``owners`` is not None. True when a known product was retitled (the index\n"
"must be rebuilt). The C twin of ``oro_assets.judge.rule.absorb_titles_py``.");

static PyObject *absorb_titles(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "absorb_titles() takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *titles = args[0], *owners = args[1];
    if (!PyDict_CheckExact(titles) || index_args(args + 1, 1) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "absorb_titles(): titles must be a dict");
        return NULL;
    }
    int reset = 0;
    PyObject *it = PyObject_GetIter(args[3]), *item;
    if (it == NULL) return NULL;
    while ((item = PyIter_Next(it)) != NULL) {
        PyObject *pid, *words, *grams = NULL;
        int bad = title_pair(item, &pid, &words) < 0;
        if (!bad) {
            PyObject *before = PyDict_GetItemWithError(titles, pid);
            Py_XINCREF(before);
            int same = 0;
            if (before == NULL && PyErr_Occurred()) bad = 1;
            else if ((same = PyObject_RichCompareBool(before != NULL ? before : Py_None, words, Py_EQ)) < 0) bad = 1;
            else if (!same) {
                if (PyDict_SetItem(titles, pid, words) < 0) bad = 1;
                else if (before != NULL && before != Py_None) {
                    reset = 1;
                    owners = Py_None; /* rebuilt when next asked: no more updates */
                } else if (owners != Py_None) {
                    bad = (grams = PyObject_CallOneArg(args[4], words)) == NULL ||
                          own_grams(owners, grams, pid, args[5], args[2]) < 0;
                }
            }
            Py_XDECREF(before);
        }
        Py_XDECREF(grams);
        Py_DECREF(item);
        if (bad) {
            Py_DECREF(it);
            return NULL;
        }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;
    return PyBool_FromLong(reset);
}

PyDoc_STRVAR(trigram_names_doc,
"trigram_names(text_words, firsts, owners, words_or_stop, several, named)\n--\n\n"
"The product ids the text's word trigrams name (a trigram starting with a word of ``firsts``, owned by one\n"
"product in ``owners``, not all of its words in ``words_or_stop``), added to the set ``named``. The C twin of\n"
"``oro_assets.judge.rule.trigram_names_py``; ``text_words`` must be a tuple.");

static PyObject *trigram_names(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "trigram_names() takes 6 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *words = args[0], *firsts = args[1], *owners = args[2], *stop = args[3], *several = args[4],
             *named = args[5];
    if (!PyTuple_CheckExact(words) || !PyAnySet_Check(firsts) || !PyDict_CheckExact(owners) || !PyAnySet_Check(stop) ||
        !PySet_CheckExact(named)) {
        PyErr_SetString(PyExc_TypeError,
                        "trigram_names(): a tuple of words, a set, a dict, a set, the marker and a set to add to");
        return NULL;
    }
    const Py_ssize_t last = PyTuple_GET_SIZE(words) - 2;
    for (Py_ssize_t i = 0; i < last; i++) {
        PyObject *word = PyTuple_GET_ITEM(words, i);
        int r = PySet_Contains(firsts, word);
        if (r < 0) return NULL;
        if (!r) continue;
        PyObject *gram = PyTuple_Pack(3, word, PyTuple_GET_ITEM(words, i + 1), PyTuple_GET_ITEM(words, i + 2));
        if (gram == NULL) return NULL;
        PyObject *pid = PyDict_GetItemWithError(owners, gram); /* borrowed */
        int all_stop = 1;
        if (pid == NULL && PyErr_Occurred()) {
            Py_DECREF(gram);
            return NULL;
        }
        if (pid != NULL && pid != several) {
            Py_INCREF(pid);
            for (int k = 0; k < 3 && all_stop; k++) {
                all_stop = PySet_Contains(stop, PyTuple_GET_ITEM(gram, k));
                if (all_stop < 0) break;
            }
            r = all_stop < 0 ? -1 : all_stop ? 0 : PySet_Add(named, pid);
            Py_DECREF(pid);
            if (r < 0) {
                Py_DECREF(gram);
                return NULL;
            }
        }
        Py_DECREF(gram);
    }
    Py_RETURN_NONE;
}

/* ---- trace_steps: the judge's evidence of a trace's steps (oro_assets.judge.evidence._trace_steps_py) */

static PyObject *s_role, *s_tool, *s_assistant, *s_tool_call_id, *s_id, *s_search, *s_think, *s_empty;

/* value.get(key) of an exact dict: borrowed, None when missing, NULL with the exception raised */
static PyObject *dict_get(PyObject *dict, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(dict, key);
    if (v == NULL && !PyErr_Occurred()) v = Py_None;
    return v;
}

/* evidence._str: "" for None, a str itself, anything else by the reference (passed in) */
static PyObject *str_of(PyObject *v, PyObject *str_fn) {
    if (v == Py_None) return Py_NewRef(s_empty);
    if (PyUnicode_CheckExact(v)) return Py_NewRef(v);
    Py_INCREF(v); /* v may be borrowed from a dict the helper could change */
    PyObject *r = PyObject_CallOneArg(str_fn, v);
    Py_DECREF(v);
    return r;
}

/* evidence._int_or_none: None for None and bools, an int itself, anything else by the reference (passed in) */
static PyObject *int_of(PyObject *v, PyObject *int_fn) {
    if (v == Py_None || PyBool_Check(v)) Py_RETURN_NONE;
    if (PyLong_CheckExact(v)) return Py_NewRef(v);
    Py_INCREF(v);
    PyObject *r = PyObject_CallOneArg(int_fn, v);
    Py_DECREF(v);
    return r;
}

/* evidence._ids: () for a non-list, str() of a list's items that are not None, a list subclass by the reference */
static PyObject *ids_of(PyObject *v, PyObject *ids_fn) {
    if (!PyList_Check(v)) return PyTuple_New(0);
    if (!PyList_CheckExact(v)) {
        Py_INCREF(v);
        PyObject *r = PyObject_CallOneArg(ids_fn, v);
        Py_DECREF(v);
        return r;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) return NULL;
    Py_INCREF(v);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(v); i++) {
        PyObject *item = PyList_GET_ITEM(v, i);
        if (item == Py_None) continue;
        Py_INCREF(item);
        PyObject *text = PyObject_Str(item);
        Py_DECREF(item);
        if (text == NULL || PyList_Append(out, text) < 0) {
            Py_XDECREF(text);
            Py_DECREF(out);
            Py_DECREF(v);
            return NULL;
        }
        Py_DECREF(text);
    }
    Py_DECREF(v);
    PyObject *t = PyList_AsTuple(out);
    Py_DECREF(out);
    return t;
}

static PyObject *empty_args; /* () */

/* a new reference to the class called with n positional arguments, each a new reference stolen (NULL: an argument
 * failed, the others released). With `fields` (a tuple of n str: the class is a frozen dataclass whose generated
 * __init__ only sets each field in order by object.__setattr__, evidence._plain_fields) and a class directly on object
 * with object's __new__, the instance is made as that __init__ makes it, without its Python frame: object.__new__(cls),
 * then object.__setattr__ of each field in order; any other class is called */
static PyObject *build(PyObject *cls, PyObject *fields, PyObject **args, int n) {
    PyObject *out = NULL;
    int ok = 1;
    for (int i = 0; i < n; i++) ok &= args[i] != NULL;
    if (ok && fields != NULL && PyType_Check(cls) && PyTuple_CheckExact(fields) && PyTuple_GET_SIZE(fields) == n &&
        ((PyTypeObject *)cls)->tp_base == &PyBaseObject_Type &&
        ((PyTypeObject *)cls)->tp_new == PyBaseObject_Type.tp_new) { /* a class of object's own layout and __new__ */
        out = PyBaseObject_Type.tp_new((PyTypeObject *)cls, empty_args, NULL);
        for (int i = 0; out != NULL && i < n; i++)
            if (PyObject_GenericSetAttr(out, PyTuple_GET_ITEM(fields, i), args[i]) < 0) Py_CLEAR(out);
    } else if (ok) {
        out = PyObject_Vectorcall(cls, args, n, NULL);
    }
    for (int i = 0; i < n; i++) Py_XDECREF(args[i]);
    return out;
}

#define FALLBACK 2 /* a dict subclass where the reference reads dicts: the reference reads the trace */

/* what the ``role == "tool"`` and ``"assistant"`` messages hold: results[str(tool_call_id)] = _str(content) and
 * responses[str(call id)] = _str(content); 0, -1 with the exception raised, or FALLBACK */
static int read_messages(PyObject *messages, PyObject *results, PyObject *responses, PyObject *str_fn) {
    PyObject *it = PyObject_GetIter(messages), *m;
    if (it == NULL) return -1;
    int rc = 0;
    while (rc == 0 && (m = PyIter_Next(it)) != NULL) {
        PyObject *content = NULL, *value, *key, *calls_it = NULL, *call;
        int t, empty;
        if (!PyDict_Check(m)) goto next;
        if (!PyDict_CheckExact(m)) {
            rc = FALLBACK;
            goto next;
        }
        if ((value = dict_get(m, s_role)) == NULL || (t = PyObject_RichCompareBool(value, s_tool, Py_EQ)) < 0) goto bad;
        if (t) {
            if ((value = dict_get(m, s_tool_call_id)) == NULL) goto bad;
            if (value != Py_None) { /* results[str(id)] = _str(content): the value is evaluated first */
                Py_INCREF(value);
                PyObject *c = dict_get(m, s_content);
                content = c == NULL ? NULL : str_of(c, str_fn);
                key = content == NULL ? NULL : PyObject_Str(value);
                Py_DECREF(value);
                t = key == NULL || PyDict_SetItem(results, key, content) < 0;
                Py_XDECREF(key);
                if (t) goto bad;
            }
        }
        if ((value = dict_get(m, s_role)) == NULL || (t = PyObject_RichCompareBool(value, s_assistant, Py_EQ)) < 0)
            goto bad;
        if (!t) goto next;
        if ((value = dict_get(m, s_tool_calls)) == NULL) goto bad;
        calls_it = iter_or_empty(value, &empty);
        if (calls_it == NULL) {
            if (empty) goto next;
            goto bad;
        }
        while ((call = PyIter_Next(calls_it)) != NULL) {
            int stop = 0;
            if (PyDict_Check(call)) {
                if (!PyDict_CheckExact(call)) stop = FALLBACK;
                else if ((value = dict_get(call, s_id)) == NULL) stop = -1;
                else if (value != Py_None) {
                    if (content == NULL) {
                        PyObject *c = dict_get(m, s_content);
                        content = c == NULL ? NULL : str_of(c, str_fn);
                    }
                    key = content == NULL ? NULL : PyObject_Str(value);
                    if (key == NULL || PyDict_SetItem(responses, key, content) < 0) stop = -1;
                    Py_XDECREF(key);
                }
            }
            Py_DECREF(call);
            if (stop) {
                rc = stop;
                break;
            }
        }
        if (rc == 0 && PyErr_Occurred()) rc = -1;
        goto next;
    bad:
        rc = -1;
    next:
        Py_XDECREF(calls_it);
        Py_XDECREF(content);
        Py_DECREF(m);
    }
    Py_DECREF(it);
    if (rc == 0 && PyErr_Occurred()) rc = -1;
    return rc;
}

typedef struct {
    PyObject *call_cls, *inference_cls, *search_cls, *step_cls, *str_fn, *ids_fn, *int_fn, *input_error;
    PyObject *call_fields, *inference_fields, *search_fields, *step_fields; /* build()'s fields, or NULL */
} Classes;

/* the evidence objects of ``raw.get(key) or []``'s dict items into the list `out`, each made by `one`: 0, -1 or
 * FALLBACK */
static int each_dict(PyObject *raw, PyObject *key, PyObject *out, Classes *c, PyObject *results,
                     PyObject *(*one)(PyObject *, Classes *, PyObject *)) {
    PyObject *value = dict_get(raw, key);
    if (value == NULL) return -1;
    int empty;
    PyObject *it = iter_or_empty(value, &empty), *item;
    if (it == NULL) return empty ? 0 : -1;
    int rc = 0;
    while ((item = PyIter_Next(it)) != NULL) {
        if (PyDict_Check(item)) {
            PyObject *made = PyDict_CheckExact(item) ? one(item, c, results) : NULL;
            if (!PyDict_CheckExact(item)) rc = FALLBACK;
            else if (made == NULL || PyList_Append(out, made) < 0) rc = -1;
            Py_XDECREF(made);
        }
        Py_DECREF(item);
        if (rc) break;
    }
    Py_DECREF(it);
    if (rc == 0 && PyErr_Occurred()) rc = -1;
    return rc;
}

static PyObject *one_call(PyObject *call, Classes *c, PyObject *results) {
    PyObject *id = dict_get(call, s_id);
    if (id == NULL) return NULL;
    int t = PyObject_IsTrue(id);
    if (t < 0) return NULL;
    PyObject *args[5] = {PyObject_Str(t ? id : s_empty), NULL, NULL, NULL, NULL};
    PyObject *v;
    if (args[0] != NULL) args[1] = (v = dict_get(call, s_name)) == NULL ? NULL : str_of(v, c->str_fn);
    if (args[1] != NULL) args[2] = (v = dict_get(call, s_arguments)) == NULL ? NULL : str_of(v, c->str_fn);
    if (args[2] != NULL) {
        v = PyDict_GetItemWithError(results, args[0]);
        args[3] = v != NULL ? Py_NewRef(v) : PyErr_Occurred() ? NULL : Py_NewRef(s_empty);
    }
    if (args[3] != NULL) args[4] = (v = dict_get(call, s_result_product_ids)) == NULL ? NULL : ids_of(v, c->ids_fn);
    return build(c->call_cls, c->call_fields, args, 5);
}

static PyObject *names_tuple(PyObject *value) {
    PyObject *out = PyList_New(0);
    int empty;
    PyObject *it = out == NULL ? NULL : iter_or_empty(value, &empty), *n;
    if (it == NULL) {
        if (out != NULL && empty) {
            PyObject *t = PyList_AsTuple(out);
            Py_DECREF(out);
            return t;
        }
        Py_XDECREF(out);
        return NULL;
    }
    while ((n = PyIter_Next(it)) != NULL) {
        PyObject *text = PyObject_Str(n);
        Py_DECREF(n);
        if (text == NULL || PyList_Append(out, text) < 0) {
            Py_XDECREF(text);
            Py_DECREF(it);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(text);
    }
    Py_DECREF(it);
    PyObject *t = PyErr_Occurred() ? NULL : PyList_AsTuple(out);
    Py_DECREF(out);
    return t;
}

static PyObject *one_inference(PyObject *inf, Classes *c, PyObject *unused) {
    PyObject *args[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *v;
    args[0] = (v = dict_get(inf, s_completion_tokens)) == NULL ? NULL : int_of(v, c->int_fn);
    if (args[0] != NULL) args[1] = (v = dict_get(inf, s_tool_call_names)) == NULL ? NULL : names_tuple(v);
    if (args[1] != NULL) args[2] = (v = dict_get(inf, s_content)) == NULL ? NULL : str_of(v, c->str_fn);
    if (args[2] != NULL) args[3] = (v = dict_get(inf, s_status_code)) == NULL ? NULL : int_of(v, c->int_fn);
    if (args[3] != NULL && (v = dict_get(inf, s_truncated)) != NULL) {
        int t = PyObject_IsTrue(v);
        if (t >= 0) args[4] = PyBool_FromLong(t);
    }
    if (args[4] != NULL) args[5] = (v = dict_get(inf, s_response_length)) == NULL ? NULL : int_of(v, c->int_fn);
    return build(c->inference_cls, c->inference_fields, args, 6);
}

static PyObject *one_search(PyObject *s, Classes *c, PyObject *unused) {
    PyObject *args[3] = {NULL, NULL, NULL}, *v;
    args[0] = (v = dict_get(s, s_path)) == NULL ? NULL : str_of(v, c->str_fn);
    if (args[0] != NULL && (v = dict_get(s, s_params)) != NULL) args[1] = PyDict_Check(v) ? Py_NewRef(v) : PyDict_New();
    if (args[1] != NULL) args[2] = (v = dict_get(s, s_result_product_ids)) == NULL ? NULL : ids_of(v, c->ids_fn);
    return build(c->search_cls, c->search_fields, args, 3);
}

PyDoc_STRVAR(trace_steps_doc,
"trace_steps(messages, raw_steps, CallEvidence, InferenceEvidence, SearchEvidence, StepEvidence, _str, _ids,\n"
"            _int_or_none, TraceInputError, fields=None)\n--\n\n"
"The tuple of a trace's StepEvidence: the C twin of ``oro_assets.judge.evidence._trace_steps_py`` (the classes\n"
"and the reference's helpers passed in). None, having called nothing but those helpers, where a message, step,\n"
"call, inference or search entry is a subclass of dict (the reference reads the trace). ``fields``: None, or for\n"
"each of the four classes the field names its generated __init__ sets in order (or None): such a class's objects are\n"
"made as that __init__ makes them (object.__new__, then object.__setattr__ of each field) without calling it.");

static PyObject *trace_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10 && nargs != 11) {
        PyErr_Format(PyExc_TypeError, "trace_steps() takes 10 or 11 arguments (%zd given)", nargs);
        return NULL;
    }
    Classes c = {args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9], NULL, NULL, NULL, NULL};
    if (nargs == 11 && args[10] != Py_None) {
        if (!PyTuple_CheckExact(args[10]) || PyTuple_GET_SIZE(args[10]) != 4) {
            PyErr_SetString(PyExc_TypeError, "trace_steps(): fields must be a tuple of 4 (each a tuple of str or None)");
            return NULL;
        }
        PyObject **f[4] = {&c.call_fields, &c.inference_fields, &c.search_fields, &c.step_fields};
        for (int i = 0; i < 4; i++) {
            PyObject *names = PyTuple_GET_ITEM(args[10], i);
            if (names == Py_None) continue;
            if (!PyTuple_CheckExact(names)) {
                PyErr_SetString(PyExc_TypeError, "trace_steps(): each fields entry must be a tuple of str or None");
                return NULL;
            }
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(names); j++)
                if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, j))) {
                    PyErr_SetString(PyExc_TypeError, "trace_steps(): field names must be str");
                    return NULL;
                }
            *f[i] = names;
        }
    }
    PyObject *results = PyDict_New(), *responses = PyDict_New(), *steps = PyList_New(0), *it = NULL, *raw = NULL;
    PyObject *calls = NULL, *inference = NULL, *search = NULL;
    int rc = -1;
    if (results == NULL || responses == NULL || steps == NULL) goto out;
    if ((rc = read_messages(args[0], results, responses, c.str_fn)) != 0) goto out;
    rc = -1;
    if ((it = PyObject_GetIter(args[1])) == NULL) goto out;
    for (Py_ssize_t position = 0; (raw = PyIter_Next(it)) != NULL; position++) {
        if (!PyDict_Check(raw)) {
            PyErr_Format(c.input_error, "step %zd is not an object", position);
            goto out;
        }
        if (!PyDict_CheckExact(raw)) {
            rc = FALLBACK;
            goto out;
        }
        if ((calls = PyList_New(0)) == NULL || (inference = PyList_New(0)) == NULL || (search = PyList_New(0)) == NULL)
            goto out;
        if ((rc = each_dict(raw, s_tool_calls, calls, &c, results, one_call)) != 0 ||
            (rc = each_dict(raw, s_inference, inference, &c, NULL, one_inference)) != 0 ||
            (rc = each_dict(raw, s_search, search, &c, NULL, one_search)) != 0)
            goto out;
        rc = -1;
        PyObject *v, *sargs[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
        PyObject *step_no = (v = dict_get(raw, s_step)) == NULL ? NULL : int_of(v, c.int_fn);
        if (step_no == NULL) goto out;
        PyObject *response;
        if (PyList_GET_SIZE(calls)) {
            PyObject *call_id = PyObject_GetAttrString(PyList_GET_ITEM(calls, 0), "call_id");
            if (call_id == NULL) {
                Py_DECREF(step_no);
                goto out;
            }
            response = PyDict_GetItemWithError(responses, call_id);
            Py_DECREF(call_id);
            response = response != NULL ? Py_NewRef(response) : PyErr_Occurred() ? NULL : Py_NewRef(s_empty);
        } else
            response = Py_NewRef(s_empty);
        if (response == NULL) {
            Py_DECREF(step_no);
            goto out;
        }
        sargs[0] = step_no != Py_None ? step_no : PyLong_FromSsize_t(position + 1);
        if (step_no == Py_None) Py_DECREF(step_no);
        sargs[1] = sargs[0] == NULL ? NULL : (v = dict_get(raw, s_think)) == NULL ? NULL : str_of(v, c.str_fn);
        sargs[2] = response;
        sargs[3] = PyList_AsTuple(calls);
        sargs[4] = PyList_AsTuple(inference);
        sargs[5] = PyList_AsTuple(search);
        Py_CLEAR(calls);
        Py_CLEAR(inference);
        Py_CLEAR(search);
        PyObject *step = build(c.step_cls, c.step_fields, sargs, 6);
        if (step == NULL || PyList_Append(steps, step) < 0) {
            Py_XDECREF(step);
            goto out;
        }
        Py_DECREF(step);
        Py_CLEAR(raw);
    }
    rc = PyErr_Occurred() ? -1 : 0;
out:
    Py_XDECREF(it);
    Py_XDECREF(raw);
    Py_XDECREF(calls);
    Py_XDECREF(inference);
    Py_XDECREF(search);
    Py_XDECREF(results);
    Py_XDECREF(responses);
    if (rc != 0) {
        Py_XDECREF(steps);
        if (rc == FALLBACK) Py_RETURN_NONE;
        return NULL;
    }
    PyObject *t = PyList_AsTuple(steps);
    Py_DECREF(steps);
    return t;
}

/* ---- claimed_length: the characters a dropped body must hold to have written a step
 * (oro_assets.curation.structural._claimed_length_py) */

static PyObject *s_wrapped;

/* len(json.dumps(text)) of a str, ensure_ascii: its quotes, and each character as Python's encoder writes it
 * (printable ASCII but '"' and '\\' as is; those two and \b \f \n \r \t as two characters; any other below U+10000 as
 * \uXXXX; above it as a surrogate pair of those) */
static Py_ssize_t json_text_length(PyObject *text) {
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t total = 2;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c >= ' ' && c <= '~') total += (c == '"' || c == '\\') ? 2 : 1;
        else if (c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') total += 2;
        else total += c >= 0x10000 ? 12 : 6;
    }
    return total;
}

/* fn(*args), and on a TypeError (an unhashable argument of a cached function) fn.__wrapped__(*args) */
static PyObject *call_cached(PyObject *fn, PyObject *const *args, size_t n) {
    PyObject *r = PyObject_Vectorcall(fn, args, n, NULL);
    if (r != NULL || !PyErr_ExceptionMatches(PyExc_TypeError)) return r;
    PyErr_Clear();
    PyObject *wrapped = PyObject_GetAttr(fn, s_wrapped);
    if (wrapped == NULL) return NULL;
    r = PyObject_Vectorcall(wrapped, args, n, NULL);
    Py_DECREF(wrapped);
    return r;
}

/* chars += the int `value` (a new reference, released); -1 with the exception raised */
static int add_length(Py_ssize_t *chars, PyObject *value) {
    if (value == NULL) return -1;
    Py_ssize_t v = PyLong_AsSsize_t(value);
    Py_DECREF(value);
    if (v == -1 && PyErr_Occurred()) return -1;
    *chars += v;
    return 0;
}

PyDoc_STRVAR(claimed_length_doc,
"claimed_length(call_text, json_length, overhead, step)\n--\n\n"
"The characters an answer must hold to have written ``step``'s thinking and calls: the C twin of\n"
"``oro_assets.curation.structural._claimed_length_py``, with its cached helpers passed in (each call's text\n"
"counts, and the JSON length of a thinking value that is not a str); a str thinking's JSON length is counted here.");

static PyObject *claimed_length(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "claimed_length() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *call_text = args[0], *json_length = args[1], *step = args[3];
    Py_ssize_t overhead = PyLong_AsSsize_t(args[2]);
    if (overhead == -1 && PyErr_Occurred()) return NULL;
    PyObject *calls = get_of(step, s_tool_calls), *it = NULL, *c;
    if (calls == NULL) return NULL;
    int t = PyObject_IsTrue(calls);
    Py_ssize_t n = t > 0 ? PyObject_Size(calls) : 0;
    if (t < 0 || n < 0) goto fail;
    Py_ssize_t chars = 2 + 2 * (n > 1 ? n - 1 : 0) + 2;
    if (t) {
        if ((it = PyObject_GetIter(calls)) == NULL) goto fail;
        while ((c = PyIter_Next(it)) != NULL) {
            PyObject *pair[2] = {get_of(c, s_name), NULL}, *r = NULL;
            if (pair[0] != NULL) pair[1] = get_of(c, s_arguments);
            if (pair[1] != NULL) r = call_cached(call_text, pair, 2);
            Py_DECREF(c);
            Py_XDECREF(pair[0]);
            Py_XDECREF(pair[1]);
            if (r == NULL) goto fail;
            if (!PyTuple_CheckExact(r) || PyTuple_GET_SIZE(r) != 2) {
                Py_DECREF(r);
                PyErr_SetString(PyExc_TypeError, "claimed_length(): call_text must return a pair");
                goto fail;
            }
            PyObject *sum = PyNumber_Add(PyTuple_GET_ITEM(r, 0), PyTuple_GET_ITEM(r, 1));
            Py_DECREF(r);
            if (add_length(&chars, sum) < 0) goto fail;
        }
        Py_CLEAR(it);
        if (PyErr_Occurred()) goto fail;
    }
    PyObject *think = get_of(step, s_think);
    if (think == NULL) goto fail;
    if ((t = PyObject_IsTrue(think)) < 0) {
        Py_DECREF(think);
        goto fail;
    }
    if (!t) Py_SETREF(think, Py_NewRef(s_empty));
    if (PyUnicode_CheckExact(think)) chars += json_text_length(think);
    else if (add_length(&chars, call_cached(json_length, &think, 1)) < 0) {
        Py_DECREF(think);
        goto fail;
    }
    Py_DECREF(think);
    Py_DECREF(calls);
    return PyLong_FromSsize_t(chars + overhead);
fail:
    Py_XDECREF(it);
    Py_DECREF(calls);
    return NULL;
}

/* ---- label_steps: the structural filter's pass over a trace's steps (oro_assets.curation.structural._label_steps_py) */

static PyObject *s_matched, *s_in_sequence_note;

PyDoc_STRVAR(label_steps_doc,
"label_steps(steps, target, in_sequence, Counter, copies_query, same_calls, claimed_length, inference_succeeded,\n"
"            max)\n--\n\n"
"``(per_step, n_inference, verdicts, shapes, multi_answer_steps, verbatim, has_proxy_evidence)`` of a trace's\n"
"steps: the C twin of ``oro_assets.curation.structural._label_steps_py``, each step's evidence made by the native\n"
"step_evidence with the helpers given. None, having computed nothing, where ``steps`` is not a list of plain dicts\n"
"(the reference reads them).");

static PyObject *label_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "label_steps() takes 9 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *steps = args[0], *target = args[1], *in_sequence = args[2], *copies_query = args[4];
    if (!PyUnicode_Check(target) || !(in_sequence == Py_None || PyAnySet_Check(in_sequence))) {
        PyErr_SetString(PyExc_TypeError, "label_steps(): target must be a str and in_sequence a set or None");
        return NULL;
    }
    if (!PyList_CheckExact(steps)) Py_RETURN_NONE;
    const Py_ssize_t n = PyList_GET_SIZE(steps);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyDict_CheckExact(PyList_GET_ITEM(steps, i))) Py_RETURN_NONE;
    PyObject *per_step = PyList_New(0), *shapes = PyList_New(0), *verdicts = PyObject_CallNoArgs(args[3]);
    PyObject *verbatim = Py_NewRef(Py_False), *e = NULL;
    Py_ssize_t n_inference = 0, multi = 0;
    int has_proxy = 0, t;
    const int has_target = PyUnicode_GET_LENGTH(target) > 0;
    if (per_step == NULL || shapes == NULL || verdicts == NULL) goto fail;
    for (Py_ssize_t pos = 0; pos < n && pos < PyList_GET_SIZE(steps); pos++) {
        PyObject *step = PyList_GET_ITEM(steps, pos), *helpers[5] = {step, args[5], args[6], args[7], args[8]};
        Py_INCREF(step);
        e = evidence_of(helpers);
        if (e == NULL) {
            Py_DECREF(step);
            goto fail;
        }
        PyObject *verdict = PyDict_GetItemWithError(e, s_verdict); /* borrowed */
        if (verdict == NULL) {
            if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, s_verdict);
            goto step_fail;
        }
        if (in_sequence != Py_None) {
            PyObject *key = PyLong_FromSsize_t(pos);
            t = key == NULL ? -1 : PySet_Contains(in_sequence, key);
            Py_XDECREF(key);
            if (t < 0) goto step_fail;
            if (t && (verdict == s_no_inference_in_window || verdict == s_not_carried || verdict == s_dropped_too_short ||
                      verdict == s_names_only)) {
                if (PyDict_SetItem(e, s_verdict, s_carried) < 0 || PyDict_SetItem(e, s_matched, s_in_sequence_note) < 0)
                    goto step_fail;
                verdict = s_carried;
            }
        }
        if (PyList_Append(per_step, e) < 0) goto step_fail;
        PyObject *count = PyDict_GetItemWithError(e, s_n_inference); /* borrowed: an int made by evidence_of */
        Py_ssize_t k = count == NULL ? -1 : PyLong_AsSsize_t(count);
        if (k == -1 && (count == NULL || PyErr_Occurred())) goto step_fail;
        n_inference += k;
        PyObject *seen = PyDict_GetItemWithError(verdicts, verdict), *one; /* verdicts[verdict] += 1 */
        Py_ssize_t had = seen == NULL ? 0 : PyLong_AsSsize_t(seen);
        if ((seen == NULL || had == -1) && PyErr_Occurred()) goto step_fail;
        one = PyLong_FromSsize_t(had + 1);
        t = one == NULL || PyDict_SetItem(verdicts, verdict, one) < 0;
        Py_XDECREF(one);
        if (t) goto step_fail;
        if (verdict != s_no_calls && verdict != s_code_made) {
            PyObject *names = PyDict_GetItemWithError(e, s_tool_call_names);
            PyObject *shape = names == NULL ? NULL : PySequence_Tuple(names);
            t = shape == NULL || PyList_Append(shapes, shape) < 0;
            Py_XDECREF(shape);
            if (t) goto step_fail;
            if (k > 1) multi++;
            if (has_target && (t = PyObject_IsTrue(verbatim)) <= 0) {
                if (t < 0) goto step_fail;
                PyObject *calls = PyObject_GetItem(step, s_tool_calls);
                PyObject *r = calls == NULL ? NULL : PyObject_CallFunctionObjArgs(copies_query, target, calls, NULL);
                Py_XDECREF(calls);
                if (r == NULL) goto step_fail;
                Py_SETREF(verbatim, r);
            }
        }
        if (!has_proxy) {
            if ((t = get_true(step, s_inference)) < 0) goto step_fail;
            if (!t && (t = get_true(step, s_search)) < 0) goto step_fail;
            has_proxy = t;
        }
        Py_DECREF(step);
        Py_CLEAR(e);
        continue;
    step_fail:
        Py_DECREF(step);
        goto fail;
    }
    return Py_BuildValue("(NnNNnNN)", per_step, n_inference, verdicts, shapes, multi, verbatim,
                         PyBool_FromLong(has_proxy));
fail:
    Py_XDECREF(e);
    Py_XDECREF(per_step);
    Py_XDECREF(shapes);
    Py_XDECREF(verdicts);
    Py_XDECREF(verbatim);
    return NULL;
}

/* ---- word_count: len(text.split()) without the words (oro_assets.curation.gates.estimate_tokens) */

PyDoc_STRVAR(word_count_doc,
"word_count(text)\n--\n\n"
"``len(text.split())``: the runs of characters that are not Unicode whitespace (str.isspace, as str.split() cuts),\n"
"counted without making the words.");

static PyObject *word_count(PyObject *self, PyObject *text) {
    if (!is_str_argument("word_count", text)) return NULL;
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    const Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    Py_ssize_t words = 0;
    int in_word = 0;
    if (PyUnicode_IS_ASCII(text)) {
        const unsigned char *p = (const unsigned char *)data;
        for (Py_ssize_t i = 0; i < length; i++) {
            const int space = ascii_space[p[i]];
            words += !space & !in_word;
            in_word = !space;
        }
    } else {
        for (Py_ssize_t i = 0; i < length; i++) {
            const Py_UCS4 c = PyUnicode_READ(kind, data, i);
            const int space = c < 128 ? ascii_space[c] : Py_UNICODE_ISSPACE(c);
            words += !space & !in_word;
            in_word = !space;
        }
    }
    return PyLong_FromSsize_t(words);
}

/* ---- ascii_words_numbers: the rule judge's words and numbers of an ASCII text (oro_assets.judge.rule.words /
 * numbers, ``ascii_words_numbers_py``) */

static inline int is_alnum(unsigned char c) {
    return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}
static inline int is_word(unsigned char c) { return is_alnum(c) || c == '_'; } /* \w on ASCII */
static inline int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* the end of rule._NUMBER's match starting at s, (?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w]) with its backtracking (the
 * lookbehind and the first digit checked by the caller); -1 when none */
static Py_ssize_t number_end(const unsigned char *p, Py_ssize_t n, Py_ssize_t s) {
    Py_ssize_t e1 = s + 1;
    while (e1 < n && (is_digit(p[e1]) || p[e1] == ',')) e1++;
    if (e1 + 1 < n && p[e1] == '.' && is_digit(p[e1 + 1])) { /* the decimals, greedy: only all of them can end it */
        Py_ssize_t m = e1 + 1;
        while (m < n && is_digit(p[m])) m++;
        if (m == n || !is_word(p[m])) return m;
    }
    for (Py_ssize_t k = e1; k > s; k--) /* [\d,]* given back: only before a comma, or at its end, can it stop */
        if (k == n || !is_word(p[k])) return k;
    return -1;
}

PyDoc_STRVAR(ascii_words_numbers_doc,
"ascii_words_numbers(text)\n--\n\n"
"``(words, numbers)`` of an ASCII str: the C twin of ``oro_assets.judge.rule.ascii_words_numbers_py`` (the judge's\n"
"``[A-Za-z0-9]+`` words and ``_NUMBER``'s numbers as (value, written with a decimal point), each a tuple). None,\n"
"having computed nothing, for a str that is not ASCII.");

static PyObject *ascii_words_numbers(PyObject *self, PyObject *text) {
    if (!is_str_argument("ascii_words_numbers", text)) return NULL;
    if (!PyUnicode_IS_ASCII(text)) Py_RETURN_NONE;
    const unsigned char *p = PyUnicode_1BYTE_DATA(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *words = PyList_New(0), *numbers = PyList_New(0), *item = NULL;
    char *digits = NULL;
    if (words == NULL || numbers == NULL) goto fail;
    for (Py_ssize_t i = 0; i < n;) {
        if (!is_alnum(p[i])) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        while (i < n && is_alnum(p[i])) i++;
        if ((item = PyUnicode_FromStringAndSize((const char *)p + start, i - start)) == NULL ||
            PyList_Append(words, item) < 0)
            goto fail;
        Py_CLEAR(item);
    }
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t end;
        if (!is_digit(p[i]) || (i > 0 && (is_word(p[i - 1]) || p[i - 1] == '.')) || (end = number_end(p, n, i)) < 0) {
            i++;
            continue;
        }
        if ((digits = PyMem_Malloc((size_t)(end - i) + 1)) == NULL) {
            PyErr_NoMemory();
            goto fail;
        }
        Py_ssize_t len = 0;
        int decimal = 0;
        for (Py_ssize_t k = i; k < end; k++) {
            if (p[k] != ',') digits[len++] = (char)p[k];
            decimal |= p[k] == '.';
        }
        PyObject *raw = PyUnicode_FromStringAndSize(digits, len), *value = NULL;
        PyMem_Free(digits);
        digits = NULL;
        if (raw != NULL) value = PyFloat_FromString(raw); /* float(raw.replace(",", "")) */
        Py_XDECREF(raw);
        if (value == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_ValueError)) goto fail;
            PyErr_Clear(); /* the reference skips what float() refuses */
        } else {
            item = Py_BuildValue("(NO)", value, decimal ? Py_True : Py_False);
            if (item == NULL || PyList_Append(numbers, item) < 0) goto fail;
            Py_CLEAR(item);
        }
        i = end;
    }
    PyObject *w = PyList_AsTuple(words), *m = w == NULL ? NULL : PyList_AsTuple(numbers);
    Py_DECREF(words);
    Py_DECREF(numbers);
    if (m == NULL) {
        Py_XDECREF(w);
        return NULL;
    }
    return Py_BuildValue("(NN)", w, m);
fail:
    PyMem_Free(digits);
    Py_XDECREF(item);
    Py_XDECREF(words);
    Py_XDECREF(numbers);
    return NULL;
}

/* ---- walk_steps: the normaliser's pass over a dialogue's steps (oro_assets.traces.normalize.walk_steps_py) ---- */

static PyObject *s_completion, *s_extra_info, *s_prompt, *s_tool_call, *s_obs, *s_query, *s_problem_id,
    *s_proxy_calls, *s_execution_time, *s_result, *s_parameters, *s_type, *s_think_tag, *s_braces;

#define OFF_PATH 2 /* a value the reference refuses (a FieldError) or reads off the common path: it reads the dialogue */

typedef struct {
    PyObject *prompt_messages, *think_and_text, *split_content, *step_calls, *encode, *dumps, *arguments_json,
        *product_ids, *loads, *decode_error, *as_timestamp, *fallback_think, *recommend, *attribution,
        *no_calls_note, *attributed_note;
    int max_id_depth;
} Walk;

/* what walk_steps_py keeps from step to step */
typedef struct {
    PyObject *query, *problem_id, *prefix, *turns, *steps, *listed, *stamps, *run_time;
    Py_ssize_t n_calls;
} Walked;

/* opt_dict / opt_list / opt_str of a value as the loop reads it (``v`` borrowed, NULL: absent): the value itself when
 * of the exact type, a fresh {} / [] (None for str) when None or absent; NULL with *off set where the reference raises
 * its FieldError (or reads a subclass), NULL with an exception on failure */
static PyObject *opt_exact(PyObject *v, PyTypeObject *type, int *off) {
    if (v == NULL || v == Py_None) {
        if (type == &PyDict_Type) return PyDict_New();
        if (type == &PyList_Type) return PyList_New(0);
        Py_RETURN_NONE;
    }
    if (Py_IS_TYPE(v, type)) return Py_NewRef(v);
    *off = 1;
    return NULL;
}

/* the encoder's text of a value (jsonio.dumps where the encoder refuses it: dumps' own text or error), or, with
 * `or_none`, None where the encoder refuses it (the caller calls dumps later, where the reference does); new ref */
static PyObject *encoded_text(PyObject *encode, PyObject *dumps, PyObject *value, int or_none) {
    PyObject *bytes = PyObject_CallOneArg(encode, value);
    if (bytes != NULL && PyBytes_CheckExact(bytes)) {
        PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes), NULL);
        Py_DECREF(bytes);
        return text;
    }
    if (bytes == NULL && !PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
    Py_XDECREF(bytes);
    PyErr_Clear();
    return or_none ? Py_NewRef(Py_None) : PyObject_CallOneArg(dumps, value);
}

/* jsonio.dumps(value): the encoder's bytes as text, or dumps itself for a value the encoder refuses (dumps' own text,
 * or its error); a new reference */
static PyObject *json_text(Walk *w, PyObject *value) { return encoded_text(w->encode, w->dumps, value, 0); }

/* formats.product_ids(result) of a call's result: JSON text of a list or dict parsed, the ids walked here (as
 * collect_ids); a str subclass by product_ids itself; a new reference */
static PyObject *result_ids(Walk *w, PyObject *result) {
    PyObject *parsed = NULL, *out = NULL;
    if (PyUnicode_Check(result)) {
        if (!PyUnicode_CheckExact(result)) return PyObject_CallOneArg(w->product_ids, result);
        Py_ssize_t n = PyUnicode_GET_LENGTH(result), i = 0;
        int kind = PyUnicode_KIND(result);
        const void *data = PyUnicode_DATA(result);
        while (i < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;  /* value.lstrip() */
        Py_UCS4 first = i < n ? PyUnicode_READ(kind, data, i) : 0;
        if (first != '[' && first != '{') return PyList_New(0);
        if ((parsed = PyObject_CallOneArg(w->loads, result)) == NULL) {
            if (!PyErr_ExceptionMatches(w->decode_error)) return NULL;
            PyErr_Clear();
            return PyList_New(0);
        }
    } else {
        parsed = Py_NewRef(result);
    }
    if ((out = PyDict_New()) != NULL && ids_walk(parsed, out, 0, w->max_id_depth) < 0) Py_CLEAR(out);
    Py_DECREF(parsed);
    if (out == NULL) return NULL;
    Py_SETREF(out, PyDict_Keys(out));
    return out;
}

/* a dict of n (key, value) pairs, each value a borrowed reference; NULL with the exception */
static PyObject *dict_of(int n, PyObject **kv) {
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        if (PyDict_SetItem(d, kv[2 * i], kv[2 * i + 1]) < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

/* append a new reference (stolen) to a list: 0, or -1 with the exception (the reference released either way) */
static int append_new(PyObject *list, PyObject *item) {
    if (item == NULL) return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* f"call_{pos}_{i}" (normalize._step_calls' call id; pos, i >= 0) written directly, not through a format parser */
static PyObject *call_id(Py_ssize_t pos, Py_ssize_t i) {
    char buf[64], digits[24], *p = buf;
    memcpy(p, "call_", 5);
    p += 5;
    for (int part = 0; part < 2; part++) {
        size_t v = (size_t)(part ? i : pos);
        int n = 0;
        do {
            digits[n++] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        while (n) *p++ = digits[--n];
        if (!part) *p++ = '_';
    }
    PyObject *out = PyUnicode_New(p - buf, 127);
    if (out != NULL) memcpy(PyUnicode_1BYTE_DATA(out), buf, (size_t)(p - buf));
    return out;
}

/* normalize._step_calls of a step without observations (every ORO step): the assistant's tool calls, the tool
 * messages and the evidence calls into the three lists given; 0, -1 with the exception, or OFF_PATH */
static int step_calls(Walk *w, Py_ssize_t pos, PyObject *raw_calls, PyObject *calls, PyObject *msgs, PyObject *ev) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(raw_calls); i++) {
        PyObject *call = PyList_GET_ITEM(raw_calls, i), *name = NULL, *params, *args = NULL, *cid = NULL,
                 *fn = NULL, *result, *ids = NULL, *content = NULL;
        int rc = -1;
        if (!PyDict_CheckExact(call)) return OFF_PATH;
        Py_INCREF(call);
        if ((name = PyDict_GetItemWithError(call, s_name)) == NULL || !PyUnicode_CheckExact(name)) {
            rc = PyErr_Occurred() ? -1 : OFF_PATH;
            name = NULL;
            goto done;
        }
        Py_INCREF(name);
        if ((params = PyDict_GetItemWithError(call, s_parameters)) == NULL) {
            if (PyErr_Occurred() || ((params = PyDict_GetItemWithError(call, s_arguments)) == NULL && PyErr_Occurred()))
                goto done;
        }
        if (params != NULL && PyDict_CheckExact(params)) {
            Py_INCREF(params);
            args = json_text(w, params);
            Py_DECREF(params);
        } else if (params == NULL || params == Py_None) {
            args = Py_NewRef(s_braces);  /* arguments_json(None) */
        } else {
            Py_INCREF(params);
            args = PyObject_CallOneArg(w->arguments_json, params);
            Py_DECREF(params);
        }
        if (args == NULL || (cid = call_id(pos, i)) == NULL) goto done;
        PyObject *fn_kv[4] = {s_name, name, s_arguments, args};
        if ((fn = dict_of(2, fn_kv)) == NULL) goto done;
        PyObject *call_kv[6] = {s_id, cid, s_type, s_function, s_function, fn};
        if (append_new(calls, dict_of(3, call_kv)) < 0) goto done;
        if ((result = PyDict_GetItemWithError(call, s_result)) != NULL) {
            Py_INCREF(result);
            content = PyUnicode_CheckExact(result) ? Py_NewRef(result) : json_text(w, result);
            PyObject *msg_kv[8] = {s_role, s_tool, s_tool_call_id, cid, s_name, name, s_content, content};
            if (content == NULL || append_new(msgs, dict_of(4, msg_kv)) < 0) {
                Py_DECREF(result);
                goto done;
            }
            ids = result_ids(w, result);
            Py_DECREF(result);
        } else if (!PyErr_Occurred()) {
            ids = PyList_New(0);
        }
        if (ids == NULL) goto done;
        PyObject *ev_kv[8] = {s_id, cid, s_name, name, s_arguments, args, s_result_product_ids, ids};
        rc = append_new(ev, dict_of(4, ev_kv));
    done:
        Py_DECREF(call);
        Py_XDECREF(name); Py_XDECREF(args); Py_XDECREF(cid); Py_XDECREF(fn); Py_XDECREF(ids); Py_XDECREF(content);
        if (rc != 0) return rc;
    }
    return 0;
}

/* a helper's tuple of n, or NULL (*off set) when it is not one: the reference then reads the dialogue */
static PyObject *tuple_of(PyObject *got, Py_ssize_t n, int *off) {
    if (got != NULL && !(PyTuple_CheckExact(got) && PyTuple_GET_SIZE(got) == n)) {
        Py_DECREF(got);
        *off = 1;
        return NULL;
    }
    return got;
}

/* one step of walk_steps_py at position pos (1-based): 0, -1 with the exception raised, or OFF_PATH */
static int walk_one(Walk *w, Walked *s, PyObject *step, Py_ssize_t pos) {
    PyObject *comp = NULL, *msg = NULL, *extra = NULL, *think = NULL, *content = NULL, *raw_calls = NULL,
             *response = NULL, *obs = NULL, *turn_calls = NULL, *tool_msgs = NULL, *ev_calls = NULL, *got = NULL,
             *listed = NULL, *ts = NULL, *pos_obj = NULL, *v;
    int off = 0, rc = -1, has_msg, code_made = 0;
#define LOOKUP(dict, key) if ((v = PyDict_GetItemWithError(dict, key)) == NULL && PyErr_Occurred()) goto out
#define OPT(var, value, type) if ((var = opt_exact(value, type, &off)) == NULL) goto out
    if (!PyDict_CheckExact(step)) return OFF_PATH;
    LOOKUP(step, s_completion);
    OPT(comp, v, &PyDict_Type);
    LOOKUP(comp, s_message);
    if (v != NULL) {
        OPT(msg, v, &PyDict_Type);
        has_msg = 1;
    } else {
        LOOKUP(step, s_message);
        OPT(msg, v, &PyDict_Type);
        has_msg = v != NULL;
    }
    LOOKUP(step, s_extra_info);
    OPT(extra, v, &PyDict_Type);
    if (s->query == Py_None) {
        LOOKUP(extra, s_query);
        PyObject *q;
        OPT(q, v, &PyUnicode_Type);
        Py_SETREF(s->query, q);
    }
    if (s->problem_id == Py_None) {
        LOOKUP(extra, s_problem_id);
        PyObject *p;
        OPT(p, v, &PyUnicode_Type);
        Py_SETREF(s->problem_id, p);
    }
    if ((pos_obj = PyLong_FromSsize_t(pos)) == NULL) goto out;
    int empty_prefix = PyObject_Not(s->prefix);
    if (empty_prefix < 0) goto out;
    if (empty_prefix) {
        LOOKUP(step, s_prompt);
        if (v != NULL) {
            PyObject *pargs[2] = {v, pos_obj};
            Py_INCREF(v);
            got = PyObject_Vectorcall(w->prompt_messages, pargs, 2, NULL);
            Py_DECREF(v);
            if (got == NULL) goto out;
            Py_SETREF(s->prefix, got);
            got = NULL;
        }
    }
    LOOKUP(msg, s_think);
    OPT(think, v, &PyUnicode_Type);
    if (think == Py_None || PyUnicode_GET_LENGTH(think) == 0) {
        LOOKUP(comp, s_reasoning_content);
        Py_SETREF(think, opt_exact(v, &PyUnicode_Type, &off));
        if (think == NULL) goto out;
        if (think == Py_None) Py_SETREF(think, Py_NewRef(s_empty));
    }
    LOOKUP(comp, s_content);
    OPT(content, v, &PyUnicode_Type);
    if (content == Py_None) Py_SETREF(content, Py_NewRef(s_empty));
    if (has_msg) {
        LOOKUP(msg, s_tool_call);
        if (v == NULL) LOOKUP(msg, s_tool_calls);  /* msg.get("tool_call", msg.get("tool_calls")) */
        OPT(raw_calls, v, &PyList_Type);
        LOOKUP(msg, s_response);
        OPT(response, v, &PyUnicode_Type);
        if (response == Py_None) Py_SETREF(response, Py_NewRef(s_empty));
        if (PyUnicode_GET_LENGTH(think) == 0) {
            int tagged = PyUnicode_Contains(content, s_think_tag);
            if (tagged < 0) goto out;
            if (tagged) {
                if ((got = tuple_of(PyObject_CallOneArg(w->think_and_text, content), 2, &off)) == NULL) goto out;
                Py_SETREF(think, Py_NewRef(PyTuple_GET_ITEM(got, 0)));
                Py_CLEAR(got);
                if (!PyUnicode_CheckExact(think)) {
                    off = 1;
                    goto out;
                }
            }
        }
    } else {
        if ((got = tuple_of(PyObject_CallOneArg(w->split_content, content), 3, &off)) == NULL) goto out;
        if (PyUnicode_GET_LENGTH(think) == 0) Py_SETREF(think, Py_NewRef(PyTuple_GET_ITEM(got, 0)));
        raw_calls = Py_NewRef(PyTuple_GET_ITEM(got, 1));
        response = Py_NewRef(PyTuple_GET_ITEM(got, 2));
        Py_CLEAR(got);
        if (!PyUnicode_CheckExact(think) || !PyList_CheckExact(raw_calls)) {
            off = 1;
            goto out;
        }
    }
    LOOKUP(msg, s_obs);
    OPT(obs, v, &PyList_Type);
    if (PyList_GET_SIZE(obs)) {  /* ShoppingBench observations: the reference's own pairing */
        PyObject *cargs[3] = {pos_obj, raw_calls, obs};
        if ((got = tuple_of(PyObject_Vectorcall(w->step_calls, cargs, 3, NULL), 3, &off)) == NULL) goto out;
        turn_calls = Py_NewRef(PyTuple_GET_ITEM(got, 0));
        tool_msgs = Py_NewRef(PyTuple_GET_ITEM(got, 1));
        ev_calls = Py_NewRef(PyTuple_GET_ITEM(got, 2));
        Py_CLEAR(got);
        if (!PyList_CheckExact(turn_calls) || !PyList_CheckExact(tool_msgs) || !PyList_CheckExact(ev_calls)) {
            off = 1;
            goto out;
        }
    } else {
        if ((turn_calls = PyList_New(0)) == NULL || (tool_msgs = PyList_New(0)) == NULL ||
            (ev_calls = PyList_New(0)) == NULL)
            goto out;
        int r = step_calls(w, pos, raw_calls, turn_calls, tool_msgs, ev_calls);
        if (r != 0) {
            off = r == OFF_PATH;
            goto out;
        }
    }
    /* code_made = think == FALLBACK_THINK and [c["name"] for c in ev_calls] == [RECOMMEND] */
    int fallback = PyObject_RichCompareBool(think, w->fallback_think, Py_EQ);
    if (fallback < 0) goto out;
    if (fallback) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ev_calls); i++) {
            PyObject *c = PyList_GET_ITEM(ev_calls, i);
            if (!PyDict_CheckExact(c) || (v = PyDict_GetItemWithError(c, s_name)) == NULL) {
                off = !PyErr_Occurred();
                goto out;
            }
        }
        if (PyList_GET_SIZE(ev_calls) == 1) {
            Py_INCREF(v);
            code_made = PyObject_RichCompareBool(v, w->recommend, Py_EQ);
            Py_DECREF(v);
            if (code_made < 0) goto out;
        }
    }
    if (!code_made) {  /* ORO's auto-recommend step is the agent's code, not the model: evidence only */
        s->n_calls += PyList_GET_SIZE(turn_calls);
        PyObject *kv[6] = {s_role, s_assistant, s_content, response, s_reasoning_content,
                           PyUnicode_GET_LENGTH(think) ? think : Py_None};
        PyObject *assistant = dict_of(3, kv);
        if (assistant == NULL) goto out;
        if (PyList_GET_SIZE(turn_calls) && PyDict_SetItem(assistant, s_tool_calls, turn_calls) < 0) {
            Py_DECREF(assistant);
            goto out;
        }
        if (append_new(s->turns, assistant) < 0 ||
            PyList_SetSlice(s->turns, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, tool_msgs) < 0)
            goto out;
    }
    LOOKUP(extra, s_proxy_calls);
    PyObject *proxy;
    OPT(proxy, v, &PyList_Type);
    listed = PyList_New(0);
    for (Py_ssize_t i = 0; listed != NULL && i < PyList_GET_SIZE(proxy); i++) {
        PyObject *c = PyList_GET_ITEM(proxy, i);
        if (PyDict_CheckExact(c) && PyList_Append(listed, c) < 0) Py_CLEAR(listed);
    }
    Py_DECREF(proxy);
    if (listed == NULL || PyList_Append(s->listed, listed) < 0) goto out;
    LOOKUP(extra, s_timestamp);
    PyObject *raw_ts = v != NULL ? v : Py_None;
    if (PyList_Append(s->stamps, raw_ts) < 0) goto out;
    if (pos == 1) {
        LOOKUP(extra, s_execution_time);
        Py_SETREF(s->run_time, Py_NewRef(v != NULL ? v : Py_None));
    }
    if (raw_ts == Py_None) {
        ts = Py_NewRef(Py_None);  /* as_timestamp(None) */
    } else {
        int overflow = 1;
        if (PyLong_CheckExact(raw_ts)) {
            long long t = PyLong_AsLongLongAndOverflow(raw_ts, &overflow);
            if (t == -1 && PyErr_Occurred()) goto out;
        }
        Py_INCREF(raw_ts);
        ts = overflow ? PyObject_CallOneArg(w->as_timestamp, raw_ts) : Py_NewRef(raw_ts);
        Py_DECREF(raw_ts);
        if (ts == NULL) goto out;
    }
    PyObject *inference = PyList_New(0), *search = PyList_New(0);
    if (inference != NULL && search != NULL) {
        PyObject *kv[14] = {s_step, pos_obj, s_timestamp, ts, s_think, think, s_tool_calls, ev_calls,
                            s_inference, inference, s_search, search, s_code_made, code_made ? Py_True : Py_False};
        rc = append_new(s->steps, dict_of(7, kv));
    }
    Py_XDECREF(inference);
    Py_XDECREF(search);
out:
#undef LOOKUP
#undef OPT
    Py_XDECREF(comp); Py_XDECREF(msg); Py_XDECREF(extra); Py_XDECREF(think); Py_XDECREF(content);
    Py_XDECREF(raw_calls); Py_XDECREF(response); Py_XDECREF(obs); Py_XDECREF(turn_calls); Py_XDECREF(tool_msgs);
    Py_XDECREF(ev_calls); Py_XDECREF(got); Py_XDECREF(listed); Py_XDECREF(ts); Py_XDECREF(pos_obj);
    if (off) {
        PyErr_Clear();
        return OFF_PATH;
    }
    return rc;
}

/* calls.attribute_calls, as normalize._attribution calls it, where it is the common case: a dialogue without proxy
 * calls, or every step stamp an int64 in order and every listed call stamped with one, at or before the last step's
 * stamp, not before the run began (step 1's stamp less its execution_time and a second), each step's calls arriving
 * in time order. 1: the windows and note made here; 0: not the common case (the reference's helper attributes the
 * calls); -1 with the exception raised. */
static int attribute_here(Walk *w, Walked *s, PyObject **windows, PyObject **note) {
    Py_ssize_t n = PyList_GET_SIZE(s->listed), i;
    int any = 0, rc = -1, has_started = 0, overflow;
    long long *ints = NULL, *tops = NULL, started = 0, ms = 0;
    char *topped = NULL;
    PyObject *out = PyList_New(n);
    if (out == NULL) return -1;
    for (i = 0; i < n; i++) {
        PyObject *bucket = PyList_New(0);
        if (bucket == NULL) goto done;
        PyList_SET_ITEM(out, i, bucket);
        any |= PyList_GET_SIZE(PyList_GET_ITEM(s->listed, i)) > 0;
    }
    if (!any) {  /* not any(listed) */
        *windows = out;
        *note = Py_NewRef(w->no_calls_note);
        return 1;
    }
    ints = PyMem_Malloc((size_t)n * sizeof(long long));
    tops = PyMem_Malloc((size_t)n * sizeof(long long));
    topped = PyMem_Calloc((size_t)n, 1);
    if (ints == NULL || tops == NULL || topped == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    rc = 0;
    for (i = 0; i < n; i++) {  /* the stamps: exact ints, in order */
        PyObject *stamp = PyList_GET_ITEM(s->stamps, i);
        if (!PyLong_CheckExact(stamp)) goto done;
        ints[i] = PyLong_AsLongLongAndOverflow(stamp, &overflow);
        if (ints[i] == -1 && PyErr_Occurred()) {
            rc = -1;
            goto done;
        }
        if (overflow || (i && ints[i] < ints[i - 1])) goto done;
    }
    /* started = stamps[0] - int(run_time * 1000) - 1000 for an int or float run_time in [0, 86400) */
    if (PyLong_CheckExact(s->run_time)) {
        long long v = PyLong_AsLongLongAndOverflow(s->run_time, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            rc = -1;
            goto done;
        }
        if (!overflow && v >= 0 && v < 86400) {
            ms = v * 1000;
            has_started = 1;
        }
    } else if (PyFloat_CheckExact(s->run_time)) {
        double d = PyFloat_AS_DOUBLE(s->run_time);
        if (d >= 0 && d < 86400) {
            ms = (long long)(d * 1000.0);
            has_started = 1;
        }
    }
    if (has_started && (__builtin_sub_overflow(ints[0], ms, &started) || __builtin_sub_overflow(started, 1000LL, &started)))
        goto done;
    for (i = 0; i < n; i++) {
        PyObject *bucket = PyList_GET_ITEM(s->listed, i);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(bucket); j++) {
            PyObject *call = PyList_GET_ITEM(bucket, j);  /* an exact dict: the walk listed only those */
            PyObject *ts = PyDict_GetItemWithError(call, s_timestamp);
            if (ts == NULL || !PyLong_CheckExact(ts)) {
                if (PyErr_Occurred()) rc = -1;
                goto done;
            }
            long long v = PyLong_AsLongLongAndOverflow(ts, &overflow);
            if (v == -1 && PyErr_Occurred()) {
                rc = -1;
                goto done;
            }
            if (overflow || (has_started && v < started)) goto done;
            Py_ssize_t lo = 0, hi = n;  /* bisect_left(ints, v) */
            while (lo < hi) {
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (ints[mid] < v) lo = mid + 1;
                else hi = mid;
            }
            if (lo == n || (topped[lo] && v < tops[lo])) goto done;  /* after the last stamp, or out of time order */
            tops[lo] = v;
            topped[lo] = 1;
            if (PyList_Append(PyList_GET_ITEM(out, lo), call) < 0) {
                rc = -1;
                goto done;
            }
        }
    }
    rc = 1;
    *windows = out;
    out = NULL;
    *note = Py_NewRef(w->attributed_note);
done:
    PyMem_Free(ints);
    PyMem_Free(tops);
    PyMem_Free(topped);
    Py_XDECREF(out);
    return rc;
}

PyDoc_STRVAR(walk_steps_doc,
"walk_steps(raw_steps, query, problem_id, prompt_messages, think_and_text, split_content, step_calls, encode, dumps,\n"
"           arguments_json, product_ids, loads, decode_error, as_timestamp, fallback_think, recommend, max_id_depth,\n"
"           attribution, no_calls_note, attributed_note)\n"
"    -> (query, problem_id, prefix, turns, steps, listed, windows, note, n_calls) or None\n\n"
"oro_assets.traces.normalize.walk_steps_py: the normaliser's pass over a dialogue's steps, the dicts read and the\n"
"messages, evidence calls and steps built in C; a step's prompt, <think> text, harness content and observations by\n"
"the reference's own helpers, JSON text by encode (orjson.dumps; dumps for what it refuses); the calls attributed\n"
"to the steps here in the common case, else by attribution (normalize._attribution). None where the\n"
"reference would raise its FieldError or reads a value off the common path (a subclass, a helper's odd result):\n"
"the caller then runs the reference.");

static PyObject *walk_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 20) {
        PyErr_Format(PyExc_TypeError, "walk_steps() takes 20 arguments (%zd given)", nargs);
        return NULL;
    }
    Walk w = {args[3], args[4], args[5], args[6], args[7], args[8], args[9], args[10], args[11], args[12], args[13],
              args[14], args[15], args[17], args[18], args[19], 0};
    long depth = PyLong_AsLong(args[16]);
    if (depth == -1 && PyErr_Occurred()) return NULL;
    if (depth < 0 || depth > MAX_ID_DEPTH_LIMIT) {
        PyErr_Format(PyExc_ValueError, "max_id_depth must be 0 to %d", MAX_ID_DEPTH_LIMIT);
        return NULL;
    }
    w.max_id_depth = (int)depth;
    if (!PyType_Check(w.decode_error) || !PyType_IsSubtype((PyTypeObject *)w.decode_error,
                                                            (PyTypeObject *)PyExc_BaseException)) {
        PyErr_SetString(PyExc_TypeError, "decode_error must be an exception class");
        return NULL;
    }
    PyObject *raw_steps = args[0];
    if (!PyList_CheckExact(raw_steps) || !PyList_GET_SIZE(raw_steps) ||
        !(args[1] == Py_None || PyUnicode_CheckExact(args[1])) ||
        !(args[2] == Py_None || PyUnicode_CheckExact(args[2])))
        Py_RETURN_NONE;
    Walked s = {Py_NewRef(args[1]), Py_NewRef(args[2]), PyList_New(0), PyList_New(0), PyList_New(0), PyList_New(0),
                PyList_New(0), Py_NewRef(Py_None), 0};
    PyObject *out = NULL;
    int rc = -1;
    if (s.prefix == NULL || s.turns == NULL || s.steps == NULL || s.listed == NULL || s.stamps == NULL) goto done;
    Py_INCREF(raw_steps);
    rc = 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(raw_steps); i++) {
        PyObject *step = Py_NewRef(PyList_GET_ITEM(raw_steps, i));
        rc = walk_one(&w, &s, step, i + 1);
        Py_DECREF(step);
    }
    Py_DECREF(raw_steps);
    PyObject *windows = NULL, *note = NULL;
    if (rc == 0) {
        int here = attribute_here(&w, &s, &windows, &note);
        if (here == 0) {  /* not the common case: normalize._attribution */
            PyObject *aargs[3] = {s.stamps, s.listed, s.run_time}, *got;
            int off = 0;
            if ((got = tuple_of(PyObject_Vectorcall(w.attribution, aargs, 3, NULL), 2, &off)) != NULL) {
                windows = Py_NewRef(PyTuple_GET_ITEM(got, 0));
                note = Py_NewRef(PyTuple_GET_ITEM(got, 1));
                Py_DECREF(got);
            } else {
                rc = off ? OFF_PATH : -1;
            }
        } else if (here < 0) {
            rc = -1;
        }
    }
    if (rc == 0)
        out = Py_BuildValue("(OOOOOOOOn)", s.query, s.problem_id, s.prefix, s.turns, s.steps, s.listed, windows, note,
                            s.n_calls);
    else if (rc == OFF_PATH)
        out = Py_NewRef(Py_None);
    Py_XDECREF(windows);
    Py_XDECREF(note);
done:
    Py_XDECREF(s.query); Py_XDECREF(s.problem_id); Py_XDECREF(s.prefix); Py_XDECREF(s.turns); Py_XDECREF(s.steps);
    Py_XDECREF(s.listed); Py_XDECREF(s.stamps); Py_XDECREF(s.run_time);
    return out;
}

static int intern_names(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1
    INTERN(s_product_id, "product_id");
    INTERN(s_title, "title");
    INTERN(s_attributes, "attributes");
    INTERN(s_sku_options, "sku_options");
    INTERN(s_brand, "brand");
    INTERN(s_price, "price");
    INTERN(s_shop_id, "shop_id");
    INTERN(s_description, "description");
    INTERN(s_short_description, "short_description");
    INTERN(s_specification, "specification");
    INTERN(s_strip, "strip");
    INTERN(s_path, "path");
    INTERN(s_kind, "kind");
    INTERN(s_attempt, "attempt");
    INTERN(s_summary, "summary");
    INTERN(s_response, "response");
    INTERN(s_response_truncated, "response_truncated");
    INTERN(s_json_data, "json_data");
    INTERN(s_messages, "messages");
    INTERN(s_choices, "choices");
    INTERN(s_message, "message");
    INTERN(s_content, "content");
    INTERN(s_reasoning_content, "reasoning_content");
    INTERN(s_result_product_ids, "result_product_ids");
    INTERN(s_inference_part, "/inference");
    INTERN(s_completions_tail, "/chat/completions");
    INTERN(s_find_product_part, "/search/find_product");
    INTERN(s_tool_call_tag, "<tool_call>");
    INTERN(s_tool_close_tag, "</tool_call>");
    INTERN(s_text_array, "text_array");
    INTERN(s_qwen3_object, "qwen3_object");
    INTERN(s_tool_calls, "tool_calls");
    INTERN(s_function, "function");
    INTERN(s_name, "name");
    INTERN(s_usage, "usage");
    INTERN(s_completion_tokens, "completion_tokens");
    INTERN(s_status_code, "status_code");
    INTERN(s_response_length, "response_length");
    INTERN(s_timestamp, "timestamp");
    INTERN(s_params, "params");
    INTERN(s_search_part, "/search");
    INTERN(s_none_shape, "none");
    INTERN(s_tool_call_names, "tool_call_names");
    INTERN(s_answer_shape, "answer_shape");
    INTERN(s_cut, "cut");
    INTERN(s_truncated, "truncated");
    INTERN(s_dropped, "dropped");
    INTERN(s_content_chars, "content_chars");
    INTERN(s_get, "get");
    INTERN(s_inference, "inference");
    INTERN(s_step, "step");
    INTERN(s_n_inference, "n_inference");
    INTERN(s_verdict, "verdict");
    INTERN(s_code_made, "code_made");
    INTERN(s_arguments, "arguments");
    INTERN(s_dropped_lengths, "dropped_lengths");
    INTERN(s_no_calls, "no_calls");
    INTERN(s_no_inference_in_window, "no_inference_in_window");
    INTERN(s_carried, "carried");
    INTERN(s_names_only, "names_only");
    INTERN(s_dropped_too_short, "dropped_too_short");
    INTERN(s_not_carried, "not_carried");
    INTERN(s_role, "role");
    INTERN(s_tool, "tool");
    INTERN(s_assistant, "assistant");
    INTERN(s_tool_call_id, "tool_call_id");
    INTERN(s_id, "id");
    INTERN(s_search, "search");
    INTERN(s_think, "think");
    INTERN(s_empty, "");
    INTERN(s_wrapped, "__wrapped__");
    INTERN(s_matched, "matched");
    INTERN(s_in_sequence_note, "answers in sequence (stamps unusable)");
    INTERN(s_completion, "completion");
    INTERN(s_extra_info, "extra_info");
    INTERN(s_prompt, "prompt");
    INTERN(s_tool_call, "tool_call");
    INTERN(s_obs, "obs");
    INTERN(s_query, "query");
    INTERN(s_problem_id, "problem_id");
    INTERN(s_proxy_calls, "proxy_calls");
    INTERN(s_execution_time, "execution_time");
    INTERN(s_result, "result");
    INTERN(s_parameters, "parameters");
    INTERN(s_type, "type");
    INTERN(s_think_tag, "<think>");
    INTERN(s_braces, "{}");
#undef INTERN
    PyObject *builtins = PyImport_ImportModule("builtins");
    if (builtins == NULL) return -1;
    round_fn = PyObject_GetAttrString(builtins, "round");
    Py_DECREF(builtins);
    return round_fn == NULL ? -1 : 0;
}

/* ---- meta_search: whether the rule judge's META_SENTENCE (the lines that address the grader) matches anywhere in an
 * ASCII text (oro_assets.judge.rule.meta_search_py), by its alternatives read in place rather than tried by the regex
 * engine at every position */

static inline int meta_space(unsigned char c) { return (c >= 9 && c <= 13) || (c >= 28 && c <= 32); } /* \s, ASCII */

/* the end of `lit` at p[j], or -1 */
static inline Py_ssize_t meta_lit(const unsigned char *p, Py_ssize_t n, Py_ssize_t j, const char *lit) {
    size_t k = strlen(lit);
    if (j < 0 || (size_t)(n - j) < k || memcmp(p + j, lit, k) != 0) return -1;
    return j + (Py_ssize_t)k;
}
/* the match may end at j: (?!\w) */
static inline int meta_end(const unsigned char *p, Py_ssize_t n, Py_ssize_t j) {
    return j >= 0 && (j == n || !is_word(p[j]));
}
/* `lit` at p[j] and then no word character */
static inline int meta_word(const unsigned char *p, Py_ssize_t n, Py_ssize_t j, const char *lit) {
    return meta_end(p, n, meta_lit(p, n, j, lit));
}
static inline Py_ssize_t meta_spaces(const unsigned char *p, Py_ssize_t n, Py_ssize_t j) {
    while (j < n && meta_space(p[j])) j++;
    return j;
}
/* (?:message|:) then (?!\w), after \s* */
static int meta_message(const unsigned char *p, Py_ssize_t n, Py_ssize_t j) {
    if (j < 0) return 0;
    j = meta_spaces(p, n, j);
    return meta_word(p, n, j, "message") || meta_word(p, n, j, ":");
}
/* gates?\s*#?\s*[1-5] or gates?\s+(?:passed|failed|pass|fail), then (?!\w), from the end of "gate" at j */
static int meta_gate(const unsigned char *p, Py_ssize_t n, Py_ssize_t j) {
    for (int s = 0; s < 2; s++) {
        Py_ssize_t k = j;
        if (s == 1) {
            if (k >= n || p[k] != 's') return 0;
            k++;
        }
        Py_ssize_t m = meta_spaces(p, n, k);
        Py_ssize_t d = m < n && p[m] == '#' ? meta_spaces(p, n, m + 1) : m;
        if (d < n && p[d] >= '1' && p[d] <= '5' && meta_end(p, n, d + 1)) return 1;
        if (m > k && (meta_word(p, n, m, "passed") || meta_word(p, n, m, "failed") || meta_word(p, n, m, "pass") ||
                      meta_word(p, n, m, "fail")))
            return 1;
    }
    return 0;
}
/* \s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|earlier|preceding|system|rules), then (?!\w), from the
 * end of ignore / disregard / forget / override at j */
static int meta_override(const unsigned char *p, Py_ssize_t n, Py_ssize_t j) {
    static const char *const last[] = {"previous", "prior", "above", "earlier", "preceding", "system", "rules"};
    static const char *const more[] = {"all", "any", "the", "your"};
    if (j < 0) return 0;
    Py_ssize_t m = meta_spaces(p, n, j);
    if (m == j) return 0;
    for (;;) {
        for (size_t i = 0; i < sizeof last / sizeof *last; i++)
            if (meta_word(p, n, m, last[i])) return 1;
        Py_ssize_t next = -1;
        for (size_t i = 0; i < sizeof more / sizeof *more && next < 0; i++) {
            Py_ssize_t e = meta_lit(p, n, m, more[i]);
            if (e >= 0 && e < n && meta_space(p[e])) next = meta_spaces(p, n, e);
        }
        if (next < 0) return 0;
        m = next;
    }
}
/* one of META_SENTENCE's alternatives starts at p[i] (a word character after a non-word one: its \b) */
static int meta_at(const unsigned char *p, Py_ssize_t n, Py_ssize_t i) {
    Py_ssize_t j;
    switch (p[i]) {
    case 'a':
        return (j = meta_lit(p, n, i, "assistant")) >= 0 && meta_word(p, n, meta_spaces(p, n, j), ":");
    case 'd':
        return meta_message(p, n, meta_lit(p, n, i, "developer")) || meta_override(p, n, meta_lit(p, n, i, "disregard"));
    case 'e':
        return meta_word(p, n, i, "evaluator") || meta_word(p, n, i, "evaluators");
    case 'f':
        return meta_override(p, n, meta_lit(p, n, i, "forget"));
    case 'g':
        if (meta_word(p, n, i, "grader") || meta_word(p, n, i, "graders") || meta_word(p, n, i, "grading")) return 1;
        return (j = meta_lit(p, n, i, "gate")) >= 0 && meta_gate(p, n, j);
    case 'i':
        return meta_word(p, n, i, "instruction") || meta_word(p, n, i, "instructions") ||
               meta_override(p, n, meta_lit(p, n, i, "ignore"));
    case 'j':
        if ((j = meta_lit(p, n, i, "judge")) >= 0 &&
            (meta_end(p, n, j) || (j < n && (p[j] == 's' || p[j] == 'd') && meta_end(p, n, j + 1))))
            return 1;
        return meta_word(p, n, i, "judging") || meta_word(p, n, i, "jailbreak");
    case 'o':
        return meta_override(p, n, meta_lit(p, n, i, "override"));
    case 'p':
        return meta_word(p, n, i, "prompt");
    case 'r':
        if ((j = meta_lit(p, n, i, "reasoning")) >= 0) {
            while (j < n && (meta_space(p[j]) || p[j] == '_' || p[j] == '-')) j++;
            if (meta_word(p, n, j, "quality")) return 1;
        }
        if ((j = meta_lit(p, n, i, "rate")) >= 0) {
            Py_ssize_t m = meta_spaces(p, n, j);
            return m > j && (meta_word(p, n, m, "this") || meta_word(p, n, m, "it"));
        }
        return 0;
    case 's':
        return meta_word(p, n, i, "score") || meta_word(p, n, i, "scores") || meta_word(p, n, i, "scored") ||
               meta_word(p, n, i, "scoring") || meta_message(p, n, meta_lit(p, n, i, "system"));
    case 't':
        if (meta_word(p, n, i, "trajectory")) return 1;
        if ((j = meta_lit(p, n, i, "this")) >= 0) {
            Py_ssize_t m = meta_spaces(p, n, j);
            return m > j && meta_word(p, n, m, "agent");
        }
        return 0;
    case 'v':
        return meta_word(p, n, i, "verdict") || meta_word(p, n, i, "verdicts");
    }
    return 0;
}

PyDoc_STRVAR(meta_search_doc,
"meta_search(text)\n--\n\n"
"Whether ``oro_assets.judge.rule.META_SENTENCE`` matches anywhere in an ASCII str: the C twin of\n"
"``rule.meta_search_py``. None, having read nothing, for a str that is not ASCII.");

static PyObject *meta_search(PyObject *self, PyObject *text) {
    if (!is_str_argument("meta_search", text)) return NULL;
    if (!PyUnicode_IS_ASCII(text)) Py_RETURN_NONE;
    const unsigned char *p = PyUnicode_1BYTE_DATA(text);
    const Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!is_word(p[i])) continue;
        /* a word's first character: every alternative starts with a lower-case letter, so \b holds only here */
        if (meta_at(p, n, i)) Py_RETURN_TRUE;
        while (i + 1 < n && is_word(p[i + 1])) i++;
    }
    Py_RETURN_FALSE;
}

PyDoc_STRVAR(utf8_column_doc,
"utf8_column(values, allocate)\n--\n\n"
"The buffers of the Arrow string column of a list of str and None, as ``(null_count, validity, offsets, data)``:\n"
"``validity`` the LSB-first bitmap of the values that are not None (None when none is), ``offsets`` the n + 1\n"
"int32 offsets (native byte order), ``data`` the values' UTF-8 bytes end to end, each a buffer ``allocate(size)``\n"
"gave (``pyarrow.allocate_buffer``: Arrow's memory pool) and the kernel filled; the C twin of what\n"
"``pyarrow.array(values, type=pyarrow.string())`` stores (``oro_assets.storage.string_array_py``). None, having\n"
"allocated nothing, for an argument that is not a list, a value that is not exactly str or None, a str without a\n"
"UTF-8 form (a lone surrogate), or more than 2**31 - 1 bytes of text: pyarrow converts, or refuses, those itself.");

/* a writable buffer of at least size bytes from allocate(size), or NULL with an exception set */
static PyObject *utf8_allocate(PyObject *allocate, Py_ssize_t size, Py_buffer *view) {
    PyObject *size_obj = PyLong_FromSsize_t(size);
    if (size_obj == NULL) return NULL;
    PyObject *buf = PyObject_CallOneArg(allocate, size_obj);
    Py_DECREF(size_obj);
    if (buf == NULL) return NULL;
    if (PyObject_GetBuffer(buf, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(buf);
        return NULL;
    }
    if (view->len < size) {
        PyBuffer_Release(view);
        Py_DECREF(buf);
        PyErr_SetString(PyExc_ValueError, "utf8_column(): allocate(size) gave a buffer smaller than size");
        return NULL;
    }
    return buf;
}

static PyObject *utf8_column(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "utf8_column() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *values = args[0], *allocate = args[1];
    if (!PyCallable_Check(allocate)) {
        PyErr_SetString(PyExc_TypeError, "utf8_column(): allocate must be callable");
        return NULL;
    }
    if (!PyList_CheckExact(values)) Py_RETURN_NONE;
    const Py_ssize_t n = PyList_GET_SIZE(values);
    /* the values held by the kernel itself: allocate is Python code, which may change the list (not its str) */
    PyObject **items = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(PyObject *));
    const char **ptrs = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(char *));
    Py_ssize_t *lens = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(Py_ssize_t));
    PyObject *bufs[3] = {NULL, NULL, NULL}, *out = NULL;  /* validity, offsets, data */
    Py_buffer views[3];
    int held = 0, viewed[3] = {0, 0, 0};
    Py_ssize_t total = 0, nulls = 0;
    if (items == NULL || ptrs == NULL || lens == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(values, i);
        if (v == Py_None) {
            ptrs[i] = NULL;
            lens[i] = 0;
            nulls++;
            continue;
        }
        if (!PyUnicode_CheckExact(v)) {
            out = Py_NewRef(Py_None);
            goto done;
        }
        Py_ssize_t len;
        /* a compact ASCII str's own data, another str's cached UTF-8 form (pyarrow asks for the same) */
        const char *p = PyUnicode_AsUTF8AndSize(v, &len);
        if (p == NULL) {  /* no UTF-8 form (a lone surrogate): pyarrow raises its own error */
            if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) goto done;
            PyErr_Clear();
            out = Py_NewRef(Py_None);
            goto done;
        }
        ptrs[i] = p;
        lens[i] = len;
        total += len;
        if (total > INT32_MAX) {
            out = Py_NewRef(Py_None);
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) items[i] = Py_NewRef(PyList_GET_ITEM(values, i));
    held = 1;
    const Py_ssize_t sizes[3] = {nulls ? (n + 7) / 8 : -1, (n + 1) * (Py_ssize_t)sizeof(int32_t), total};
    for (int k = 0; k < 3; k++) {
        if (sizes[k] < 0) continue;
        bufs[k] = utf8_allocate(allocate, sizes[k], &views[k]);
        if (bufs[k] == NULL) goto done;
        viewed[k] = 1;
    }
    {
        unsigned char *bits = nulls ? (unsigned char *)views[0].buf : NULL;
        int32_t *off = (int32_t *)views[1].buf;
        char *dst = (char *)views[2].buf;
        Py_ssize_t at = 0;
        if (bits) memset(bits, 0, (size_t)sizes[0]);
        memcpy(off, &(int32_t){0}, sizeof(int32_t));
        for (Py_ssize_t i = 0; i < n; i++) {
            if (ptrs[i] != NULL) {
                memcpy(dst + at, ptrs[i], (size_t)lens[i]);
                at += lens[i];
                if (bits) bits[i >> 3] |= (unsigned char)(1u << (i & 7));
            }
            const int32_t end = (int32_t)at;
            memcpy(off + i + 1, &end, sizeof(int32_t));
        }
    }
    out = Py_BuildValue("(nOOO)", nulls, bufs[0] ? bufs[0] : Py_None, bufs[1], bufs[2]);
done:
    for (int k = 0; k < 3; k++) {
        if (viewed[k]) PyBuffer_Release(&views[k]);
        Py_XDECREF(bufs[k]);
    }
    if (held)
        for (Py_ssize_t i = 0; i < n; i++) Py_DECREF(items[i]);
    PyMem_Free(items);
    PyMem_Free(ptrs);
    PyMem_Free(lens);
    return out;
}

PyDoc_STRVAR(table_rows_doc,
"table_rows(rows, names, kinds)\n--\n\n"
"Copies of ``rows`` (each a new dict of the same items) where every row is what ``pyarrow.Table.to_pylist()`` reads\n"
"back from a table of the schema whose field names and kinds (0 string, 1 int64, 2 float64, 3 bool) are given:\n"
"an exact dict whose keys are exactly ``names``, in order, as exact str, and whose values are None or exactly str,\n"
"int in [-2**63, 2**63), float or bool for their field's kind; the C twin of ``oro_assets.storage.table_rows_py``\n"
"for such rows. None, having built nothing, for anything else (a kind outside the four included).");

enum { KIND_STRING, KIND_INT64, KIND_FLOAT64, KIND_BOOL };

static int row_as_read_back(PyObject *row, PyObject *names, const int *kinds, Py_ssize_t n) {
    if (!PyDict_CheckExact(row) || PyDict_GET_SIZE(row) != n) return 0;
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(row, &pos, &key, &value)) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        if (key != name) {
            if (!PyUnicode_CheckExact(key)) return 0;
            int eq = PyUnicode_Compare(key, name);  /* two exact str: no Python code runs */
            if (eq != 0) {
                if (eq == -1 && PyErr_Occurred()) PyErr_Clear();
                return 0;
            }
        }
        if (value != Py_None) {
            switch (kinds[i]) {
            case KIND_STRING:
                if (!PyUnicode_CheckExact(value)) return 0;
                break;
            case KIND_INT64: {
                if (!PyLong_CheckExact(value)) return 0;
                int overflow = 0;
                (void)PyLong_AsLongLongAndOverflow(value, &overflow);
                if (overflow) return 0;
                break;
            }
            case KIND_FLOAT64:
                if (!PyFloat_CheckExact(value)) return 0;
                break;
            case KIND_BOOL:
                if (!PyBool_Check(value)) return 0;
                break;
            default:
                return 0;
            }
        }
        i++;
    }
    return i == n;
}

static PyObject *table_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "table_rows() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *rows = args[0], *names = args[1], *kinds_obj = args[2];
    if (!PyTuple_CheckExact(names) || !PyTuple_CheckExact(kinds_obj) ||
        PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(kinds_obj)) {
        PyErr_SetString(PyExc_TypeError, "table_rows(): names and kinds must be tuples of the same length");
        return NULL;
    }
    const Py_ssize_t n = PyTuple_GET_SIZE(names);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(names, i))) {
            PyErr_SetString(PyExc_TypeError, "table_rows(): names must be str");
            return NULL;
        }
    if (!PyList_CheckExact(rows)) Py_RETURN_NONE;
    int *kinds = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (kinds == NULL) return PyErr_NoMemory();
    PyObject *out = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        long k = PyLong_AsLong(PyTuple_GET_ITEM(kinds_obj, i));
        if (k == -1 && PyErr_Occurred()) goto done;
        if (k < KIND_STRING || k > KIND_BOOL) {
            out = Py_NewRef(Py_None);
            goto done;
        }
        kinds[i] = (int)k;
    }
    const Py_ssize_t count = PyList_GET_SIZE(rows);
    /* every row checked before any is copied (copying runs no Python code, so the rows stay as checked) */
    for (Py_ssize_t r = 0; r < count; r++)
        if (!row_as_read_back(PyList_GET_ITEM(rows, r), names, kinds, n)) {
            out = Py_NewRef(Py_None);
            goto done;
        }
    out = PyList_New(count);
    if (out == NULL) goto done;
    for (Py_ssize_t r = 0; r < count; r++) {
        PyObject *copy = PyDict_Copy(PyList_GET_ITEM(rows, r));
        if (copy == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, r, copy);
    }
done:
    PyMem_Free(kinds);
    return out;
}

/* ---- answer_calls: the tool calls of one chat-completion message (oro_assets.traces.calls.answer_calls_py), read here
 * where the reference reads nothing leniently: a message (an exact dict) without structured tool_calls whose content is
 * not a str or holds no <tool_call> (no calls), or an exact str whose every <tool_call> block is closed and holds exact
 * JSON (by the decoder passed in) of one object or an array of objects, each with an exact str name without whitespace
 * at its ends and arguments that are an exact dict, null or absent (what the recorders write). Anything else (structured
 * calls, a block cut short, not exact JSON or holding no call, a name to strip, arguments as text, a subclass) is read by
 * the reference, called here. */
static PyObject *s_tool_close_tag, *s_text_array, *s_qwen3_object;

/* text[*start:*end] narrowed past the Unicode whitespace at its ends (what str.strip() takes off) */
static void strip_span(PyObject *text, Py_ssize_t *start, Py_ssize_t *end) {
    const int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    while (*start < *end && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, *start))) (*start)++;
    while (*end > *start && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, *end - 1))) (*end)--;
}

/* ([], "none", False): a message without calls; a new reference */
static PyObject *no_calls(void) {
    return Py_BuildValue("(NOO)", PyList_New(0), s_none_shape, Py_False);
}

/* one decoded entry as answer_calls' {name, arguments}: a new reference; None (a new reference) for an entry the
 * reference must read; NULL with an exception */
static PyObject *fast_call(PyObject *item) {
    if (!PyDict_CheckExact(item)) Py_RETURN_NONE;
    PyObject *name = get(item, s_name);
    if (name == NULL && PyErr_Occurred()) return NULL;
    if (name == NULL || !PyUnicode_CheckExact(name) || PyUnicode_GET_LENGTH(name) == 0) Py_RETURN_NONE;
    const Py_ssize_t n = PyUnicode_GET_LENGTH(name);
    if (Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(name, 0)) || Py_UNICODE_ISSPACE(PyUnicode_READ_CHAR(name, n - 1)))
        Py_RETURN_NONE;  /* the reference's name.strip() */
    Py_INCREF(name);  /* held across the lookups below (a key's __eq__ could change the dict) */
    PyObject *value = NULL, *call = NULL;
    const int has = PyDict_Contains(item, s_arguments);  /* item["arguments"] if "arguments" in item else .get("parameters") */
    if (has < 0) goto done;
    PyObject *args = get(item, has ? s_arguments : s_parameters);
    if (args == NULL && PyErr_Occurred()) goto done;
    if (args == NULL || args == Py_None) value = PyDict_New();
    else if (PyDict_CheckExact(args)) value = Py_NewRef(args);
    else value = Py_NewRef(Py_None);  /* arguments the reference must read */
    if (value == NULL) goto done;
    if (value == Py_None) {
        call = Py_NewRef(Py_None);
        goto done;
    }
    call = PyDict_New();
    if (call == NULL || PyDict_SetItem(call, s_name, name) < 0 || PyDict_SetItem(call, s_arguments, value) < 0)
        Py_CLEAR(call);
done:
    Py_XDECREF(value);
    Py_DECREF(name);
    return call;
}

/* the entries of one decoded block appended to `calls` as calls: 1; 0 where the reference must read the answer; -1 */
static int append_calls(PyObject *calls, PyObject *value) {
    const int array = PyList_CheckExact(value);
    const Py_ssize_t n = array ? PyList_GET_SIZE(value) : 1;
    for (Py_ssize_t i = 0; i < n && (!array || i < PyList_GET_SIZE(value)); i++) {
        PyObject *item = Py_NewRef(array ? PyList_GET_ITEM(value, i) : value);
        PyObject *call = fast_call(item);
        Py_DECREF(item);
        if (call == NULL) return -1;
        if (call == Py_None) {
            Py_DECREF(call);
            return 0;
        }
        const int r = PyList_Append(calls, call);
        Py_DECREF(call);
        if (r < 0) return -1;
    }
    return 1;
}

/* (calls, shape, False) of an exact str holding <tool_call> whose blocks are all closed and decode exactly: a new
 * reference; None (a new reference) where the reference must read it; NULL with an exception */
static PyObject *text_calls(PyObject *text, PyObject *loads) {
    const Py_ssize_t len = PyUnicode_GET_LENGTH(text);
    const Py_ssize_t open_len = PyUnicode_GET_LENGTH(s_tool_call_tag), close_len = PyUnicode_GET_LENGTH(s_tool_close_tag);
    PyObject *calls = PyList_New(0);
    if (calls == NULL) return NULL;
    int array = 0;
    Py_ssize_t start = PyUnicode_Find(text, s_tool_call_tag, 0, len, 1);
    while (start >= 0) {  /* toolcalls.scan_blocks: a block ends at its </tool_call>, else it is cut short */
        const Py_ssize_t body = start + open_len;
        const Py_ssize_t close = PyUnicode_Find(text, s_tool_close_tag, body, len, 1);
        if (close == -2) goto fail;
        const Py_ssize_t next = close < 0 ? -1 : PyUnicode_Find(text, s_tool_call_tag, body, close, 1);
        if (next == -2) goto fail;
        if (close < 0 || next >= 0) goto decline;  /* cut short: no </tool_call>, or another <tool_call> first */
        Py_ssize_t a = body, b = close;
        strip_span(text, &a, &b);
        if (a < b && PyUnicode_READ_CHAR(text, a) == '[') array = 1;  /* body.lstrip().startswith("[") */
        PyObject *raw = PyUnicode_Substring(text, a, b);
        if (raw == NULL) goto fail;
        PyObject *value = PyObject_CallOneArg(loads, raw);
        Py_DECREF(raw);
        if (value == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_Exception)) goto fail;
            PyErr_Clear();  /* not exact JSON: the reference reads it leniently (or raises what the decoder raises) */
            goto decline;
        }
        const int r = append_calls(calls, value);
        Py_DECREF(value);
        if (r < 0) goto fail;
        if (r == 0) goto decline;
        start = PyUnicode_Find(text, s_tool_call_tag, close + close_len, len, 1);
    }
    if (start == -2) goto fail;
    return Py_BuildValue("(NOO)", calls, array ? s_text_array : s_qwen3_object, Py_False);
decline:
    Py_DECREF(calls);
    Py_RETURN_NONE;
fail:
    Py_DECREF(calls);
    return NULL;
}

/* answer_calls' result where it is read here (a new reference), None (a new reference) to leave it to the reference,
 * NULL with an exception */
static PyObject *answer_calls_here(PyObject *loads, PyObject *message) {
    if (!PyDict_CheckExact(message)) Py_RETURN_NONE;
    PyObject *tcs = get(message, s_tool_calls);
    if (tcs == NULL && PyErr_Occurred()) return NULL;
    if (tcs != NULL && PyList_Check(tcs) && (!PyList_CheckExact(tcs) || PyList_GET_SIZE(tcs) > 0))
        Py_RETURN_NONE;  /* structured calls (or a list subclass, whose truth is its own) */
    PyObject *content = get(message, s_content);
    if (content == NULL && PyErr_Occurred()) return NULL;
    if (content == NULL || !PyUnicode_Check(content)) return no_calls();
    if (!PyUnicode_CheckExact(content)) Py_RETURN_NONE;
    const Py_ssize_t at = PyUnicode_Find(content, s_tool_call_tag, 0, PyUnicode_GET_LENGTH(content), 1);
    if (at == -2) return NULL;
    if (at < 0) return no_calls();
    Py_INCREF(content);  /* held while the decoder runs */
    PyObject *found = text_calls(content, loads);
    Py_DECREF(content);
    return found;
}

PyDoc_STRVAR(answer_calls_doc,
"answer_calls(reference, loads, message)\n--\n\n"
"``(calls, shape, cut)`` of one chat-completion message, equal to ``reference(message)``\n"
"(``oro_assets.traces.calls.answer_calls_py``): read here where every ``<tool_call>`` block of an exact str content is\n"
"closed and ``loads`` decodes it exactly into calls (or there is no block); ``reference(message)`` otherwise.");

static PyObject *answer_calls(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "answer_calls() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *found = answer_calls_here(args[1], args[2]);
    if (found != Py_None) return found;
    Py_DECREF(found);
    return PyObject_CallOneArg(args[0], args[2]);
}

/* ---- named_tools: the tools one inference answer named, as ORO's calculator reads them (oro_assets.traces.calls.
 * _named_tools_py): each choice's native tool_calls[].function.name, then the names of its content's <tool_call>
 * blocks as the reference's regex <tool_call>\s*(\[.*?\]|\{.*?\})\s*</tool_call> (re.S) finds them, each decoded by
 * the decoder passed in. A call that is not an exact dict, or a block the decoder raises on, is read by the reference,
 * called here. */

/* the end of the whitespace (Py_UNICODE_ISSPACE: the regex's \s) from i */
static Py_ssize_t skip_space(int kind, const void *data, Py_ssize_t i, Py_ssize_t len) {
    while (i < len && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, i))) i++;
    return i;
}

/* the names of `item` appended to `names` as the reference reads them: item.get("name") or item.get("tool") or
 * item.get("function"), when that is an exact str; 0, or -1 with an exception */
static int append_item_name(PyObject *names, PyObject *item) {
    if (!PyDict_CheckExact(item)) return 0;
    PyObject *keys[3] = {s_name, s_tool, s_function};
    PyObject *name = NULL;  /* a new reference once found */
    for (int k = 0; k < 3; k++) {
        name = get(item, keys[k]);
        if (name == NULL && PyErr_Occurred()) return -1;
        if (name == NULL) continue;
        Py_INCREF(name);
        if (k == 2) break;
        const int truth = PyObject_IsTrue(name);
        if (truth < 0) {
            Py_DECREF(name);
            return -1;
        }
        if (truth) break;
        Py_CLEAR(name);
    }
    const int r = name != NULL && PyUnicode_CheckExact(name) ? PyList_Append(names, name) : 0;
    Py_XDECREF(name);
    return r;
}

/* the names of the regex's blocks of `content` (an exact str) appended to `names`: 1; 0 where the decoder raised (the
 * reference then reads the call); -1 with an exception */
static int append_tag_names(PyObject *names, PyObject *content, PyObject *loads) {
    const Py_ssize_t len = PyUnicode_GET_LENGTH(content);
    const Py_ssize_t open_len = PyUnicode_GET_LENGTH(s_tool_call_tag), close_len = PyUnicode_GET_LENGTH(s_tool_close_tag);
    const int kind = PyUnicode_KIND(content);
    const void *data = PyUnicode_DATA(content);
    Py_ssize_t pos = 0;
    while (pos <= len) {
        const Py_ssize_t at = PyUnicode_Find(content, s_tool_call_tag, pos, len, 1);
        if (at == -2) return -1;
        if (at < 0) break;
        const Py_ssize_t i = skip_space(kind, data, at + open_len, len);
        const Py_UCS4 first = i < len ? PyUnicode_READ(kind, data, i) : 0;
        const Py_UCS4 last = first == '[' ? ']' : first == '{' ? '}' : 0;
        Py_ssize_t end = -1, j = i;  /* the group is content[i:end]; the match ends past its </tool_call> */
        Py_ssize_t match_end = -1;
        while (last && end < 0) {  /* .*? : the first closing bracket after which \s*</tool_call> follows */
            j = PyUnicode_FindChar(content, last, j + 1, len, 1);
            if (j == -2) return -1;
            if (j < 0) break;
            const Py_ssize_t k = skip_space(kind, data, j + 1, len);
            const int tail = PyUnicode_Tailmatch(content, s_tool_close_tag, k, len, -1);
            if (tail < 0) return -1;
            if (tail) {
                end = j + 1;
                match_end = k + close_len;
            }
        }
        if (end < 0) {  /* no match at this <tool_call>: the regex tries the next position */
            pos = at + 1;
            continue;
        }
        PyObject *block = PyUnicode_Substring(content, i, end);  /* its .strip() is itself: brackets at both ends */
        if (block == NULL) return -1;
        PyObject *payload = PyObject_CallOneArg(loads, block);
        Py_DECREF(block);
        if (payload == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_Exception)) return -1;
            PyErr_Clear();
            return 0;
        }
        int r = 0;
        if (PyList_CheckExact(payload)) {
            for (Py_ssize_t n = 0; r == 0 && n < PyList_GET_SIZE(payload); n++) {
                PyObject *item = Py_NewRef(PyList_GET_ITEM(payload, n));
                r = append_item_name(names, item);
                Py_DECREF(item);
            }
        } else {
            r = append_item_name(names, payload);
        }
        Py_DECREF(payload);
        if (r < 0) return -1;
        pos = match_end;
    }
    return 1;
}

/* _named_tools_py(call) for an exact dict call: a new reference (None: no body); Py_None is returned as a new
 * reference too, so `declined` tells the reference's turn (1) apart; NULL with an exception */
static PyObject *named_tools_here(PyObject *loads, PyObject *call, int *declined) {
    *declined = 0;
    if (!PyDict_CheckExact(call)) {
        *declined = 1;
        Py_RETURN_NONE;
    }
    PyObject *response = get(call, s_response);
    if (response == NULL && PyErr_Occurred()) return NULL;
    if (response == NULL || !PyDict_CheckExact(response)) Py_RETURN_NONE;
    PyObject *choices = get(response, s_choices);
    if (choices == NULL && PyErr_Occurred()) return NULL;
    PyObject *names = PyList_New(0);
    if (names == NULL) return NULL;
    if (choices == NULL || !PyList_CheckExact(choices)) return names;
    Py_INCREF(choices);  /* held while the decoder runs */
    PyObject *msg = NULL;
    for (Py_ssize_t c = 0; c < PyList_GET_SIZE(choices); c++) {
        PyObject *choice = PyList_GET_ITEM(choices, c);
        if (!PyDict_CheckExact(choice)) continue;
        msg = get(choice, s_message);
        if (msg == NULL && PyErr_Occurred()) goto fail;
        if (msg == NULL || !PyDict_CheckExact(msg)) {
            msg = NULL;
            continue;
        }
        Py_INCREF(msg);
        PyObject *tcs = get(msg, s_tool_calls);
        if (tcs == NULL && PyErr_Occurred()) goto fail;
        if (tcs != NULL && PyList_CheckExact(tcs)) {
            Py_INCREF(tcs);
            int bad = 0;
            for (Py_ssize_t k = 0; !bad && k < PyList_GET_SIZE(tcs); k++) {
                PyObject *tc = PyList_GET_ITEM(tcs, k);
                if (!PyDict_CheckExact(tc)) continue;
                Py_INCREF(tc);
                PyObject *fn = get(tc, s_function);
                if (fn == NULL && PyErr_Occurred()) bad = 1;
                else if (fn != NULL && PyDict_CheckExact(fn)) {
                    Py_INCREF(fn);
                    PyObject *name = get(fn, s_name);
                    if (name == NULL && PyErr_Occurred()) bad = 1;
                    else if (name != NULL && PyUnicode_CheckExact(name) && PyList_Append(names, name) < 0) bad = 1;
                    Py_DECREF(fn);
                }
                Py_DECREF(tc);
            }
            Py_DECREF(tcs);
            if (bad) goto fail;
        }
        PyObject *content = get(msg, s_content);
        if (content == NULL && PyErr_Occurred()) goto fail;
        if (content != NULL && PyUnicode_CheckExact(content)) {
            Py_INCREF(content);
            const int r = append_tag_names(names, content, loads);
            Py_DECREF(content);
            if (r < 0) goto fail;
            if (r == 0) {
                Py_CLEAR(msg);
                Py_DECREF(choices);
                Py_DECREF(names);
                *declined = 1;
                Py_RETURN_NONE;
            }
        }
        Py_CLEAR(msg);
    }
    Py_DECREF(choices);
    return names;
fail:
    Py_XDECREF(msg);
    Py_DECREF(choices);
    Py_DECREF(names);
    return NULL;
}

PyDoc_STRVAR(named_tools_doc,
"named_tools(reference, loads, call)\n--\n\n"
"The tools one inference answer named (None: no body to read), equal to ``reference(call)``\n"
"(``oro_assets.traces.calls._named_tools_py``): read here, the ``<tool_call>`` blocks found as the reference's regex\n"
"finds them and decoded by ``loads``; ``reference(call)`` for a call that is not an exact dict or a block ``loads``\n"
"raises on.");

static PyObject *named_tools(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "named_tools() takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    int declined;
    PyObject *found = named_tools_here(args[1], args[2], &declined);
    if (found == NULL || !declined) return found;
    Py_DECREF(found);
    return PyObject_CallOneArg(args[0], args[2]);
}

/* ---- from_steps: normalize.from_steps_py in one call (issue 33's row path, the normaliser's first whole piece): the
 * walk over a dialogue's steps (walk_steps above), each step's proxy evidence (proxy_evidence), step 1's attribution,
 * recorder era and ORO richness (era_counts and calls._era_and_richness_of, here), the messages in column order and
 * the two JSON columns' text, without a Python frame between them */

static PyObject *s_attribution, *s_recorder_era, *s_recorder_note, *s_oro_richness, *s_user, *s_system,
    *s_agentic_richness, *s_emitted, *s_dispatches, *s_by_tool, *s_misses;
static PyObject *era_keys[10]; /* the six signs, then the four misses, in the reference's key order */
static const char *const era_key_text[10] = {
    "dropped_bodies", "requests_without_messages", "whole_list_without_ids", "requests_with_messages",
    "ids_beside_whole_list", "whole_bodies_over_limit", "no_answer_in_step", "dropped_body", "no_body", "not_named"};

static int intern_from_steps_names(void) {
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return -1
    INTERN(s_attribution, "attribution");
    INTERN(s_recorder_era, "recorder_era");
    INTERN(s_recorder_note, "recorder_note");
    INTERN(s_oro_richness, "oro_richness");
    INTERN(s_user, "user");
    INTERN(s_system, "system");
    INTERN(s_agentic_richness, "agentic_richness");
    INTERN(s_emitted, "emitted");
    INTERN(s_dispatches, "dispatches");
    INTERN(s_by_tool, "by_tool");
    INTERN(s_misses, "misses");
    for (int i = 0; i < 10; i++) INTERN(era_keys[i], era_key_text[i]);
#undef INTERN
    return 0;
}

/* {key: value for key, value in pairs if value}: keys[0..n), values[0..n) borrowed; NULL with the exception */
static PyObject *truthy_dict(PyObject *const *keys, PyObject *const *values, int n) {
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    for (int i = 0; i < n; i++) {
        int t = PyObject_IsTrue(values[i]);
        if (t < 0 || (t && PyDict_SetItem(d, keys[i], values[i]) < 0)) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

/* a + b + c (Python's +); NULL with the exception */
static PyObject *sum3(PyObject *a, PyObject *b, PyObject *c) {
    PyObject *ab = PyNumber_Add(a, b);
    if (ab == NULL) return NULL;
    PyObject *out = PyNumber_Add(ab, c);
    Py_DECREF(ab);
    return out;
}

/* calls._era_and_richness_of(*counts) of era_counts' 13 counts: (era, signs, richness); eras = (mixed, a6b1cf3,
 * later); a new reference, NULL with the exception */
static PyObject *era_of_counts(PyObject *counts, PyObject *eras) {
    PyObject *const *c = &PyTuple_GET_ITEM(counts, 0);
    PyObject *signs = NULL, *old = NULL, *new = NULL, *richness = NULL, *misses = NULL, *rate = NULL,
             *items = NULL, *by_tool = NULL, *era = NULL, *out = NULL;
    PyObject *miss_values[4] = {c[9], c[10], c[11], c[12]};
    if ((old = sum3(c[0], c[1], c[2])) == NULL || (new = sum3(c[3], c[4], c[5])) == NULL) goto done;
    int is_old = PyObject_IsTrue(old), is_new = is_old < 0 ? -1 : PyObject_IsTrue(new);
    if (is_old < 0 || is_new < 0) goto done;
    era = is_old && is_new ? PyTuple_GET_ITEM(eras, 0) : is_old ? PyTuple_GET_ITEM(eras, 1)
          : is_new ? PyTuple_GET_ITEM(eras, 2) : Py_None;
    int dispatched = PyObject_IsTrue(c[7]);
    if (dispatched < 0) goto done;
    if (dispatched) {
        PyObject *q = PyNumber_TrueDivide(c[6], c[7]);
        if (q == NULL) goto done;
        rate = PyObject_CallFunction(round_fn, "Oi", q, 6);
        Py_DECREF(q);
        if (rate == NULL) goto done;
    } else {
        rate = Py_NewRef(Py_None);
    }
    if (!PyDict_Check(c[8])) {
        PyErr_SetString(PyExc_TypeError, "era_counts gave by_tool that is not a dict");
        goto done;
    }
    if ((items = PyDict_Items(c[8])) == NULL || PyList_Sort(items) < 0 || (by_tool = PyDict_New()) == NULL) goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *kv = PyList_GET_ITEM(items, i);
        if (PyDict_SetItem(by_tool, PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1)) < 0) goto done;
    }
    if ((misses = truthy_dict(era_keys + 6, miss_values, 4)) == NULL) goto done;
    PyObject *kv[10] = {s_agentic_richness, rate, s_emitted, c[6], s_dispatches, c[7], s_by_tool, by_tool,
                        s_misses, misses};
    if ((richness = dict_of(5, kv)) == NULL || (signs = truthy_dict(era_keys, c, 6)) == NULL) goto done;
    out = PyTuple_Pack(3, era, signs, richness);
done:
    Py_XDECREF(signs); Py_XDECREF(old); Py_XDECREF(new); Py_XDECREF(richness); Py_XDECREF(misses);
    Py_XDECREF(rate); Py_XDECREF(items); Py_XDECREF(by_tool);
    return out;
}


/* m[key] == other (Python's ``m[key] == other``, KeyError and all): 1, 0, or -1 with the exception */
static int item_equals(PyObject *m, PyObject *key, PyObject *other) {
    PyObject *v = PyObject_GetItem(m, key);
    if (v == NULL) return -1;
    int r = PyObject_RichCompareBool(v, other, Py_EQ);
    Py_DECREF(v);
    return r;
}

PyDoc_STRVAR(from_steps_doc,
"from_steps(raw_steps, query, problem_id, walk_helpers, evidence_helpers, era_helpers, era_and_richness, eras,\n"
"           recorder_note, encode, dumps)\n\n"
"normalize.from_steps_py: (query, problem_id, messages, steps, messages text, steps text or None, calls in turns),\n"
"or None where walk_steps hands the dialogue back (the reference reads it). walk_helpers, evidence_helpers and\n"
"era_helpers: the arguments after the first of walk_steps (17), proxy_evidence (7) and era_counts (5);\n"
"era_and_richness: the reference's dispatcher, for calls era_counts leaves to it; eras: (mixed, a6b1cf3, later);\n"
"recorder_note: the note of a mixed dialogue's signs. The steps' text is None where the encoder refuses them.");

static PyObject *from_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_Format(PyExc_TypeError, "from_steps() takes 11 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *walk_helpers = args[3], *evidence_helpers = args[4], *era_helpers = args[5], *era_fallback = args[6],
             *eras = args[7], *recorder_note = args[8], *encode = args[9], *dumps = args[10];
    if (!PyTuple_CheckExact(walk_helpers) || PyTuple_GET_SIZE(walk_helpers) != 17 ||
        !PyTuple_CheckExact(evidence_helpers) || PyTuple_GET_SIZE(evidence_helpers) != 7 ||
        !PyTuple_CheckExact(era_helpers) || PyTuple_GET_SIZE(era_helpers) != 5 ||
        !PyTuple_CheckExact(eras) || PyTuple_GET_SIZE(eras) != 3) {
        PyErr_SetString(PyExc_TypeError, "from_steps(): helpers must be tuples of 17, 7 and 5, eras a tuple of 3");
        return NULL;
    }
    PyObject *wargs[20] = {args[0], args[1], args[2]};
    for (int i = 0; i < 17; i++) wargs[3 + i] = PyTuple_GET_ITEM(walk_helpers, i);
    PyObject *walked = walk_steps(self, wargs, 20);
    if (walked == NULL || walked == Py_None) return walked;
    PyObject *const *got = &PyTuple_GET_ITEM(walked, 0);
    PyObject *query = got[0], *problem_id = got[1], *prefix = got[2], *turns = got[3], *steps = got[4],
             *listed = got[5], *windows = got[6], *note = got[7], *n_calls = got[8];
    PyObject *era = NULL, *counts = NULL, *first = NULL, *messages = NULL, *messages_text = NULL, *steps_text = NULL,
             *out = NULL;
    /* zip(steps, windows, strict=True) over the walk's own lists; anything else is the reference's to read */
    if (!PyList_CheckExact(windows) || PyList_GET_SIZE(windows) != PyList_GET_SIZE(steps)) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *pargs[8];
    for (int i = 0; i < 7; i++) pargs[1 + i] = PyTuple_GET_ITEM(evidence_helpers, i);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(steps); i++) {
        PyObject *step = PyList_GET_ITEM(steps, i);
        pargs[0] = PyList_GET_ITEM(windows, i);
        Py_INCREF(step);
        Py_INCREF(pargs[0]);
        PyObject *ev = proxy_evidence(self, pargs, 8);
        Py_DECREF(pargs[0]);
        int r = ev == NULL ? -1 : (PyDict_SetItem(step, s_inference, PyTuple_GET_ITEM(ev, 0)) < 0 ||
                                   PyDict_SetItem(step, s_search, PyTuple_GET_ITEM(ev, 1)) < 0) ? -1 : 0;
        Py_XDECREF(ev);
        Py_DECREF(step);
        if (r < 0) goto done;
        if (PyList_GET_SIZE(windows) != PyList_GET_SIZE(steps)) { /* a helper changed them: the reference reads it */
            out = Py_NewRef(Py_None);
            goto done;
        }
    }
    if (!PyList_GET_SIZE(steps)) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    first = Py_NewRef(PyList_GET_ITEM(steps, 0));
    if (PyDict_SetItem(first, s_attribution, note) < 0) goto done;
    /* era_and_richness(listed) */
    PyObject *eargs[6] = {listed};
    for (int i = 0; i < 5; i++) eargs[1 + i] = PyTuple_GET_ITEM(era_helpers, i);
    if ((counts = era_counts(self, eargs, 6)) == NULL) goto done;
    if (PyTuple_CheckExact(counts) && PyTuple_GET_SIZE(counts) == 13)
        era = era_of_counts(counts, eras);
    else
        era = PyObject_CallOneArg(era_fallback, listed);
    if (era == NULL) goto done;
    if (!PyTuple_CheckExact(era) || PyTuple_GET_SIZE(era) != 3) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    if (PyDict_SetItem(first, s_recorder_era, PyTuple_GET_ITEM(era, 0)) < 0) goto done;
    int mixed = PyObject_RichCompareBool(PyTuple_GET_ITEM(era, 0), PyTuple_GET_ITEM(eras, 0), Py_EQ);
    if (mixed < 0) goto done;
    if (mixed) {
        PyObject *text = PyObject_CallOneArg(recorder_note, PyTuple_GET_ITEM(era, 1));
        int r = text == NULL ? -1 : PyDict_SetItem(first, s_recorder_note, text);
        Py_XDECREF(text);
        if (r < 0) goto done;
    }
    int any = 0;  /* any(listed) */
    Py_ssize_t n_listed = PyList_GET_SIZE(listed);
    for (Py_ssize_t i = 0; !any && i < n_listed; i++) {
        PyObject *bucket = Py_NewRef(PyList_GET_ITEM(listed, i));
        any = PyObject_IsTrue(bucket);
        Py_DECREF(bucket);
        if (any < 0) goto done;
    }
    if (PyDict_SetItem(first, s_oro_richness, any ? PyTuple_GET_ITEM(era, 2) : Py_None) < 0) goto done;
    /* the query from the prompt's first user message; the messages: system prompts, the query, the turns */
    Py_INCREF(query);
    for (Py_ssize_t i = 0; query == Py_None && i < PyList_GET_SIZE(prefix); i++) {
        PyObject *m = Py_NewRef(PyList_GET_ITEM(prefix, i));
        int user = item_equals(m, s_role, s_user);
        if (user > 0) Py_SETREF(query, PyObject_GetItem(m, s_content));
        Py_DECREF(m);
        if (user < 0 || query == NULL) goto done_query;
    }
    if ((messages = PyList_New(0)) == NULL) goto done_query;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(prefix); i++) {
        PyObject *m = Py_NewRef(PyList_GET_ITEM(prefix, i));
        int system = item_equals(m, s_role, s_system);
        int r = system < 0 ? -1 : system ? PyList_Append(messages, m) : 0;
        Py_DECREF(m);
        if (r < 0) goto done_query;
    }
    if (query != Py_None) {
        PyObject *kv[4] = {s_role, s_user, s_content, query};
        if (append_new(messages, dict_of(2, kv)) < 0) goto done_query;
    }
    {
        Py_ssize_t n = PyList_GET_SIZE(messages);
        if (PyList_SetSlice(messages, n, n, turns) < 0) goto done_query;
    }
    if ((messages_text = encoded_text(encode, dumps, messages, 0)) == NULL ||
        (steps_text = encoded_text(encode, dumps, steps, 1)) == NULL)
        goto done_query;
    out = PyTuple_Pack(7, query, problem_id, messages, steps, messages_text, steps_text, n_calls);
done_query:
    Py_XDECREF(query);
done:
    Py_XDECREF(era); Py_XDECREF(counts); Py_XDECREF(first); Py_XDECREF(messages); Py_XDECREF(messages_text);
    Py_XDECREF(steps_text);
    Py_DECREF(walked);
    return out;
}

static PyMethodDef methods[] = {
    {"era_counts", (PyCFunction)(void (*)(void))era_counts, METH_FASTCALL, era_counts_doc},
    {"step_words", (PyCFunction)(void (*)(void))step_words, METH_FASTCALL, step_words_doc},
    {"walk_result", (PyCFunction)(void (*)(void))walk_result, METH_FASTCALL, walk_result_doc},
    {"minhash_into", minhash_into, METH_VARARGS, minhash_into_doc},
    {"collapse_whitespace", collapse_whitespace, METH_O, collapse_whitespace_doc},
    {"collect_ids", (PyCFunction)(void (*)(void))collect_ids, METH_FASTCALL, collect_ids_doc},
    {"proxy_evidence", (PyCFunction)(void (*)(void))proxy_evidence, METH_FASTCALL, proxy_evidence_doc},
    {"step_evidence", (PyCFunction)(void (*)(void))step_evidence, METH_FASTCALL, step_evidence_doc},
    {"own_titles", (PyCFunction)(void (*)(void))own_titles, METH_FASTCALL, own_titles_doc},
    {"absorb_titles", (PyCFunction)(void (*)(void))absorb_titles, METH_FASTCALL, absorb_titles_doc},
    {"trigram_names", (PyCFunction)(void (*)(void))trigram_names, METH_FASTCALL, trigram_names_doc},
    {"trace_steps", (PyCFunction)(void (*)(void))trace_steps, METH_FASTCALL, trace_steps_doc},
    {"claimed_length", (PyCFunction)(void (*)(void))claimed_length, METH_FASTCALL, claimed_length_doc},
    {"label_steps", (PyCFunction)(void (*)(void))label_steps, METH_FASTCALL, label_steps_doc},
    {"word_count", word_count, METH_O, word_count_doc},
    {"ascii_words_numbers", ascii_words_numbers, METH_O, ascii_words_numbers_doc},
    {"walk_steps", (PyCFunction)(void (*)(void))walk_steps, METH_FASTCALL, walk_steps_doc},
    {"meta_search", meta_search, METH_O, meta_search_doc},
    {"utf8_column", (PyCFunction)(void (*)(void))utf8_column, METH_FASTCALL, utf8_column_doc},
    {"table_rows", (PyCFunction)(void (*)(void))table_rows, METH_FASTCALL, table_rows_doc},
    {"answer_calls", (PyCFunction)(void (*)(void))answer_calls, METH_FASTCALL, answer_calls_doc},
    {"named_tools", (PyCFunction)(void (*)(void))named_tools, METH_FASTCALL, named_tools_doc},
    {"from_steps", (PyCFunction)(void (*)(void))from_steps, METH_FASTCALL, from_steps_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "oro_assets._native",
    "Native kernels of the curation chain, each equal to its Python reference (see oro_assets/native.py).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    crc_init();
    for (int c = 0; c < 128; c++) ascii_space[c] = Py_UNICODE_ISSPACE((Py_UCS4)c) ? 1 : 0;
    if (intern_names() < 0 || intern_from_steps_names() < 0) return NULL;
    if ((empty_args = PyTuple_New(0)) == NULL) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "SOURCE_SHA256", ORO_NATIVE_SOURCE_SHA256) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
