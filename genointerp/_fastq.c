/* genointerp._fastq: plain FASTQ records read from decompressed text, in one compiled pass.
 *
 * classify-reads' own process parses every read before its workers see it, and pysam's parser
 * (htslib kseq, then a property call and a UTF-8 decode per field) was most of that process's work
 * per batch: the part of a run that more workers cannot share. This reads the records nearly every
 * FASTQ file holds, four lines each, and builds their (name, sequence, quality) tuples directly.
 * It never decides anything about an unusual record: at the first record that is not plain it
 * stops and says where, and the caller (genointerp.io.fastq_text) hands the rest of the file to
 * pysam, whose answers and error messages stay those of the reads. So it only has to agree with
 * kseq on plain records, which it does field for field (tests/test_fastq_text.py compares them;
 * why not dnaio, which parses at about this pace but reads some records otherwise than kseq: see
 * genointerp.io.fastq_text):
 *
 *   @NAME[ or tab, then any comment]\n     NAME: bytes 0x21-0x7E (kseq: up to the first space)
 *   SEQUENCE\n                            one line of bytes 0x21-0x7E, not starting with '@', '>'
 *                                         or '+' (kseq would end the sequence there)
 *   +[anything]\n                         (kseq skips the rest of the '+' line)
 *   QUALITY\n                             one line of bytes 0x21-0x7E, as long as the sequence
 *
 * and the next record starts right after, with '@'. The last line of the input may lack its '\n'.
 * An empty read (empty sequence and quality lines, as adapter trimming leaves them) is plain: kseq
 * reads it as one record with no quality, which genointerp.io.sequences makes the empty quality
 * it is here. Everything else (a sequence over several lines, '\r' line ends, bytes that are not
 * printable ASCII, blank lines or junk between records, a cut-off record) is "odd". */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

enum { LIMIT = 0, MORE = 1, ODD = 2, END = 3 }; /* genointerp.io.fastq_text's names */

/* whether every byte of s[0:n] is printable ASCII without the space (no early exit: the loop
 * vectorizes, and nearly every line passes) */
static inline int printable(const unsigned char *s, Py_ssize_t n) {
    unsigned char outside = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        outside |= (unsigned char)(s[i] - 0x21) > 0x5D;
    return !outside;
}

/* an ASCII str of s[0:n], already checked printable */
static inline PyObject *ascii_str(const unsigned char *s, Py_ssize_t n) {
    PyObject *str = PyUnicode_New(n, 127);
    if (str != NULL)
        memcpy(PyUnicode_DATA(str), s, (size_t)n);
    return str;
}

/* the end of the line starting at p (the offset of its '\n', or the input's end where `final`
 * and no '\n' follows); -1 where the line may go on past the text at hand */
static inline Py_ssize_t line_end(const unsigned char *t, Py_ssize_t p, Py_ssize_t size, int final) {
    const unsigned char *nl = memchr(t + p, '\n', (size_t)(size - p));
    if (nl != NULL)
        return nl - t;
    return final ? size : -1;
}

/* records(text, start, limit, final) -> (records, stop, why)
 *
 * Plain records of text (bytes-like) from offset start, up to limit of them: records is a list of
 * (name, sequence, quality) str tuples, stop the offset just past the last one, and why says what
 * ended the list: LIMIT (limit records), MORE (the next record runs past the text; call again
 * with more), ODD (the record at stop is not plain), END (the text ends at stop and `final` says
 * it is the whole input's end). */
static PyObject *records(PyObject *self, PyObject *args) {
    Py_buffer text;
    Py_ssize_t start, limit;
    int final;
    if (!PyArg_ParseTuple(args, "y*nnp", &text, &start, &limit, &final))
        return NULL;
    PyObject *list = NULL, *result = NULL;
    if (start < 0 || start > text.len || limit < 0) {
        PyErr_SetString(PyExc_ValueError, "records: start beyond the text, or a negative limit");
        goto done;
    }
    if ((list = PyList_New(0)) == NULL)
        goto done;
    const unsigned char *t = (const unsigned char *)text.buf;
    Py_ssize_t size = text.len, p = start, count = 0;
    int why = LIMIT;
    while (count < limit) {
        if (p == size) {
            why = final ? END : MORE;
            break;
        }
        if (t[p] != '@') {
            why = ODD;
            break;
        }
        Py_ssize_t head = line_end(t, p, size, final);
        Py_ssize_t seq = head + 1, seq_end = head < 0 || seq > size ? -1 : line_end(t, seq, size, final);
        Py_ssize_t plus = seq_end + 1, plus_end = seq_end < 0 || plus > size ? -1 : line_end(t, plus, size, final);
        Py_ssize_t qual = plus_end + 1, qual_end = plus_end < 0 || qual > size ? -1 : line_end(t, qual, size, final);
        if (qual_end < 0) { /* a record cut off by the text's end: whole with more text, else odd */
            why = final ? ODD : MORE;
            break;
        }
        Py_ssize_t name_end = p + 1;
        while (name_end < head && t[name_end] != ' ' && t[name_end] != '\t')
            name_end++;
        Py_ssize_t length = seq_end - seq;
        /* (an empty read's t[seq] is its line's '\n') */
        if (name_end == p + 1 || !printable(t + p + 1, name_end - p - 1) || t[seq] == '@' ||
            t[seq] == '>' || t[seq] == '+' || !printable(t + seq, length) || t[plus] != '+' ||
            qual_end - qual != length || !printable(t + qual, length)) {
            why = ODD;
            break;
        }
        PyObject *name = ascii_str(t + p + 1, name_end - p - 1), *bases = ascii_str(t + seq, length),
                 *quality = ascii_str(t + qual, length), *record = PyTuple_New(3);
        if (name == NULL || bases == NULL || quality == NULL || record == NULL) {
            Py_XDECREF(name);
            Py_XDECREF(bases);
            Py_XDECREF(quality);
            Py_XDECREF(record);
            goto done;
        }
        PyTuple_SET_ITEM(record, 0, name);
        PyTuple_SET_ITEM(record, 1, bases);
        PyTuple_SET_ITEM(record, 2, quality);
        int failed = PyList_Append(list, record);
        Py_DECREF(record);
        if (failed)
            goto done;
        p = qual_end < size ? qual_end + 1 : size;
        count++;
    }
    result = Py_BuildValue("Oni", list, p, why);
done:
    Py_XDECREF(list);
    PyBuffer_Release(&text);
    return result;
}

static PyMethodDef methods[] = {
    {"records", records, METH_VARARGS, "Plain FASTQ records of decompressed text: (records, stop, why)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastq", "Plain FASTQ records of decompressed text.", -1,
                                    methods};

PyMODINIT_FUNC PyInit__fastq(void) { return PyModule_Create(&module); }
