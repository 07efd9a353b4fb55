/* genointerp._fused: the folded XVir's element-wise passes, one pass over memory each.
 *
 * numpy runs an element-wise step as one pass over its arrays per operation: the embedding's
 * gather, add, multiply, add; the softmax's max, subtract, exp, sum; the LayerNorm's seven. On
 * the activations of a micro-batch (several MB) those passes took 45 % of the folded model's
 * time (genointerp.models.xvir_folded), against 55 % for its GEMMs. Here each step reads and
 * writes its rows once, while they are in cache; the GEMMs stay with numpy's BLAS.
 *
 * The same bytes on every x86-64 CPU: every operation is IEEE float32 with no contraction into
 * fused multiply-adds (setup.py compiles with -ffp-contract=off), sums run over a fixed number of
 * lanes combined in a fixed order, and exp is computed here (numpy's and libm's differ by CPU).
 * The compiler may vectorize the loops, which changes no result. The GIL is released while a
 * kernel runs, so the model's threads run micro-batches side by side.
 *
 * Arrays are C-contiguous float32 (int64 tokens); the Python side (xvir_folded) checks their
 * shapes, and every kernel checks that its buffers hold what it will touch. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Each kernel's loop is compiled twice where GCC can pick a version at load time (an ifunc): for
 * AVX2's 8-float vectors and for the x86-64 baseline's 4. Element-wise IEEE operations give the
 * same result at any width, and every sum and maximum runs over LANES partial ones whatever the
 * width, so both versions give the same bytes (tests/test_fused.py builds one without clones,
 * -DGENOINTERP_NO_CLONES, and compares). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && !defined(GENOINTERP_NO_CLONES)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

#define LANES 8 /* partial sums per row: a fixed order of additions, whatever the vector width */

/* e^x for x <= 0, within 2 ulp (x below -87.3 gives e^-87.3, a float32 tiny against any softmax
 * row sum, which holds an e^0): x = n ln2 + r with |r| <= ln2 / 2, e^r by a degree-7
 * polynomial in r with the Cephes library's expf coefficients, 2^n from its exponent bits.
 * Branch-free, so that loops over it vectorize. */
static inline float exp_nonpositive(float x) {
    x = x < -87.3f ? -87.3f : x;
    const float shift = 12582912.0f; /* 1.5 * 2^23: adding and subtracting it rounds to an integer */
    float n = (x * 1.44269504088896341f + shift) - shift;
    float r = x - n * 0.693359375f; /* ln 2 in two parts: the first exact in float32 times n */
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float e = p * (r * r) + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return e * scale;
}

/* the sum of v[0..n) over LANES partial sums, combined pairwise */
static inline float lane_sum(const float *v, Py_ssize_t n) {
    float acc[LANES] = {0};
    Py_ssize_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++)
            acc[l] += v[i + l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += v[i];
    for (int width = LANES / 2; width; width /= 2)
        for (int l = 0; l < width; l++)
            acc[l] += acc[l + width];
    return acc[0];
}

/* the largest of v[0..n), n >= 1, over LANES partial maxima (so that it vectorizes) */
static inline float lane_max(const float *v, Py_ssize_t n) {
    float acc[LANES];
    for (int l = 0; l < LANES; l++)
        acc[l] = v[0];
    Py_ssize_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int l = 0; l < LANES; l++)
            acc[l] = v[i + l] > acc[l] ? v[i + l] : acc[l];
    for (int l = 0; i < n; i++, l++)
        acc[l] = v[i] > acc[l] ? v[i] : acc[l];
    for (int width = LANES / 2; width; width /= 2)
        for (int l = 0; l < width; l++)
            acc[l] = acc[l + width] > acc[l] ? acc[l + width] : acc[l];
    return acc[0];
}

static int fits(Py_buffer *b, Py_ssize_t floats, const char *what) {
    if (b->len < floats * (Py_ssize_t)sizeof(float)) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd bytes, %zd needed", what, b->len, floats * (Py_ssize_t)sizeof(float));
        return 0;
    }
    return 1;
}

/* The rows of a buffer that must hold whole rows of `cols` floats, or -1 with the ValueError set. */
static Py_ssize_t whole_rows(Py_buffer *b, Py_ssize_t cols, const char *what, const char *of) {
    Py_ssize_t rows = cols > 0 ? b->len / (Py_ssize_t)sizeof(float) / cols : 0;
    if (cols <= 0 || rows * cols * (Py_ssize_t)sizeof(float) != b->len) {
        PyErr_Format(PyExc_ValueError, "%s must be whole rows of %s", what, of);
        return -1;
    }
    return rows;
}

static VECTOR_CLONES void embed_rows(const float *K, const float *P, const float *R, const float *O,
                                     const int64_t *tok, float *X, float *Q, Py_ssize_t rows, Py_ssize_t n,
                                     Py_ssize_t d) {
    Py_ssize_t w = 4 * d;
    for (Py_ssize_t i = 0; i < rows; i++) {
        Py_ssize_t p = i % n;
        const float *e = K + tok[i] * w, *q = P + p * w;
        float r = R[tok[i] * n + p];
        float *xi = X + i * d, *qi = Q + i * 3 * d;
        for (Py_ssize_t c = 0; c < d; c++)
            xi[c] = (e[c] + q[c]) * r + O[c];
        for (Py_ssize_t c = d; c < w; c++)
            qi[c - d] = (e[c] + q[c]) * r + O[c];
    }
}

/* embed(kmer, pos, rstd, offset, tokens, x, qkv, n, d): the first layer's input and Q, K, V from
 * the folded tables, per token t at position p of a window (tokens int64 (m, n), each below V):
 *   y = (kmer[t] + pos[p]) * rstd[t n + p] + offset       (4d,)
 * x (m n, d) gets y's first d values, qkv (m, n, 3d) the rest. kmer (V, 4d), pos (n, 4d),
 * rstd (V n,), offset (4d,). */
static PyObject *embed(PyObject *self, PyObject *args) {
    Py_buffer kmer, pos, rstd, offset, tokens, x, qkv;
    Py_ssize_t n, d;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*nn", &kmer, &pos, &rstd, &offset, &tokens, &x, &qkv, &n, &d))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t w = 4 * d, vocab = kmer.len / (Py_ssize_t)sizeof(float) / (w ? w : 1);
    Py_ssize_t rows = tokens.len / (Py_ssize_t)sizeof(int64_t);
    if (n <= 0 || d <= 0 || rows % n) {
        PyErr_SetString(PyExc_ValueError, "tokens must be whole windows of n");
        goto done;
    }
    if (!fits(&pos, n * w, "pos") || !fits(&rstd, vocab * n, "rstd") || !fits(&offset, w, "offset") ||
        !fits(&x, rows * d, "x") || !fits(&qkv, rows * 3 * d, "qkv"))
        goto done;
    const int64_t *tok = (const int64_t *)tokens.buf;
    for (Py_ssize_t i = 0; i < rows; i++)
        if (tok[i] < 0 || tok[i] >= vocab) {
            PyErr_Format(PyExc_ValueError, "token %lld is not a k-mer id below %zd", (long long)tok[i], vocab);
            goto done;
        }
    Py_BEGIN_ALLOW_THREADS
    embed_rows((const float *)kmer.buf, (const float *)pos.buf, (const float *)rstd.buf, (const float *)offset.buf,
               tok, (float *)x.buf, (float *)qkv.buf, rows, n, d);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&kmer);
    PyBuffer_Release(&pos);
    PyBuffer_Release(&rstd);
    PyBuffer_Release(&offset);
    PyBuffer_Release(&tokens);
    PyBuffer_Release(&x);
    PyBuffer_Release(&qkv);
    return result;
}

static VECTOR_CLONES void softmax_rows(float *S, float *T, Py_ssize_t rows, Py_ssize_t cols) {
    for (Py_ssize_t i = 0; i < rows; i++) {
        float *s = S + i * cols, top = lane_max(s, cols);
        for (Py_ssize_t c = 0; c < cols; c++)
            s[c] = exp_nonpositive(s[c] - top);
        T[i] = lane_sum(s, cols);
    }
}

/* softmax_numerators(scores, sums, cols): each row of scores (R, cols) becomes e^(s - its max),
 * in place, and sums (R,) gets the row's sum: the softmax's numerators and denominators (the
 * division waits until after the product with V, over fewer values). */
static PyObject *softmax_numerators(PyObject *self, PyObject *args) {
    Py_buffer scores, sums;
    Py_ssize_t cols;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*w*n", &scores, &sums, &cols))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t rows = whole_rows(&scores, cols, "scores", "cols");
    if (rows < 0)
        goto done;
    if (!fits(&sums, rows, "sums"))
        goto done;
    Py_BEGIN_ALLOW_THREADS
    softmax_rows((float *)scores.buf, (float *)sums.buf, rows, cols);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&scores);
    PyBuffer_Release(&sums);
    return result;
}

static VECTOR_CLONES void divide_into(const float *V, const float *T, float *O, Py_ssize_t rows, Py_ssize_t width,
                                      Py_ssize_t stride, Py_ssize_t at) {
    for (Py_ssize_t i = 0; i < rows; i++) {
        const float *v = V + i * width;
        float t = T[i], *o = O + i * stride + at;
        for (Py_ssize_t c = 0; c < width; c++)
            o[c] = v[c] / t;
    }
}

/* divide_rows(values, sums, out, width, stride, at): out[i, at:at + width] = values[i] / sums[i]
 * for values (R, width), sums (R,), out (R, stride): one head's attention output into its
 * columns of all heads'. */
static PyObject *divide_rows(PyObject *self, PyObject *args) {
    Py_buffer values, sums, out;
    Py_ssize_t width, stride, at;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*nnn", &values, &sums, &out, &width, &stride, &at))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t rows = width > 0 ? values.len / (Py_ssize_t)sizeof(float) / width : 0;
    if (width <= 0 || at < 0 || at + width > stride) {
        PyErr_SetString(PyExc_ValueError, "columns outside the output's rows");
        goto done;
    }
    if (!fits(&sums, rows, "sums") || !fits(&out, rows * stride, "out"))
        goto done;
    Py_BEGIN_ALLOW_THREADS
    divide_into((const float *)values.buf, (const float *)sums.buf, (float *)out.buf, rows, width, stride, at);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&values);
    PyBuffer_Release(&sums);
    PyBuffer_Release(&out);
    return result;
}

static VECTOR_CLONES void layer_norm_rows(float *X, const float *Y, const float *B, const float *W, const float *Z,
                                          float eps, Py_ssize_t rows, Py_ssize_t d) {
    for (Py_ssize_t i = 0; i < rows; i++) {
        float *v = X + i * d;
        const float *u = Y + i * d;
        for (Py_ssize_t c = 0; c < d; c++)
            v[c] = v[c] + u[c];
        if (B)
            for (Py_ssize_t c = 0; c < d; c++)
                v[c] = v[c] + B[c];
        float mean = lane_sum(v, d) / (float)d;
        for (Py_ssize_t c = 0; c < d; c++)
            v[c] = v[c] - mean;
        float acc[LANES] = {0};
        Py_ssize_t c = 0;
        for (; c + LANES <= d; c += LANES)
            for (int l = 0; l < LANES; l++)
                acc[l] += v[c + l] * v[c + l];
        for (int l = 0; c < d; c++, l++)
            acc[l] += v[c] * v[c];
        for (int width = LANES / 2; width; width /= 2)
            for (int l = 0; l < width; l++)
                acc[l] += acc[l + width];
        float scale = 1.0f / sqrtf(acc[0] / (float)d + eps);
        for (c = 0; c < d; c++)
            v[c] = v[c] * scale * W[c] + Z[c];
    }
}

/* add_layer_norm(x, y, bias, weight, beta, eps, d): x = LayerNorm(x + y + bias) per row of d,
 * in place: x, y (R, d); bias (d,) or empty for none; weight, beta (d,). As torch's layer_norm:
 * the biased variance, eps inside the square root. */
static PyObject *add_layer_norm(PyObject *self, PyObject *args) {
    Py_buffer x, y, bias, weight, beta;
    float eps;
    Py_ssize_t d;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*y*y*y*y*fn", &x, &y, &bias, &weight, &beta, &eps, &d))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t rows = whole_rows(&x, d, "x", "d");
    if (rows < 0)
        goto done;
    if (!fits(&y, rows * d, "y") || (bias.len && !fits(&bias, d, "bias")) || !fits(&weight, d, "weight") ||
        !fits(&beta, d, "beta"))
        goto done;
    Py_BEGIN_ALLOW_THREADS
    layer_norm_rows((float *)x.buf, (const float *)y.buf, bias.len ? (const float *)bias.buf : NULL,
                    (const float *)weight.buf, (const float *)beta.buf, eps, rows, d);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&y);
    PyBuffer_Release(&bias);
    PyBuffer_Release(&weight);
    PyBuffer_Release(&beta);
    return result;
}

static VECTOR_CLONES void bias_relu_rows(float *H, const float *B, Py_ssize_t rows, Py_ssize_t f) {
    for (Py_ssize_t i = 0; i < rows; i++) {
        float *v = H + i * f;
        for (Py_ssize_t c = 0; c < f; c++) {
            float s = v[c] + B[c];
            v[c] = s > 0.0f ? s : 0.0f;
        }
    }
}

/* bias_relu(h, bias, f): h = max(h + bias, 0) per row of f, in place; h (R, f), bias (f,). */
static PyObject *bias_relu(PyObject *self, PyObject *args) {
    Py_buffer h, bias;
    Py_ssize_t f;
    (void)self;
    if (!PyArg_ParseTuple(args, "w*y*n", &h, &bias, &f))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t rows = whole_rows(&h, f, "h", "f");
    if (rows < 0)
        goto done;
    if (!fits(&bias, f, "bias"))
        goto done;
    Py_BEGIN_ALLOW_THREADS
    bias_relu_rows((float *)h.buf, (const float *)bias.buf, rows, f);
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyBuffer_Release(&h);
    PyBuffer_Release(&bias);
    return result;
}

static PyMethodDef methods[] = {
    {"embed", embed, METH_VARARGS, "The folded XVir's first-layer input and Q, K, V from its tables."},
    {"softmax_numerators", softmax_numerators, METH_VARARGS, "exp(s - row max) in place, and each row's sum."},
    {"divide_rows", divide_rows, METH_VARARGS, "Rows divided by their sums, into columns of a wider output."},
    {"add_layer_norm", add_layer_norm, METH_VARARGS, "x = LayerNorm(x + y + bias) per row, in place."},
    {"bias_relu", bias_relu, METH_VARARGS, "h = max(h + bias, 0) per row, in place."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fused",
                                    "The folded XVir's element-wise passes, fused (genointerp.models.xvir_folded).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__fused(void) { return PyModule_Create(&module); }
