/* genointerp._scan: the windows of reads looked up in a viral seed index, in one pass.
 *
 * The numpy form of this step (genointerp.seq.kmers, genointerp.seq.translate, IdSet.contains)
 * makes a dozen arrays the size of a batch for every window of every read, and nearly every
 * window is absent from the index: that was three quarters of classify-reads' time. Here each
 * window's id is rolled from the previous one and tested against the same bit filter and sorted
 * ids, so only the windows found leave the loop. The Python side (genointerp.seq.scan) checks
 * the arguments' types and sizes; the results are the numpy form's, window for window
 * (tests/test_scan.py compares them). The GIL is released while a scan runs.
 *
 * Look-ups (genointerp.seq.idset): a window's filter word is requested as soon as its id is known
 * and tested CHUNK windows later, so the memory fetches of a chunk overlap instead of waiting one
 * by one; an id the filter lets through is searched among the fences, then in its block.
 *
 * Beside the look-ups, the evidence's other per-window steps that numpy made batch-sized arrays
 * for: both strands' codons, the places check of matched seed pairs, the letters each stretch of
 * matches fixes, and the window entropy that masks low-complexity residues (each the numpy
 * form's results, which its test holds and compares).
 *
 * Conventions (genointerp.seq): bases A=0 C=1 G=2 T=3, any other code unknown; a window's 2-bit
 * id has its first base most significant; amino acids 0..19, STOP 20, an unknown codon 21. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <pthread.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static const uint64_t HASH = 0x9E3779B97F4A7C15ULL; /* genointerp.seq.idset._HASH */

#define FENCE 64 /* genointerp.seq.idset.FENCE */
#define CHUNK 256 /* windows whose filter words are fetched together */

typedef struct {
    const uint64_t *table;  /* the filter: blocked Bloom, two bits of one word per id */
    int bits;               /* log2 of the filter's bits */
    const uint64_t *ids;    /* sorted unique ids */
    Py_ssize_t n;
    const uint64_t *fences; /* every FENCE-th id */
    Py_ssize_t n_fences;
} IdSet;

static inline uint64_t probe_word(const IdSet *set, uint64_t id) { return (id * HASH) >> (64 - (set->bits - 6)); }

static inline uint64_t probe_mask(uint64_t id) {
    uint64_t h = id * HASH;
    return ((uint64_t)1 << ((h >> 20) & 63)) | ((uint64_t)1 << ((h >> 26) & 63));
}

/* the block of the set's ids where id would be: the last fence <= id */
static inline Py_ssize_t fence_of(const IdSet *set, uint64_t id) {
    Py_ssize_t lo = 0, hi = set->n_fences;
    while (hi - lo > 1) {
        Py_ssize_t mid = lo + ((hi - lo) >> 1);
        if (set->fences[mid] <= id)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* where id is in block `lo` of the set's ids (fence_of), -1 where it is not: the first id >= id
 * in the block, found without branches (a viral read's ids are found at unpredictable sides) */
static inline Py_ssize_t search_block(const IdSet *set, uint64_t id, Py_ssize_t lo) {
    Py_ssize_t a = lo * FENCE, len = a + FENCE < set->n ? FENCE : set->n - a;
    if (len <= 0)
        return -1;
    const uint64_t *base = set->ids + a;
    while (len > 1) {
        Py_ssize_t half = len >> 1;
        base = base[half] < id ? base + half : base;
        len -= half;
    }
    Py_ssize_t at = (base - set->ids) + (*base < id);
    return at < set->n && set->ids[at] == id ? at : -1;
}

/* The fences' ranges by the leading bits of an id: the top BUCKET_BITS bits the seed mask keeps
 * (at or below the set's largest id's top bit; every id looked up is masked) are an id's bucket,
 * in the ids' order, and lo[b] is the first fence of bucket b or later, so that fence_in searches
 * a few fences where fence_of searches all. Ids above the set's largest fall in the last bucket. */
#define BUCKET_BITS 16
typedef struct {
    uint32_t *lo; /* (1 << n_gather) + 1 */
    int n_gather, top;
    int gather[64]; /* the bits read, most significant first */
} Buckets;

static inline uint64_t bucket_of(const Buckets *bk, uint64_t id) {
    if (bk->top < 63 && (id >> (bk->top + 1)))
        return ((uint64_t)1 << bk->n_gather) - 1;
    uint64_t b = 0;
    for (int g = 0; g < bk->n_gather; g++)
        b = (b << 1) | ((id >> bk->gather[g]) & 1);
    return b;
}

/* the bits a non-empty set's buckets read (bk->lo left alone) */
static void buckets_layout(Buckets *bk, const IdSet *set, uint64_t mask) {
    uint64_t largest = set->ids[set->n - 1];
    bk->top = 63;
    while (bk->top > 0 && !((largest >> bk->top) & 1))
        bk->top--;
    bk->n_gather = 0;
    for (int bit = bk->top; bit >= 0 && bk->n_gather < BUCKET_BITS; bit--)
        if ((mask >> bit) & 1)
            bk->gather[bk->n_gather++] = bit;
}

/* bk->lo, (1 << n_gather) + 1 of them, of buckets_layout's buckets */
static void buckets_fill(Buckets *bk, const IdSet *set) {
    Py_ssize_t n_buckets = (Py_ssize_t)1 << bk->n_gather, f = 0;
    for (Py_ssize_t b = 0; b <= n_buckets; b++) {
        while (f < set->n_fences && bucket_of(bk, set->fences[f]) < (uint64_t)b)
            f++;
        bk->lo[b] = (uint32_t)f;
    }
}

/* the buckets of a non-empty set's fences; 0 where memory ran out */
static int buckets_of(Buckets *bk, const IdSet *set, uint64_t mask) {
    buckets_layout(bk, set, mask);
    bk->lo = malloc(sizeof(uint32_t) * (((Py_ssize_t)1 << bk->n_gather) + 1));
    if (!bk->lo)
        return 0;
    buckets_fill(bk, set);
    return 1;
}

/* seed_buckets(ids, fences, mask) -> bytes: the fences' buckets seed_scan reads for ids looked up
 * with `mask` (uint32 lo, (1 << bits gathered) + 1 of them; empty for no ids). Made once per index
 * and handed to every seed_scan (genointerp.seq.scan), which otherwise makes them at each call:
 * some 5 ms, a batch's worth of a human read's look-ups. */
static PyObject *seed_buckets(PyObject *self, PyObject *args) {
    Py_buffer ids, fences;
    unsigned long long mask;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*K", &ids, &fences, &mask))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = ids.len / 8;
    if (ids.len % 8 || fences.len != 8 * ((n + FENCE - 1) / FENCE)) {
        PyErr_SetString(PyExc_ValueError, "seed_buckets: a fence table that does not fit its ids");
        goto done;
    }
    if (!n) {
        result = PyBytes_FromStringAndSize(NULL, 0);
        goto done;
    }
    IdSet set = {NULL, 0, (const uint64_t *)ids.buf, n, (const uint64_t *)fences.buf, fences.len / 8};
    Buckets bk = {NULL, 0, 0, {0}};
    buckets_layout(&bk, &set, (uint64_t)mask);
    result = PyBytes_FromStringAndSize(NULL, sizeof(uint32_t) * (((Py_ssize_t)1 << bk.n_gather) + 1));
    if (result) {
        bk.lo = (uint32_t *)PyBytes_AS_STRING(result);
        buckets_fill(&bk, &set);
    }
done:
    PyBuffer_Release(&ids);
    PyBuffer_Release(&fences);
    return result;
}

/* A table of the ids by their hash (genointerp.seq.idset.IdSet's `lookup`, prebuilt with a viral
 * index): 2^bits entries of two words, an id, and its place among the sorted ids (low 32 bits)
 * with the first place of its seed in the references (high 32 bits; NO_PLACE where not given),
 * each id at the entry its hash's top bits name or the first free one after it (linear probing;
 * empty entries hold EMPTY_ID, which no id of at most 62 bits is). An id found costs one fetch of
 * one entry's line (two at a line's end), where the filter, the line fences and the line of ids
 * cost three fetches a window of an all-viral read, each a wait on memory; and the places check
 * (share_place), which tries each pair's first place first, need not fetch it. */
#define EMPTY_ID (~(uint64_t)0)
#define LOOKUP_AHEAD 16 /* windows ahead whose entries are requested */
#define NO_PLACE 0xFFFFFFFFu

static inline uint64_t lookup_entry(uint64_t id, int bits) { return (id * HASH) >> (64 - bits); }

/* where id is among the sorted ids, -1 where it is not (lookup: the table, mask: entries - 1);
 * *place gets its seed's first place, -1 where the table has none */
static inline Py_ssize_t lookup_find(const uint64_t *lookup, uint64_t mask, int bits, uint64_t id, int64_t *place) {
    for (uint64_t e = lookup_entry(id, bits);; e = (e + 1) & mask) {
        uint64_t got = lookup[2 * e];
        if (got == id) {
            uint64_t v = lookup[2 * e + 1];
            *place = (v >> 32) == NO_PLACE ? -1 : (int64_t)(v >> 32);
            return (Py_ssize_t)(v & 0xFFFFFFFFu);
        }
        if (got == EMPTY_ID)
            return -1;
    }
}

/* id_lookup(ids, bits, table[, first_place]): fill table (uint64 (2 << bits,), all EMPTY_ID) with
 * sorted unique ids uint64 (n,), n < 2^bits (the caller keeps it under 0.7 of them full) and
 * n < 2^32, and with each one's first place int64 (n,) where given (NO_PLACE past 32 bits) */
static PyObject *id_lookup(PyObject *self, PyObject *args) {
    Py_buffer ids, table, firsts = {0};
    int bits;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*iw*|y*", &ids, &bits, &table, &firsts))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = ids.len / 8;
    if (bits < 1 || bits > 40 || ids.len % 8 || table.len != (Py_ssize_t)16 << bits || n >= ((Py_ssize_t)1 << bits) ||
        (int64_t)n >= ((int64_t)1 << 32) || (firsts.buf && firsts.len && firsts.len != ids.len)) {
        PyErr_SetString(PyExc_ValueError, "id_lookup: a table of the wrong size for these ids");
        goto done;
    }
    const int64_t *first_place = firsts.buf && firsts.len ? (const int64_t *)firsts.buf : NULL;
    const uint64_t *id = (const uint64_t *)ids.buf;
    uint64_t *t = (uint64_t *)table.buf, mask = ((uint64_t)1 << bits) - 1;
    int bad = 0;
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        bad = id[i] == EMPTY_ID || (i && id[i] <= id[i - 1]);
        uint64_t e = lookup_entry(id[i], bits);
        while (t[2 * e] != EMPTY_ID)
            e = (e + 1) & mask;
        int64_t place = first_place ? first_place[i] : -1;
        t[2 * e] = id[i];
        t[2 * e + 1] = (uint64_t)i | ((uint64_t)(place >= 0 && place < (int64_t)NO_PLACE ? place : NO_PLACE) << 32);
    }
    if (bad)
        PyErr_SetString(PyExc_ValueError, "id_lookup: ids that are not sorted and unique");
    else
        result = (Py_INCREF(Py_None), Py_None);
done:
    PyBuffer_Release(&ids);
    PyBuffer_Release(&table);
    if (firsts.obj)
        PyBuffer_Release(&firsts);
    return result;
}

#define LINE 8 /* ids in a cache line; FENCE / LINE line fences a block */

/* the line of the set's ids (index into line_first: ids[LINE * line] onwards) where id would be,
 * within block `lo` (fence_in's): the last of the block's lines whose first id is <= id, or its
 * first line */
static inline Py_ssize_t line_in(const IdSet *set, const uint64_t *line_first, uint64_t id, Py_ssize_t lo) {
    Py_ssize_t first = lo * (FENCE / LINE), lines = (set->n + LINE - 1) / LINE, end = first + FENCE / LINE;
    end = end < lines ? end : lines;
    Py_ssize_t at = first;
    for (Py_ssize_t j = first + 1; j < end; j++) /* no branch taken on the data: the count of line firsts <= id */
        at += line_first[j] <= id;
    return at;
}

/* search_block's answer (where id is in the set's ids, -1 where it is not) from its line
 * (line_in's): the ids after that line's are above id, so the first id >= id is in it or is
 * the next line's first */
static inline Py_ssize_t search_line(const IdSet *set, uint64_t id, Py_ssize_t line) {
    Py_ssize_t at = line * LINE, end = at + LINE < set->n ? at + LINE : set->n;
    while (at < end && set->ids[at] < id)
        at++;
    return at < set->n && set->ids[at] == id ? at : -1;
}

/* fence_of(set, id), searched among its bucket's fences and the one before them */
static inline Py_ssize_t fence_in(const IdSet *set, const Buckets *bk, uint64_t id) {
    uint64_t b = bucket_of(bk, id);
    Py_ssize_t lo = bk->lo[b] ? (Py_ssize_t)bk->lo[b] - 1 : 0, hi = bk->lo[b + 1];
    while (hi - lo > 1) {
        Py_ssize_t mid = lo + ((hi - lo) >> 1);
        if (set->fences[mid] <= id)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* where id is in the set's ids, -1 where it is not */
static inline Py_ssize_t search(const IdSet *set, uint64_t id) { return search_block(set, id, fence_of(set, id)); }

/* where id is in the set's ids, -1 where it is not (the filter word is fetched here) */
static inline Py_ssize_t find(const IdSet *set, uint64_t id) {
    uint64_t mask = probe_mask(id);
    return (set->table[probe_word(set, id)] & mask) == mask && set->n ? search(set, id) : -1;
}

static int id_set(IdSet *set, Py_buffer *table, int bits, Py_buffer *ids, Py_buffer *fences) {
    Py_ssize_t n = ids->len / 8;
    if (bits < 12 || bits > 38 || table->len != ((Py_ssize_t)1 << (bits - 3)) || ids->len % 8 ||
        fences->len != 8 * ((n + FENCE - 1) / FENCE)) {
        PyErr_SetString(PyExc_ValueError, "an id filter or fence table that does not fit its ids");
        return 0;
    }
    set->table = (const uint64_t *)table->buf;
    set->bits = bits;
    set->ids = (const uint64_t *)ids->buf;
    set->n = n;
    set->fences = (const uint64_t *)fences->buf;
    set->n_fences = fences->len / 8;
    return 1;
}

/* seed_scan(codes, lengths, k, mask, table, bits, ids, fences, hit_at, hit_id, hit_slot, hit_flip, clean
 *           [, buckets, lines, lookup, lookup_bits, hit_place]) -> hits
 *
 * codes uint8 (M,): reads joined by one separator (read i starts at the sum of the lengths
 * before it plus i); lengths int64 (n,). Every window of k bases inside a read and free of
 * unknown codes is "clean" (clean int64 (n,) gets the count per read, added to); its canonical
 * id (the smaller of its and its reverse complement's 2-bit ids, each ANDed with mask) is looked
 * up. Found windows go to hit_at int64 (their start in codes), hit_id uint64, hit_slot int64 (the
 * id's place among the sorted ids) and hit_flip uint8 (1 where the id is the reverse complement's,
 * the forward id being larger), in order; returns how many (the buffers hold one per window of
 * codes at most). With `lookup` (id_lookup's table of these ids, 2^lookup_bits entries), ids are
 * found there: after a chunk of windows most of which were found (an all-viral read's), without
 * the filter; else those the filter passes. The same slots either way; hit_place int64 (where
 * given) gets each found window's seed's first place where the table holds it, else -1. */
static PyObject *seed_scan(PyObject *self, PyObject *args) {
    Py_buffer codes, lengths, table, ids, fences, hit_at, hit_id, hit_slot, hit_flip, clean, given = {0}, lines = {0},
        lookup_b = {0}, place_b = {0};
    int k, bits, lookup_bits = 0;
    unsigned long long mask;
    if (!PyArg_ParseTuple(args, "y*y*iKy*iy*y*w*w*w*w*w*|y*y*y*iw*", &codes, &lengths, &k, &mask, &table, &bits, &ids,
                          &fences, &hit_at, &hit_id, &hit_slot, &hit_flip, &clean, &given, &lines, &lookup_b,
                          &lookup_bits, &place_b))
        return NULL;
    PyObject *result = NULL;
    IdSet set;
    Buckets buckets = {NULL, 0, 0, {0}};
    int own_buckets = 1; /* made here, not seed_buckets' (given) */
    Py_ssize_t n = lengths.len / 8, m = codes.len, capacity = hit_at.len / 8;
    if (!id_set(&set, &table, bits, &ids, &fences))
        goto done;
    if (k < 1 || k > 31 || clean.len != lengths.len || hit_id.len != hit_at.len || hit_slot.len != hit_at.len ||
        hit_flip.len != capacity || capacity < m) {
        PyErr_SetString(PyExc_ValueError, "seed_scan: arguments of the wrong size");
        goto done;
    }
    /* every LINE-th id (the first of each cache line of ids), where given: a block's eight of them
     * lie in one or two cache lines, and say which line of the block to fetch and search */
    const uint64_t *line_first = NULL;
    if (lines.buf && lines.len) {
        if (lines.len != 8 * ((set.n + LINE - 1) / LINE)) {
            PyErr_SetString(PyExc_ValueError, "seed_scan: line fences of other ids");
            goto done;
        }
        line_first = (const uint64_t *)lines.buf;
    }
    const uint64_t *lookup = NULL;
    uint64_t lookup_mask = 0;
    if (lookup_b.buf && lookup_b.len) {
        if (lookup_bits < 1 || lookup_bits > 40 || lookup_b.len != (Py_ssize_t)16 << lookup_bits ||
            set.n >= ((Py_ssize_t)1 << lookup_bits)) {
            PyErr_SetString(PyExc_ValueError, "seed_scan: a lookup table of other ids");
            goto done;
        }
        lookup = (const uint64_t *)lookup_b.buf;
        lookup_mask = ((uint64_t)1 << lookup_bits) - 1;
    }
    int64_t *hplace = NULL;
    if (place_b.buf && place_b.len) {
        if (place_b.len != hit_at.len) {
            PyErr_SetString(PyExc_ValueError, "seed_scan: arguments of the wrong size");
            goto done;
        }
        hplace = (int64_t *)place_b.buf;
    }
    if (set.n && given.buf && given.len) { /* seed_buckets' of these ids and mask */
        buckets_layout(&buckets, &set, (uint64_t)mask);
        if (given.len != (Py_ssize_t)sizeof(uint32_t) * (((Py_ssize_t)1 << buckets.n_gather) + 1)) {
            PyErr_SetString(PyExc_ValueError, "seed_scan: buckets of another size than these ids and mask make");
            goto done;
        }
        buckets.lo = (uint32_t *)given.buf;
        own_buckets = 0;
    } else if (set.n && !buckets_of(&buckets, &set, (uint64_t)mask)) {
        PyErr_NoMemory();
        goto done;
    }
    const uint8_t *c = (const uint8_t *)codes.buf;
    const int64_t *len = (const int64_t *)lengths.buf;
    int64_t *at = (int64_t *)hit_at.buf, *cl = (int64_t *)clean.buf, *hslot = (int64_t *)hit_slot.buf;
    uint64_t *hid = (uint64_t *)hit_id.buf;
    uint8_t *hflip = (uint8_t *)hit_flip.buf, chunk_flip[CHUNK];
    const uint64_t keep = ((uint64_t)1 << (2 * k)) - 1, top = 2 * (uint64_t)(k - 1);
    Py_ssize_t hits = 0, start = 0, bad = 0;
    Py_BEGIN_ALLOW_THREADS
    uint64_t chunk_id[CHUNK];
    Py_ssize_t chunk_at[CHUNK], chunk_block[CHUNK], chunk_line[CHUNK];
    int dense = 0; /* whether most windows of the last chunk passed the filter */
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        Py_ssize_t end = start + len[i];
        if (len[i] < 0 || end > m) {
            bad = 1;
            break;
        }
        uint64_t fwd = 0, rev = 0;
        int run = 0; /* clean bases ending here */
        Py_ssize_t j = start;
        while (j < end) {
            int w = 0; /* a chunk of clean windows: their ids, their filter words requested at once */
            for (; j < end && w < CHUNK; j++) {
                uint8_t b = c[j];
                if (b > 3) {
                    run = 0;
                    continue;
                }
                fwd = ((fwd << 2) | b) & keep;
                rev = (rev >> 2) | ((uint64_t)(3 - b) << top);
                if (++run < k)
                    continue;
                uint64_t f = fwd & mask, r = rev & mask, id = f < r ? f : r;
                if (!lookup || !dense) /* found without the filter: its entry requested below */
                    __builtin_prefetch(&set.table[probe_word(&set, id)]);
                chunk_id[w] = id;
                chunk_flip[w] = f > r;
                chunk_at[w++] = j - k + 1;
            }
            cl[i] += w;
            if (lookup) { /* each id's entry of the lookup table, after the filter where few were found */
                int found = 0;
                if (!dense)
                    for (int x = 0; x < w; x++) {
                        uint64_t mask = probe_mask(chunk_id[x]);
                        chunk_block[x] = (set.table[probe_word(&set, chunk_id[x])] & mask) == mask && set.n ? 0 : -1;
                        if (chunk_block[x] == 0)
                            __builtin_prefetch(&lookup[2 * lookup_entry(chunk_id[x], lookup_bits)]);
                    }
                /* without the filter, each id's entry requested LOOKUP_AHEAD windows ahead of its probe:
                 * the chunk's entries requested at once were more than a core keeps in flight */
                for (int x = 0; x < w && x < LOOKUP_AHEAD && dense; x++)
                    __builtin_prefetch(&lookup[2 * lookup_entry(chunk_id[x], lookup_bits)]);
                for (int x = 0; x < w; x++) {
                    int64_t place = -1;
                    if (dense && x + LOOKUP_AHEAD < w)
                        __builtin_prefetch(&lookup[2 * lookup_entry(chunk_id[x + LOOKUP_AHEAD], lookup_bits)]);
                    Py_ssize_t slot = dense || chunk_block[x] == 0
                                          ? lookup_find(lookup, lookup_mask, lookup_bits, chunk_id[x], &place)
                                          : -1;
                    if (slot >= 0) {
                        if (hplace)
                            hplace[hits] = place;
                        at[hits] = chunk_at[x];
                        hslot[hits] = slot;
                        hflip[hits] = chunk_flip[x];
                        hid[hits++] = chunk_id[x];
                        found++;
                    }
                }
                dense = found >= 8 && 4 * found >= w; /* the next chunk is taken to be like this one */
                continue;
            }
            /* the windows the filter lets through: each one's block of ids found and fetched, then
             * all searched, so that the blocks' memory waits overlap (a viral read's windows nearly
             * all pass) */
            int passed = 0, by_line = line_first != NULL && dense;
            for (int x = 0; x < w; x++) {
                uint64_t mask = probe_mask(chunk_id[x]);
                chunk_block[x] = -1;
                if ((set.table[probe_word(&set, chunk_id[x])] & mask) == mask && set.n) {
                    chunk_block[x] = fence_in(&set, &buckets, chunk_id[x]);
                    passed++;
                    if (!by_line) /* the block's cache lines, all of them, at once */
                        for (int line = 0; line < FENCE; line += 8)
                            __builtin_prefetch(&set.ids[chunk_block[x] * FENCE + line]);
                }
            }
            dense = passed >= 8 && 4 * passed >= w; /* the next chunk is taken to be like this one */
            /* Where most windows pass (a viral read's), fetching every cache line of each one's
             * block is what the scan waits on: after a chunk like that, the blocks' line fences
             * are fetched, then the one line of ids they point to. Where few do (a human read's),
             * the blocks are fetched whole as the filter passes them, one wait rather than two.
             * The same slots either way. */
            for (int x = 0; x < w && by_line; x++)
                if (chunk_block[x] >= 0) {
                    __builtin_prefetch(&line_first[chunk_block[x] * (FENCE / LINE)]);
                    __builtin_prefetch(&line_first[chunk_block[x] * (FENCE / LINE)] + FENCE / LINE - 1);
                }
            if (by_line) /* which line of its block each id would be in; that line fetched */
                for (int x = 0; x < w; x++) {
                    if (chunk_block[x] < 0)
                        continue;
                    chunk_line[x] = line_in(&set, line_first, chunk_id[x], chunk_block[x]);
                    __builtin_prefetch(&set.ids[chunk_line[x] * LINE]);
                    __builtin_prefetch(&set.ids[chunk_line[x] * LINE] + LINE - 1);
                }
            for (int x = 0; x < w; x++) {
                Py_ssize_t slot = chunk_block[x] < 0 ? -1 : by_line ? search_line(&set, chunk_id[x], chunk_line[x])
                                                                    : search_block(&set, chunk_id[x], chunk_block[x]);
                if (slot >= 0) {
                    if (hplace)
                        hplace[hits] = -1;
                    at[hits] = chunk_at[x];
                    hslot[hits] = slot;
                    hflip[hits] = chunk_flip[x];
                    hid[hits++] = chunk_id[x];
                }
            }
        }
        start = end + 1;
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "seed_scan: read lengths beyond the codes");
    else
        result = PyLong_FromSsize_t(hits);
done:
    if (own_buckets)
        free(buckets.lo);
    if (given.obj)
        PyBuffer_Release(&given);
    if (lines.obj)
        PyBuffer_Release(&lines);
    if (lookup_b.obj)
        PyBuffer_Release(&lookup_b);
    if (place_b.obj)
        PyBuffer_Release(&place_b);
    PyBuffer_Release(&codes);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&table);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&fences);
    PyBuffer_Release(&hit_at);
    PyBuffer_Release(&hit_id);
    PyBuffer_Release(&hit_slot);
    PyBuffer_Release(&hit_flip);
    PyBuffer_Release(&clean);
    return result;
}

/* aa_scan(aa, pattern, offset, ends, reverse, m, table, bits, ids, fences, hit_at, hit_id, hit_slot, tested) -> hits
 *
 * aa uint8 (A,): the codons of one strand of m bases of joined reads, at every position (residues
 * of a frame 3 apart); pattern bytes (span,): 1 for a compared residue, 0 for a skipped one. The
 * seed at i reads aa[i], aa[i + 3], ..., aa[i + 3 (span - 1)]; it is tested where all of them are
 * amino acids (< 20), and its id is offset + the compared residues as base-20 digits, first most
 * significant. Each seed tested counts to its read's tested (int64 (n,), added to): the read
 * holding forward position i, or on the reverse strand (reverse = 1) m - i - 3 span, read r
 * holding positions ends[r - 1] .. ends[r] - 1 (ends int64 (n,): one past each read's
 * separator). Found seeds go to hit_at int64 / hit_id uint64 / hit_slot int64 (the id's place among
 * the sorted ids) in order; returns how many (the buffers hold one per position of aa at most). */
static PyObject *aa_scan(PyObject *self, PyObject *args) {
    Py_buffer aa, pattern, ends, table, ids, fences, hit_at, hit_id, hit_slot, tested;
    unsigned long long offset;
    int reverse, bits;
    Py_ssize_t m;
    if (!PyArg_ParseTuple(args, "y*y*Ky*iny*iy*y*w*w*w*w*", &aa, &pattern, &offset, &ends, &reverse, &m, &table,
                          &bits, &ids, &fences, &hit_at, &hit_id, &hit_slot, &tested))
        return NULL;
    PyObject *result = NULL;
    IdSet set;
    Py_ssize_t span = pattern.len, a = aa.len, n_reads = tested.len / 8, capacity = hit_at.len / 8;
    if (!id_set(&set, &table, bits, &ids, &fences))
        goto done;
    if (span < 1 || span > 64 || ends.len != tested.len || hit_id.len != hit_at.len || hit_slot.len != hit_at.len ||
        capacity < a || a > m ||
        n_reads < 1) {
        PyErr_SetString(PyExc_ValueError, "aa_scan: arguments of the wrong size");
        goto done;
    }
    const uint8_t *r = (const uint8_t *)aa.buf, *p = (const uint8_t *)pattern.buf;
    const int64_t *end = (const int64_t *)ends.buf;
    int64_t *at = (int64_t *)hit_at.buf, *tst = (int64_t *)tested.buf, *hslot = (int64_t *)hit_slot.buf;
    uint64_t *hid = (uint64_t *)hit_id.buf;
    int compared[64], weight = 0;
    for (Py_ssize_t j = 0; j < span; j++)
        if (p[j])
            compared[weight++] = (int)j;
    Py_ssize_t hits = 0, bad = 0, read = reverse ? n_reads - 1 : 0;
    Py_BEGIN_ALLOW_THREADS
    uint64_t chunk_id[CHUNK];
    Py_ssize_t chunk_at[CHUNK];
    /* good[f]: residues ending at the latest position of frame f that are amino acids, in a row
     * within the frame; the seed at i = q - 3 (span - 1) is tested when it reaches span */
    Py_ssize_t good[3] = {0, 0, 0}, q = 0, back = 3 * (span - 1);
    int f = 0;
    while (q < a && !bad) {
        int w = 0;
        for (; q < a && w < CHUNK; q++, f = f == 2 ? 0 : f + 1) {
            good[f] = r[q] < 20 ? good[f] + 1 : 0;
            if (good[f] < span)
                continue;
            Py_ssize_t i = q - back, first = reverse ? m - i - 3 * span : i;
            if (first < 0 || first >= m) {
                bad = 1;
                break;
            }
            if (reverse)
                while (read > 0 && end[read - 1] > first)
                    read--;
            else
                while (read < n_reads - 1 && end[read] <= first)
                    read++;
            tst[read]++;
            uint64_t id = 0;
            for (int j = 0; j < weight; j++)
                id = id * 20 + r[i + 3 * compared[j]];
            id += offset;
            __builtin_prefetch(&set.table[probe_word(&set, id)]);
            chunk_id[w] = id;
            chunk_at[w++] = i;
        }
        for (int x = 0; x < w; x++) {
            Py_ssize_t slot = find(&set, chunk_id[x]);
            if (slot >= 0) {
                at[hits] = chunk_at[x];
                hslot[hits] = slot;
                hid[hits++] = chunk_id[x];
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "aa_scan: a position outside the reads");
    else
        result = PyLong_FromSsize_t(hits);
done:
    PyBuffer_Release(&aa);
    PyBuffer_Release(&pattern);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&table);
    PyBuffer_Release(&ids);
    PyBuffer_Release(&fences);
    PyBuffer_Release(&hit_at);
    PyBuffer_Release(&hit_id);
    PyBuffer_Release(&hit_slot);
    PyBuffer_Release(&tested);
    return result;
}

/* share_place(query, at, slot, compared, width, pattern, first, second, letters, start, places, wide, stride,
 *             misses, flip, span, outside, first_places, check_places, shared[, given[, rows, counts]])
 *
 * genointerp.viral.evidence.places.SeedPlaces.share_a_place, pair by pair: whether matched seeds
 * first[j] and second[j] lie on one diagonal of the references. query uint8 (M,): the read letters;
 * at int64 (h,): each seed's window start in query; slot int64 (h,): its id's row of the places
 * table (-1: none); compared int64 (P, width): each seed pattern's compared letters' places in
 * its window, `stride` apart in query; pattern int64 (h,) or empty (all pattern 0): each seed's;
 * letters uint8 (R,): the references'; start, places: the table, int32 or (wide) int64;
 * flip uint8 (h,) or empty: the window is the reverse complement of its places, which then
 * lie at R - place - span; outside: the letter beyond the references. Up to first_places, then
 * check_places places of the seed of fewer places are tried, spread evenly, then check_places of
 * the other's; a place holding all but `misses` of the other seed's compared letters on the
 * diagonal settles the pair. shared uint8 (j,) gets 1 or 0. given int64 (h,) or empty: each seed's first
 * place where the look-up gave it (-1: not). rows, counts int64 (h,) (where given): each matched seed's
 * row of the table as this check reads it, its first entry and its number of places (0 for no row,
 * -1 for a row outside the table), so that the typing on the diagonals (diagonal_edits), which
 * visits every place of every matched seed, need not fetch the table's rows again. */
static inline int64_t table_at(const void *array, int wide, int64_t i) {
    return wide ? ((const int64_t *)array)[i] : ((const int32_t *)array)[i];
}

/* How far ahead memory is fetched: each matched seed's table row SEED_AHEAD seeds ahead of the
 * one read, a pair's anchor's first place PLACE_AHEAD pairs ahead, the letters that place puts the
 * other seed's first compared letter on LETTERS_AHEAD pairs ahead (its place has arrived by then).
 * A rolling distance keeps a steady number of fetches in flight. */
#define SEED_AHEAD 32
#define PLACE_AHEAD 8
#define LETTERS_AHEAD 3

/* The seed of pair (a, b) whose first place is tried first: the one of fewer places (a on a tie),
 * counts[] its places (-1: a row outside the table); -1 where neither can anchor a try. */
static inline int64_t anchor_of(int64_t a, int64_t b, const int64_t *counts) {
    int64_t s = counts[a] <= counts[b] ? a : b;
    return counts[a] < 0 || counts[b] < 0 || counts[s] <= 0 ? -1 : s;
}

#if defined(__SSE2__)
#define TRIES 4                 /* LETTERS_AHEAD + 1 pairs' first tries, a power of two */
#define NO_TRY INT64_MIN        /* a pair whose first try is not made */

/* share_place's first try of pair (s0, s1) in its quick form (stride 1, no pattern, the look-up's
 * first places `given`): the diagonal its anchor's first place puts the other seed's window on,
 * where the try is made (its 32 letters and the window's all there), else NO_TRY (-1 counts: a
 * row outside the table, which the pair's own step reports); the letters of the diagonal (of the
 * table's first place where the look-up gave none) requested. Worked out once, LETTERS_AHEAD
 * pairs ahead, where the request and the try each worked it out: a fifth of share_place's
 * instructions on all-viral reads. */
static inline int64_t first_try(int64_t s0, int64_t s1, Py_ssize_t h, const int64_t *counts, const int64_t *given,
                                const int64_t *row, const void *places, int wide, const uint8_t *flip, Py_ssize_t r,
                                Py_ssize_t span, const int64_t *at, Py_ssize_t m, const uint8_t *letters,
                                int64_t compared_first) {
    if (s0 < 0 || s0 >= h || s1 < 0 || s1 >= h || counts[s0] < 0 || counts[s1] < 0)
        return NO_TRY;
    int64_t a = counts[s0] <= counts[s1] ? s0 : s1, o = a == s0 ? s1 : s0;
    if (counts[a] <= 0)
        return NO_TRY;
    int64_t place = given[a] >= 0 ? given[a] : table_at(places, wide, row[a]);
    place = flip && flip[a] ? r - place - span : place;
    int64_t d = place + at[o] - at[a];
    if (d + compared_first >= 0 && d + compared_first < r)
        __builtin_prefetch(letters + d + compared_first);
    return given[a] >= 0 && d >= 0 && d + 32 <= r && at[o] >= 0 && at[o] + 32 <= m ? d : NO_TRY;
}

/* whether at most `misses` of the letters of mask (bits of the first 32) differ between mine and
 * theirs (32 letters each, all readable): compared at once, and as many differing bits cleared as
 * may differ, where a popcount of the equal ones (a software one: portable builds have no popcnt)
 * was a tenth of share_place */
static inline int holds_32(const uint8_t *mine, const uint8_t *theirs, uint32_t mask, int misses) {
    __m128i lo = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)mine), _mm_loadu_si128((const __m128i *)theirs));
    __m128i hi = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(mine + 16)),
                                _mm_loadu_si128((const __m128i *)(theirs + 16)));
    uint32_t equal = (uint32_t)_mm_movemask_epi8(lo) | ((uint32_t)_mm_movemask_epi8(hi) << 16);
    uint32_t differ = ~equal & mask;
    for (int k = 0; k < misses && differ; k++)
        differ &= differ - 1;
    return !differ && misses >= 0;
}
#endif

static PyObject *share_place(PyObject *self, PyObject *args) {
    Py_buffer query, at_b, slot_b, compared_b, pattern_b, first_b, second_b, letters_b, start_b, places_b, flip_b,
        shared_b, given_b = {0}, rows_b = {0}, counts_b = {0}, opens_b = {0}, draws_b = {0};
    int wide, stride, misses, outside, first_places, check_places;
    Py_ssize_t span, width;
    if (!PyArg_ParseTuple(args, "y*y*y*y*ny*y*y*y*y*y*iiiy*niiiw*|y*w*w*y*w*", &query, &at_b, &slot_b, &compared_b,
                          &width, &pattern_b, &first_b, &second_b, &letters_b, &start_b, &places_b, &wide, &stride,
                          &misses, &flip_b, &span, &outside, &first_places, &check_places, &shared_b, &given_b,
                          &rows_b, &counts_b, &opens_b, &draws_b))
        return NULL;
    PyObject *result = NULL;
    int64_t *row = NULL, *counts = NULL, *reach = NULL, *joined = NULL;
    uint32_t *bitmask = NULL;
    uint8_t *own_shared = NULL;
    Py_ssize_t h = at_b.len / 8, pairs = first_b.len / 8, n_patterns = width > 0 ? compared_b.len / 8 / width : 0;
    Py_ssize_t item = wide ? 8 : 4, n_keys = start_b.len / item - 1, n_places = places_b.len / item;
    /* with opens (uint8 (h,): the stretches, as SeedPlaces.draws takes them) and draws (int64, one
     * per stretch): the pairs are each seed and the one before it in its stretch (first and second
     * empty), and draws get SeedPlaces.draws' counts, 1 plus the stretch's pairs apart (shared
     * empty), where numpy made the pairs and counted them in a dozen passes over the seeds */
    const uint8_t *opens = draws_b.obj ? (const uint8_t *)opens_b.buf : NULL;
    Py_ssize_t stretches = 0;
    for (Py_ssize_t x = 0; opens && x < h; x++) {
        stretches += opens[x] != 0;
        pairs += opens[x] == 0;
    }
    if (slot_b.len != at_b.len || width < 1 || n_patterns < 1 || compared_b.len != 8 * n_patterns * width ||
        (pattern_b.len && pattern_b.len != at_b.len) || second_b.len != first_b.len ||
        (opens ? (first_b.len || shared_b.len || opens_b.len != h || draws_b.len != 8 * stretches || (h && !opens[0]))
               : shared_b.len != pairs) ||
        (flip_b.len && flip_b.len != h) || stride < 1 || n_keys < 0 || (given_b.buf && given_b.len && given_b.len != at_b.len) ||
        (rows_b.obj && (rows_b.len != at_b.len || counts_b.len != at_b.len))) {
        PyErr_SetString(PyExc_ValueError, "share_place: arguments of the wrong size");
        goto done;
    }
    if (opens) {
        joined = malloc(sizeof(int64_t) * 2 * (pairs ? pairs : 1));
        own_shared = malloc(pairs ? pairs : 1);
        if (!joined || !own_shared) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t x = 1, j = 0; x < h; x++)
            if (!opens[x]) {
                joined[j] = x - 1;
                joined[pairs + j++] = x;
            }
    }
    /* each matched seed's first place where the look-up gave it (seed_scan's hit_place; -1: not),
     * else read from the table */
    const int64_t *given = given_b.buf && given_b.len ? (const int64_t *)given_b.buf : NULL;
    const uint8_t *q = (const uint8_t *)query.buf, *letters = (const uint8_t *)letters_b.buf;
    const uint8_t *flip = flip_b.len ? (const uint8_t *)flip_b.buf : NULL;
    const int64_t *at = (const int64_t *)at_b.buf, *slot = (const int64_t *)slot_b.buf;
    const int64_t *compared = (const int64_t *)compared_b.buf;
    const int64_t *pattern = pattern_b.len ? (const int64_t *)pattern_b.buf : NULL;
    const int64_t *first = opens ? joined : (const int64_t *)first_b.buf;
    const int64_t *second = opens ? joined + pairs : (const int64_t *)second_b.buf;
    const void *start = start_b.buf, *places = places_b.buf;
    uint8_t *shared = opens ? own_shared : (uint8_t *)shared_b.buf;
    Py_ssize_t m = query.len, r = letters_b.len, bad = 0;
    row = rows_b.obj ? (int64_t *)rows_b.buf : malloc(sizeof(int64_t) * (h ? h : 1));
    counts = rows_b.obj ? (int64_t *)counts_b.buf : malloc(sizeof(int64_t) * (h ? h : 1));
    reach = malloc(sizeof(int64_t) * 2 * n_patterns);
    if (!row || !counts || !reach) {
        PyErr_NoMemory();
        goto done;
    }
    /* each pattern's compared letters as bits of the window's first 32 letters, where all lie there
     * and the read's letters are bases (stride 1); 0 where not */
    bitmask = calloc(n_patterns, sizeof(uint32_t));
    if (!bitmask) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t p = 0; p < n_patterns && stride == 1; p++) {
        uint32_t bits_of = 0;
        int fits = 1;
        for (Py_ssize_t w = 0; w < width && fits; w++) {
            int64_t c = compared[p * width + w];
            fits = c >= 0 && c < 32 && !((bits_of >> c) & 1); /* distinct, so that the bits count them */
            bits_of |= fits ? (uint32_t)1 << c : 0;
        }
        bitmask[p] = fits ? bits_of : 0;
    }
    for (Py_ssize_t p = 0; p < n_patterns; p++) { /* each pattern's nearest and farthest compared letter */
        reach[2 * p] = reach[2 * p + 1] = compared[p * width];
        for (Py_ssize_t w = 1; w < width; w++) {
            int64_t c = compared[p * width + w];
            reach[2 * p] = c < reach[2 * p] ? c : reach[2 * p];
            reach[2 * p + 1] = c > reach[2 * p + 1] ? c : reach[2 * p + 1];
        }
    }
    /* seeds of bases with one pattern whose compared letters lie in 32, and the look-up's first
     * places: each pair's first try made on its own before the passes (which make it again where it
     * fails), without their steps for patterns, strides and places to fetch */
#if defined(__SSE2__)
    int quick = stride == 1 && !pattern && bitmask[0] && given && first_places > 0;
    int64_t tries[TRIES]; /* quick: the first tries' diagonals of the pairs from j on (first_try) */
#endif
    const int most[3] = {first_places, check_places, check_places};
    Py_BEGIN_ALLOW_THREADS
    /* every matched seed's row of the table read once (a stretch's seeds are in two pairs each):
     * its first entry and its number of places; 0 places for no row, -1 for a row outside the table
     * or places outside theirs (an error where a pair uses it) */
    for (Py_ssize_t x = 0; x < h; x++) {
        Py_ssize_t y = x + SEED_AHEAD;
        if (y < h && slot[y] >= 0 && slot[y] < n_keys)
            __builtin_prefetch((const char *)start + item * slot[y]);
        row[x] = 0;
        counts[x] = slot[x] < 0 ? 0 : -1;
        if (slot[x] >= 0 && slot[x] < n_keys) {
            row[x] = table_at(start, wide, slot[x]);
            counts[x] = table_at(start, wide, slot[x] + 1) - row[x];
            if (row[x] < 0 || counts[x] < 0 || row[x] + counts[x] > n_places)
                row[x] = 0, counts[x] = -1;
        }
    }
    for (Py_ssize_t j = 0; j < pairs && !bad; j++) {
        for (Py_ssize_t k = j ? j + PLACE_AHEAD : 0; k <= j + PLACE_AHEAD && k < pairs; k++) {
            int64_t a = first[k], b = second[k];
            if (a >= 0 && a < h && b >= 0 && b < h && (a = anchor_of(a, b, counts)) >= 0 && !(given && given[a] >= 0))
                __builtin_prefetch((const char *)places + item * row[a]);
        }
#if defined(__SSE2__)
        if (quick) /* the pair's first try worked out here, where its letters are requested: tried below */
            for (Py_ssize_t k = j ? j + LETTERS_AHEAD : 0; k <= j + LETTERS_AHEAD && k < pairs; k++)
                tries[k & (TRIES - 1)] = first_try(first[k], second[k], h, counts, given, row, places, wide, flip, r,
                                                   span, at, m, letters, compared[0]);
        else
#endif
        for (Py_ssize_t k = j ? j + LETTERS_AHEAD : 0; k <= j + LETTERS_AHEAD && k < pairs; k++) {
            int64_t a = first[k], o = second[k];
            if (a < 0 || a >= h || o < 0 || o >= h || (a = anchor_of(a, o, counts)) < 0)
                continue;
            o = a == first[k] ? second[k] : first[k];
            if (pattern && (pattern[o] < 0 || pattern[o] >= n_patterns))
                continue;
            int64_t place = given && given[a] >= 0 ? given[a] : table_at(places, wide, row[a]);
            if (flip && flip[a])
                place = r - place - span;
            int64_t where = place + (stride == 1 ? at[o] - at[a] : (at[o] - at[a]) / stride) +
                            compared[(pattern ? pattern[o] : 0) * width];
            if (where >= 0 && where < r)
                __builtin_prefetch(letters + where);
        }
        int64_t s[2] = {first[j], second[j]};
        for (int x = 0; x < 2; x++)
            if (s[x] < 0 || s[x] >= h || counts[s[x]] < 0 ||
                (pattern && (pattern[s[x]] < 0 || pattern[s[x]] >= n_patterns))) {
                bad = 1;
                break;
            }
        if (bad)
            break;
        int anchor = counts[s[0]] <= counts[s[1]] ? 0 : 1, found = 0;
#if defined(__SSE2__)
        if (quick) { /* the first try alone, as the passes below make it first: most pairs it settles */
            int64_t d = tries[j & (TRIES - 1)];
            found = d != NO_TRY && holds_32(q + at[s[1 - anchor]], letters + d, bitmask[0], misses);
        }
#endif
        for (int pass = 0; pass < 3 && !found; pass++) {
            int from = pass == 2 ? 1 - anchor : anchor;
            int64_t a = s[from], o = s[1 - from], c = counts[a], take = c < most[pass] ? c : most[pass];
            int64_t p = pattern ? pattern[o] : 0;
            const int64_t *off = compared + p * width;
            int64_t shift = stride == 1 ? at[o] - at[a] : (at[o] - at[a]) / stride;
            /* the other seed's compared letters: where all lie in the read, and all face letters for
             * the place tried, no bounds to check letter by letter */
            int in_read = at[o] + stride * reach[2 * p] >= 0 && at[o] + stride * reach[2 * p + 1] < m;
            for (int64_t nth = 0; nth < take && !found; nth++) {
                int64_t place = !nth && given && given[a] >= 0 ? given[a] : table_at(places, wide, row[a] + (nth ? nth * c / take : 0));
                int64_t same = 0;
                if (flip && flip[a])
                    place = r - place - span;
                int64_t d = place + shift;
#if defined(__SSE2__)
                if (bitmask && bitmask[p] && d >= 0 && d + 32 <= r && at[o] >= 0 && at[o] + 32 <= m)
                    /* bases (stride 1), every compared letter within 32 of the window's start */
                    same = holds_32(q + at[o], letters + d, bitmask[p], misses) ? width : -1;
                else
#endif
                if (in_read && d + reach[2 * p] >= 0 && d + reach[2 * p + 1] < r) {
                    const uint8_t *mine = q + at[o], *theirs = letters + d;
                    for (Py_ssize_t w = 0; w < width; w++)
                        same += mine[stride * off[w]] == theirs[off[w]];
                } else
                    for (Py_ssize_t w = 0; w < width; w++) {
                        int64_t where = d + off[w], at_read = at[o] + stride * off[w];
                        int letter = where >= 0 && where < r ? letters[where] : outside;
                        same += at_read >= 0 && at_read < m && q[at_read] == letter;
                    }
                found = same >= width - misses;
            }
        }
        shared[j] = (uint8_t)found;
    }
    if (opens && !bad) { /* each stretch's draws: 1, plus its pairs apart */
        int64_t *draws = (int64_t *)draws_b.buf;
        for (Py_ssize_t x = 0, s = -1, j = 0; x < h; x++)
            if (opens[x])
                draws[++s] = 1;
            else
                draws[s] += !shared[j++];
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "share_place: a seed or place outside the arrays");
    else {
        Py_INCREF(Py_None);
        result = Py_None;
    }
done:
    if (!rows_b.obj) {
        free(row);
        free(counts);
    }
    free(joined);
    free(own_shared);
    if (opens_b.obj)
        PyBuffer_Release(&opens_b);
    if (draws_b.obj)
        PyBuffer_Release(&draws_b);
    free(reach);
    free(bitmask);
    PyBuffer_Release(&query);
    PyBuffer_Release(&at_b);
    PyBuffer_Release(&slot_b);
    PyBuffer_Release(&compared_b);
    PyBuffer_Release(&pattern_b);
    PyBuffer_Release(&first_b);
    PyBuffer_Release(&second_b);
    PyBuffer_Release(&letters_b);
    PyBuffer_Release(&start_b);
    PyBuffer_Release(&places_b);
    PyBuffer_Release(&flip_b);
    PyBuffer_Release(&shared_b);
    if (given_b.obj)
        PyBuffer_Release(&given_b);
    if (rows_b.obj)
        PyBuffer_Release(&rows_b);
    if (counts_b.obj)
        PyBuffer_Release(&counts_b);
    return result;
}

/* diagonal_edits(codes, starts, lengths, first, hit_at, hit_slot, hit_flip, letters, start, places, wide, span,
 *                max_visits, margin, ends, out_read, out_diag, out_edits, out_span, out_aligned, best
 *                [, contig_start, contig_length, wrap, forward, around]) -> found
 *
 * The placements of reads on the diagonals their matched seeds lie on, with at most one gap
 * (genointerp.viral.typing.diagonals holds the definition in numpy). Read i (codes[starts[i]:
 * starts[i] + lengths[i]]) owns the matched windows first[i] .. first[i + 1] - 1 (hit_at int64: the
 * window's start in codes; hit_slot int64: its seed's row of the places table, -1 none; hit_flip
 * uint8 or empty: the window is the reverse complement of its seed's places, which then lie at
 * R - place - span in the read's direction). Every place of every one of its seeds gives a diagonal
 * d: the read's base j faces letters[d + j]. Mismatches count a base facing no letter, or either
 * being an unknown code (> 3).
 *
 * Each distinct diagonal is an ungapped placement: its mismatches over the whole read. With the
 * read's fewest of those, top, and bound = top + margin, one-gap placements are tried: the read's
 * first part on diagonal a and the rest on diagonal b, |b - a| <= bound (b > a: the genome holds
 * b - a bases the read lacks; b < a: the read holds a - b bases the genome lacks), costing their
 * mismatches plus |b - a|, at the best split. They are tried for every pair of its diagonals that
 * close, and for each diagonal whose middle (all but min(ends, length / 4) bases at each end) is
 * within bound but with at least two mismatches in its ends (an indel near an end, whose short
 * side matches no seed), against every diagonal that close. Placements within margin of the
 * read's best go out, and every ungapped one that faces an unknown letter or none (past a contig's
 * end: the caller aligns such a read) (ungapped ones in order of first sight, then gapped ones as
 * tried): out_read,
 * out_diag (the first part's diagonal), out_edits, out_span (letters the placement covers) and
 * out_aligned (read bases aligned), int64 (capacity each). best int64 (n,) gets each read's fewest
 * edits, -1 where it had no seed place, -2 where its seeds have more than max_visits places in all,
 * -3 where the outputs were full (the caller aligns those reads).
 *
 * Around the origin (a circular index: contig_start, contig_length int64 (c,), each contig's first
 * letter and length in the forward half of the letters, which hold forward letters, the reverse
 * complement after them; each contig followed by its first `wrap` letters again and an N): a read
 * with a diagonal that leaves one contig's letters (across a genome's origin beyond the wrap) has
 * each diagonal taken modulo the length of the genome its first seed place lies in, on that strand
 * (the first of equal ones kept, in order), and every placement's letters read around that genome;
 * its diagonals out are so taken, gapped ones' first too, and around[i] (uint8 (n,)) is 1. Other
 * reads' placements are as without the contigs. */
/* x (n,) ascending (distinct values), inline; tmp: room for 2 n. Up to RANKED values that fit in
 * 32 bits (a read's diagonals, for any panel under 2^31 letters) each go to their rank, the count
 * of values below it, counted over a 32-bit copy four or eight at a time (rank_place) with no
 * branch to mispredict (a read's few dozen diagonals come in no order, and qsort's
 * calls of compare_int64, then a Shell sort's mispredicted steps, were a tenth of diagonal_edits'
 * time); more (reads of seeds many genomes share: hundreds) by a radix sort of their distances
 * from the least, eight bits a pass, as many passes as the largest needs. */
#define RANKED 96
#define RANK_PAD 8 /* the 32-bit copy padded with INT32_MAX to a multiple of this (no value lies below it) */

/* x[the count of keys below key[i]] = key[i], for the n distinct keys (padded as RANK_PAD says): plain
 * C, SSE2 four keys a step or AVX2 eight (chosen with count_lanes, lanes_choose). gcc left the
 * plain loop unvectorised inside diagonal_edits, one compare a step: an eighth of its time on
 * all-viral reads. */
static void rank_place_c(const int32_t *key, int64_t n, int64_t *x) {
    for (int64_t i = 0; i < n; i++) {
        int32_t v = key[i], rank = 0;
        for (int64_t j = 0; j < n; j++)
            rank += key[j] < v;
        x[rank] = v;
    }
}

#if defined(__SSE2__)
static void rank_place_sse2(const int32_t *key, int64_t n, int64_t *x) {
    int64_t padded = (n + 3) & ~(int64_t)3;
    for (int64_t i = 0; i < n; i++) {
        __m128i v = _mm_set1_epi32(key[i]), below = _mm_setzero_si128();
        for (int64_t j = 0; j < padded; j += 4) /* a compare's -1 for each key below v, subtracted */
            below = _mm_sub_epi32(below, _mm_cmpgt_epi32(v, _mm_loadu_si128((const __m128i *)(key + j))));
        below = _mm_add_epi32(below, _mm_shuffle_epi32(below, 0x4E));
        below = _mm_add_epi32(below, _mm_shuffle_epi32(below, 0xB1));
        x[_mm_cvtsi128_si32(below)] = key[i];
    }
}
#endif

static void (*rank_place)(const int32_t *, int64_t, int64_t *) = rank_place_c; /* lanes_choose sets it */

static void sort_int64(int64_t *x, int64_t n, int64_t *tmp) {
    int64_t least = n ? x[0] : 0, most = least;
    if (n < 2)
        return;
    for (int64_t i = 1; i < n; i++) {
        least = x[i] < least ? x[i] : least;
        most = x[i] > most ? x[i] : most;
    }
    if (n <= RANKED && least >= INT32_MIN && most <= INT32_MAX) {
        int32_t *key = (int32_t *)tmp; /* 4 n keys' room: n + RANK_PAD - 1 from n = 2 on */
        int64_t padded = (n + RANK_PAD - 1) / RANK_PAD * RANK_PAD;
        for (int64_t i = 0; i < n; i++)
            key[i] = (int32_t)x[i];
        for (int64_t i = n; i < padded; i++)
            key[i] = INT32_MAX;
        rank_place(key, n, x);
        return;
    }
    uint64_t *from = (uint64_t *)tmp, *to = from + n, top = (uint64_t)most - (uint64_t)least;
    for (int64_t i = 0; i < n; i++)
        from[i] = (uint64_t)x[i] - (uint64_t)least;
    for (int shift = 0; shift < 64 && (top >> shift); shift += 8) {
        int64_t count[257] = {0};
        for (int64_t i = 0; i < n; i++)
            count[((from[i] >> shift) & 255) + 1]++;
        for (int b = 0; b < 256; b++)
            count[b + 1] += count[b];
        for (int64_t i = 0; i < n; i++)
            to[count[(from[i] >> shift) & 255]++] = from[i];
        uint64_t *swap = from;
        from = to, to = swap;
    }
    for (int64_t i = 0; i < n; i++)
        x[i] = (int64_t)((uint64_t)least + from[i]);
}

#define VISIT_AHEAD 8 /* windows ahead whose places are requested (a power of two) */

/* A circular index's contigs in the places' letters (diagonal_edits' contig_start, contig_length,
 * wrap, forward); n = 0: none given (a linear index). */
typedef struct {
    const int64_t *start, *length;
    Py_ssize_t n;
    int64_t wrap, forward;
} Contigs;

/* the last contig whose first forward letter is <= x, -1 where none is */
static Py_ssize_t contig_at(const Contigs *ct, int64_t x) {
    Py_ssize_t lo = -1, hi = ct->n;
    while (hi - lo > 1) {
        Py_ssize_t mid = lo + ((hi - lo) >> 1);
        if (ct->start[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* whether an ungapped placement of len letters on diagonal d lies whole in one contig's letters
 * (its wrap included), on either strand (ContigSpans.holds) */
static int contig_holds(const Contigs *ct, int64_t d, int64_t len) {
    int64_t f = ct->forward;
    if (d < 0 || d + len > 2 * f || (d < f && f < d + len))
        return 0;
    int64_t lo = d < f ? d : 2 * f - d - len;
    Py_ssize_t c = contig_at(ct, lo);
    return c >= 0 && lo + len <= ct->start[c] + ct->length[c] + ct->wrap;
}

/* *base, *length: the letters of the genome whose letters (wrap included) hold letter `place`, on
 * its strand (ContigSpans.frame) */
static void contig_frame(const Contigs *ct, int64_t place, int64_t *base, int64_t *length) {
    int64_t f = ct->forward;
    Py_ssize_t c = contig_at(ct, place < f ? place : 2 * f - 1 - place);
    c = c < 0 ? 0 : c;
    *length = ct->length[c];
    *base = place < f ? ct->start[c] : 2 * f - ct->start[c] - ct->length[c];
}

/* d taken into the genome of letters base .. base + length - 1 */
static inline int64_t around_of(int64_t d, int64_t base, int64_t length) {
    return base + (((d - base) % length) + length) % length;
}

/* ring (len,): the letters a read of len bases faces on diagonal d, around that genome */
static void around_letters(const uint8_t *letters, int64_t d, int64_t len, int64_t base, int64_t length,
                           uint8_t *ring) {
    int64_t at = around_of(d, base, length) - base;
    for (int64_t j = 0; j < len; j++) {
        ring[j] = letters[base + at];
        if (++at == length)
            at = 0;
    }
}
#define DIAG_SLOTS 8192 /* a read's distinct diagonals, open addressing; more than max_visits never fit */
#define GAPPED_MAX 4096 /* one-gap placements kept per read */

static inline int mismatch(const uint8_t *q, const uint8_t *letters, Py_ssize_t r, int64_t d, int64_t j) {
    int64_t where = d + j;
    return q[j] > 3 || where < 0 || where >= r || letters[where] != q[j];
}

/* prefix[s], s = 0 .. len: the mismatches of read q's bases [0, s) on diagonal d (each diagonal's
 * once, where every one-gap placement with it read them again for each other diagonal it was tried
 * with). 32-bit counts (a read is under 2^30 bases: diagonal_edits checks), so that one_gap's
 * search over the splits runs four splits a step in SSE2, where 64-bit ones ran one by one. */
static void mismatch_prefix(const uint8_t *q, int64_t len, const uint8_t *letters, Py_ssize_t r, int64_t d,
                            int32_t *prefix) {
    prefix[0] = 0;
    if (d >= 0 && d + len <= r) {
        const uint8_t *l = letters + d;
        int64_t j = 0;
#if defined(__SSE2__)
        /* 16 bases a step: their mismatches (0 or 1 a byte) summed within the step by shifted adds
         * (at most 16 a byte), widened to 32 bits and added to the count before the step */
        const __m128i four = _mm_set1_epi8(4), one = _mm_set1_epi8(1), zero = _mm_setzero_si128();
        int32_t before = 0;
        for (; j + 16 <= len; j += 16) {
            __m128i a = _mm_loadu_si128((const __m128i *)(l + j)), b = _mm_loadu_si128((const __m128i *)(q + j));
            __m128i unknown = _mm_cmpeq_epi8(_mm_max_epu8(b, four), b); /* q[j] > 3 */
            __m128i x = _mm_and_si128(_mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(a, b), _mm_set1_epi8(-1)), unknown), one);
            x = _mm_add_epi8(x, _mm_slli_si128(x, 1));
            x = _mm_add_epi8(x, _mm_slli_si128(x, 2));
            x = _mm_add_epi8(x, _mm_slli_si128(x, 4));
            x = _mm_add_epi8(x, _mm_slli_si128(x, 8));
            __m128i low = _mm_unpacklo_epi8(x, zero), high = _mm_unpackhi_epi8(x, zero), base = _mm_set1_epi32(before);
            _mm_storeu_si128((__m128i *)(prefix + j + 1), _mm_add_epi32(_mm_unpacklo_epi16(low, zero), base));
            _mm_storeu_si128((__m128i *)(prefix + j + 5), _mm_add_epi32(_mm_unpackhi_epi16(low, zero), base));
            _mm_storeu_si128((__m128i *)(prefix + j + 9), _mm_add_epi32(_mm_unpacklo_epi16(high, zero), base));
            _mm_storeu_si128((__m128i *)(prefix + j + 13), _mm_add_epi32(_mm_unpackhi_epi16(high, zero), base));
            before = prefix[j + 16];
        }
#endif
        for (; j < len; j++)
            prefix[j + 1] = prefix[j] + ((q[j] > 3) | (l[j] != q[j]));
    } else
        for (int64_t j = 0; j < len; j++)
            prefix[j + 1] = prefix[j] + mismatch(q, letters, r, d, j);
}

/* mismatch_prefix on diagonal d, around the genome base .. base + length - 1 where length > 0 (ring:
 * room for len letters) */
static void prefix_on(const uint8_t *q, int64_t len, const uint8_t *letters, Py_ssize_t r, int64_t d,
                      int64_t base, int64_t length, uint8_t *ring, int32_t *prefix) {
    if (length <= 0) {
        mismatch_prefix(q, len, letters, r, d, prefix);
        return;
    }
    around_letters(letters, d, len, base, length, ring);
    mismatch_prefix(q, len, ring, len, 0, prefix);
}

static int32_t (*least_difference)(const int32_t *, const int32_t *, int64_t, int64_t); /* below */

/* the fewest edits of a read of len bases with bases [0, s) on diagonal a and the rest on diagonal
 * b, over 1 <= s (see above), from each diagonal's mismatch_prefix (pa, pb); *span_out and
 * *aligned_out get the placement's letters and read bases */
static int64_t one_gap(int64_t len, int64_t a, int64_t b, const int32_t *pa, const int32_t *pb, int64_t *span_out,
                       int64_t *aligned_out) {
    int64_t g = b > a ? b - a : a - b, skip = b > a ? 0 : g; /* read bases the genome lacks */
    if (len - skip < 2)
        return INT64_MAX;
    /* bases [0, s) on a, bases s + skip .. on b: pa[s] + pb[len] - pb[s + skip] edits, the
     * fewest over 1 <= s < len - skip (at least one split) the fewest of pa[s] - pb[s + skip],
     * plus pb[len] */
    int32_t top = least_difference(pa, pb + skip, 1, len - skip);
    *span_out = b + len - a;
    *aligned_out = len - skip;
    return (int64_t)top + pb[len] + g;
}

/* one-gap placements of a read of len bases from diagonal d to diagonal e and from e to d (pd, pe:
 * their mismatch_prefix), those within bound appended to ga (first diagonal), ge (edits), gs (span),
 * gl (aligned) from n on (up to GAPPED_MAX); returns the new count */
static int64_t both_ways(int64_t len, int64_t d, int64_t e, const int32_t *pd, const int32_t *pe, int64_t bound,
                         int64_t *ga, int64_t *ge, int64_t *gs, int64_t *gl, int64_t n) {
    for (int side = 0; side < 2 && n < GAPPED_MAX; side++) {
        int64_t a = side ? e : d, b = side ? d : e, span = 0, aligned = 0;
        int64_t edits = one_gap(len, a, b, side ? pe : pd, side ? pd : pe, &span, &aligned);
        if (edits <= bound) {
            ga[n] = a;
            ge[n] = edits;
            gs[n] = span;
            gl[n++] = aligned;
        }
    }
    return n;
}

/* Diagonals ahead whose letters are requested while one is counted: all of a read's at once (47 on
 * average for an all-HPV read, three lines each) were more than a core keeps in flight, and the
 * counts waited on the first line of nearly every diagonal. */
#define LETTERS_LEAD 6

/* the lines of letters a read of len bases faces on diagonal d, requested */
static inline void prefetch_span(const uint8_t *letters, Py_ssize_t r, int64_t d, int64_t len) {
    int64_t lo = d < 0 ? 0 : d, hi = d + len < r ? d + len : r;
    for (int64_t j = lo & ~(int64_t)63; j < hi; j += 64)
        __builtin_prefetch(letters + j);
}

/* *lo, *hi: the places of a seed's row `slot` of the table (none for -1), the first of them
 * requested; 0 where the row or its places lie outside the table */
static inline int visit_row(const void *start, const void *places, int wide, Py_ssize_t item, Py_ssize_t n_places,
                            int64_t slot, int64_t *lo, int64_t *hi) {
    *lo = *hi = 0;
    if (slot < 0)
        return 1;
    int64_t a = table_at(start, wide, slot), b = table_at(start, wide, slot + 1);
    if (a < 0 || b > n_places || a > b)
        return 0;
    *lo = a;
    *hi = b;
    __builtin_prefetch((const char *)places + item * a);
    return 1;
}

/* A read laid out for counting its mismatches on a diagonal many bases at a time (count_lanes), each
 * array padded with zeros to `padded` bytes, a multiple of LANE_PAD: q its codes, bad 1 where its
 * base is unknown (> 3), mid 1 for its middle bases (end .. len - end - 1), all 1 for its bases. */
#define LANE_PAD 32
typedef struct {
    uint8_t *q, *bad, *mid, *all;
    int64_t padded;
} Lanes;

static void lanes_fill(Lanes *ln, const uint8_t *q, int64_t len, int64_t end) {
    int64_t padded = ln->padded = (len + LANE_PAD - 1) / LANE_PAD * LANE_PAD;
    memcpy(ln->q, q, len);
    for (int64_t j = 0; j < len; j++)
        ln->bad[j] = q[j] > 3;
    memset(ln->all, 1, len);
    memset(ln->mid, 0, padded);
    memset(ln->mid + end, 1, len - 2 * end); /* end <= len / 4 */
    memset(ln->q + len, 0, padded - len);
    memset(ln->bad + len, 0, padded - len);
    memset(ln->all + len, 0, padded - len);
}

/* count_whole's counts from the read's lanes on letters l, which hold ln->padded letters (those past
 * the read's end are read, not counted): plain C, SSE2 16 bases a step, AVX2 32 (chosen at import by
 * what the processor has). Each step: its mismatches as 0/1 bytes, summed by a sum of absolute
 * differences against zero into 64-bit lanes, once whole and once in the read's middle; where
 * count_whole's four passes the compiler vectorised widened every byte to 64 bits (a third of
 * diagonal_edits' time on all-viral reads). */
static void count_lanes_c(const Lanes *ln, const uint8_t *l, int64_t *miss, int64_t *mid, int64_t *unknown) {
    int64_t all = 0, middle = 0, u = 0;
    for (int64_t j = 0; j < ln->padded; j++) {
        int one = ((l[j] != ln->q[j]) & ln->all[j]) | ln->bad[j];
        all += one;
        middle += one & ln->mid[j];
        u += (l[j] > 3) & ln->all[j];
    }
    *miss = all - middle;
    *mid = middle;
    *unknown = u;
}

#if defined(__SSE2__)
static void count_lanes_sse2(const Lanes *ln, const uint8_t *l, int64_t *miss, int64_t *mid, int64_t *unknown) {
    const __m128i four = _mm_set1_epi8(4), zero = _mm_setzero_si128();
    __m128i all = zero, middle = zero, u = zero;
    for (int64_t j = 0; j < ln->padded; j += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(l + j)), b = _mm_loadu_si128((const __m128i *)(ln->q + j));
        __m128i in = _mm_loadu_si128((const __m128i *)(ln->all + j));
        __m128i one = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(a, b), in),
                                   _mm_loadu_si128((const __m128i *)(ln->bad + j)));
        all = _mm_add_epi64(all, _mm_sad_epu8(one, zero));
        middle = _mm_add_epi64(middle, _mm_sad_epu8(_mm_and_si128(one, _mm_loadu_si128((const __m128i *)(ln->mid + j))), zero));
        u = _mm_or_si128(u, _mm_and_si128(_mm_cmpeq_epi8(_mm_max_epu8(a, four), a), in));
    }
    int64_t total = _mm_cvtsi128_si64(all) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(all, all));
    *mid = _mm_cvtsi128_si64(middle) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(middle, middle));
    *miss = total - *mid;
    *unknown = _mm_movemask_epi8(_mm_cmpeq_epi8(u, zero)) != 0xFFFF;
}
#endif

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) && defined(__SSE2__)
#include <immintrin.h>
#define LANES_AVX2 1
__attribute__((target("avx2"))) static void count_lanes_avx2(const Lanes *ln, const uint8_t *l, int64_t *miss,
                                                              int64_t *mid, int64_t *unknown) {
    const __m256i four = _mm256_set1_epi8(4), zero = _mm256_setzero_si256();
    __m256i all = zero, middle = zero, u = zero;
    for (int64_t j = 0; j < ln->padded; j += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(l + j)), b = _mm256_loadu_si256((const __m256i *)(ln->q + j));
        __m256i in = _mm256_loadu_si256((const __m256i *)(ln->all + j));
        __m256i one = _mm256_or_si256(_mm256_andnot_si256(_mm256_cmpeq_epi8(a, b), in),
                                      _mm256_loadu_si256((const __m256i *)(ln->bad + j)));
        all = _mm256_add_epi64(all, _mm256_sad_epu8(one, zero));
        middle = _mm256_add_epi64(
            middle, _mm256_sad_epu8(_mm256_and_si256(one, _mm256_loadu_si256((const __m256i *)(ln->mid + j))), zero));
        u = _mm256_or_si256(u, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_max_epu8(a, four), a), in));
    }
    __m128i a2 = _mm_add_epi64(_mm256_castsi256_si128(all), _mm256_extracti128_si256(all, 1));
    __m128i m2 = _mm_add_epi64(_mm256_castsi256_si128(middle), _mm256_extracti128_si256(middle, 1));
    int64_t total = _mm_cvtsi128_si64(a2) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(a2, a2));
    *mid = _mm_cvtsi128_si64(m2) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(m2, m2));
    *miss = total - *mid;
    *unknown = !_mm256_testz_si256(u, u);
}
#endif

/* the least of a[s] - b[s] over lo <= s < hi (INT32_MAX where none): one_gap's search over a read's
 * splits, plain C (SSE2 has no 32-bit minimum: the compiler's compares and blends) or AVX2 eight
 * splits a step */
static int32_t least_difference_c(const int32_t *a, const int32_t *b, int64_t lo, int64_t hi) {
    int32_t top = INT32_MAX;
    for (int64_t s = lo; s < hi; s++) {
        int32_t e = a[s] - b[s];
        top = e < top ? e : top;
    }
    return top;
}

#if defined(LANES_AVX2)
__attribute__((target("avx2"))) static int32_t least_difference_avx2(const int32_t *a, const int32_t *b, int64_t lo,
                                                                      int64_t hi) {
    __m256i best = _mm256_set1_epi32(INT32_MAX);
    int64_t s = lo;
    for (; s + 8 <= hi; s += 8)
        best = _mm256_min_epi32(best, _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(a + s)),
                                                       _mm256_loadu_si256((const __m256i *)(b + s))));
    __m128i m = _mm_min_epi32(_mm256_castsi256_si128(best), _mm256_extracti128_si256(best, 1));
    m = _mm_min_epi32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_min_epi32(m, _mm_shuffle_epi32(m, 0xB1));
    int32_t top = _mm_cvtsi128_si32(m);
    for (; s < hi; s++) {
        int32_t e = a[s] - b[s];
        top = e < top ? e : top;
    }
    return top;
}
#endif

#if defined(LANES_AVX2)
__attribute__((target("avx2"))) static void rank_place_avx2(const int32_t *key, int64_t n, int64_t *x) {
    int64_t padded = (n + 7) & ~(int64_t)7;
    for (int64_t i = 0; i < n; i++) {
        __m256i v = _mm256_set1_epi32(key[i]), below = _mm256_setzero_si256();
        for (int64_t j = 0; j < padded; j += 8)
            below = _mm256_sub_epi32(below, _mm256_cmpgt_epi32(v, _mm256_loadu_si256((const __m256i *)(key + j))));
        __m128i b = _mm_add_epi32(_mm256_castsi256_si128(below), _mm256_extracti128_si256(below, 1));
        b = _mm_add_epi32(b, _mm_shuffle_epi32(b, 0x4E));
        b = _mm_add_epi32(b, _mm_shuffle_epi32(b, 0xB1));
        x[_mm_cvtsi128_si32(b)] = key[i];
    }
}
#endif

/* The typing EM's class sums and posteriors (em_classes, far below) over class groups g0..g1. A
 * group is EM_LANES classes side by side: lane l's j-th match at slot g_at[g] + j * EM_LANES + l, a
 * shorter class's lane padded with matches of likelihood 0 on a zero abundance (a sum from +0.0
 * of terms >= 0 is never -0.0, so adding +0.0 changes no bit of it). Each slot's weight
 * w = abundance[s_ref] * s_like, each lane's sum of them from 0.0 in its matches' order, then each
 * slot's posterior w / sum, times its class's reads (g_reads) where `reads` is set, into pw. Plain
 * C, or AVX2 (eight lanes' sums in two registers, four divisions an instruction): one rounding an
 * operation either way, so the same bytes; chosen with count_lanes (lanes_choose). Class after
 * class, each class's chain of additions and its divisions ran one at a time between two loop ends
 * the processor could not foresee (classes of 1 to 21 matches); the EM's steps over the 108,641
 * matches of the all-HPV reads took 75 ms of CPU that way, 39 ms so (with em_refs, below). */
#define EM_LANES 8
typedef void (*EmGroups)(const int32_t *, const int64_t *, const double *, const int32_t *, const double *, Py_ssize_t,
                         Py_ssize_t, const double *, double *, int);

static void em_groups_c(const int32_t *g_size, const int64_t *g_at, const double *g_reads, const int32_t *s_ref,
                        const double *s_like, Py_ssize_t g0, Py_ssize_t g1, const double *abundance, double *pw,
                        int reads) {
    for (Py_ssize_t g = g0; g < g1; g++) {
        const Py_ssize_t k = g_size[g];
        const int32_t *sr = s_ref + g_at[g];
        const double *sl = s_like + g_at[g], *cr = g_reads + g * EM_LANES;
        double *p = pw + g_at[g], sum[EM_LANES] = {0.0};
        for (Py_ssize_t j = 0; j < k * EM_LANES; j += EM_LANES)
            for (int l = 0; l < EM_LANES; l++) {
                const double x = abundance[sr[j + l]] * sl[j + l];
                p[j + l] = x;
                sum[l] += x;
            }
        for (Py_ssize_t j = 0; j < k * EM_LANES; j += EM_LANES)
            for (int l = 0; l < EM_LANES; l++)
                p[j + l] = reads ? (p[j + l] / sum[l]) * cr[l] : p[j + l] / sum[l];
    }
}

#if defined(LANES_AVX2)
__attribute__((target("avx2"))) static void em_groups_avx2(const int32_t *g_size, const int64_t *g_at,
                                                            const double *g_reads, const int32_t *s_ref,
                                                            const double *s_like, Py_ssize_t g0, Py_ssize_t g1,
                                                            const double *abundance, double *pw, int reads) {
    const double *a = abundance;
    for (Py_ssize_t g = g0; g < g1; g++) {
        const Py_ssize_t k = g_size[g];
        const int32_t *sr = s_ref + g_at[g];
        const double *sl = s_like + g_at[g];
        double *p = pw + g_at[g];
        __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
        /* the abundances four loads a register (gathers were slower on Zen 4) */
        for (Py_ssize_t j = 0; j < k * EM_LANES; j += EM_LANES) {
            const int32_t *x = sr + j;
            __m256d w0 = _mm256_mul_pd(_mm256_set_pd(a[x[3]], a[x[2]], a[x[1]], a[x[0]]), _mm256_loadu_pd(sl + j));
            __m256d w1 = _mm256_mul_pd(_mm256_set_pd(a[x[7]], a[x[6]], a[x[5]], a[x[4]]), _mm256_loadu_pd(sl + j + 4));
            _mm256_storeu_pd(p + j, w0);
            _mm256_storeu_pd(p + j + 4, w1);
            s0 = _mm256_add_pd(s0, w0);
            s1 = _mm256_add_pd(s1, w1);
        }
        if (reads) {
            const __m256d c0 = _mm256_loadu_pd(g_reads + g * EM_LANES), c1 = _mm256_loadu_pd(g_reads + g * EM_LANES + 4);
            for (Py_ssize_t j = 0; j < k * EM_LANES; j += EM_LANES) {
                _mm256_storeu_pd(p + j, _mm256_mul_pd(_mm256_div_pd(_mm256_loadu_pd(p + j), s0), c0));
                _mm256_storeu_pd(p + j + 4, _mm256_mul_pd(_mm256_div_pd(_mm256_loadu_pd(p + j + 4), s1), c1));
            }
        } else
            for (Py_ssize_t j = 0; j < k * EM_LANES; j += EM_LANES) {
                _mm256_storeu_pd(p + j, _mm256_div_pd(_mm256_loadu_pd(p + j), s0));
                _mm256_storeu_pd(p + j + 4, _mm256_div_pd(_mm256_loadu_pd(p + j + 4), s1));
            }
    }
}
#endif

static EmGroups em_groups = em_groups_c; /* lanes_choose sets it */

typedef void (*CountLanes)(const Lanes *, const uint8_t *, int64_t *, int64_t *, int64_t *);
/* count_lanes' and least_difference's forms for this processor, set at import (lanes_choose); the
 * tests may set others (_scan.count_lanes_kind) to compare every form with the definition */
static CountLanes count_lanes = count_lanes_c;
static int32_t (*least_difference)(const int32_t *, const int32_t *, int64_t, int64_t) = least_difference_c;

/* the best form this processor runs: 2 AVX2, 1 SSE2, 0 plain C */
static int lanes_best(void) {
#if defined(LANES_AVX2)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        return 2;
#endif
#if defined(__SSE2__)
    return 1;
#else
    return 0;
#endif
}

/* count_lanes (and least_difference, rank_place, em_groups) set to form `kind` (as lanes_best numbers them); 0 where
 * this build or processor lacks it */
static int lanes_choose(int kind) {
    if (kind < 0 || kind > lanes_best())
        return 0;
    least_difference = least_difference_c;
#if defined(LANES_AVX2)
    if (kind == 2) {
        count_lanes = count_lanes_avx2;
        least_difference = least_difference_avx2;
        rank_place = rank_place_avx2;
        em_groups = em_groups_avx2;
        return 1;
    }
#endif
#if defined(__SSE2__)
    if (kind == 1) {
        count_lanes = count_lanes_sse2;
        rank_place = rank_place_sse2;
        em_groups = em_groups_c;
        return 1;
    }
#endif
    if (kind == 0) {
        count_lanes = count_lanes_c;
        rank_place = rank_place_c;
        em_groups = em_groups_c;
        return 1;
    }
    return 0;
}

/* count_lanes_kind([kind]) -> the form of diagonal_edits' ungapped counts and one-gap searches (and of
 * the typing EM's class sums) in use (2 AVX2, 1 SSE2 counts, 0 plain C), after setting it to
 * `kind` where given (-1: the best this processor runs); ValueError for a form it cannot run */
static PyObject *count_lanes_kind(PyObject *self, PyObject *args) {
    int kind = -2;
    (void)self;
    if (!PyArg_ParseTuple(args, "|i", &kind))
        return NULL;
    if (kind != -2 && !lanes_choose(kind == -1 ? lanes_best() : kind)) {
        PyErr_SetString(PyExc_ValueError, "count_lanes_kind: a form this build or processor does not run");
        return NULL;
    }
    int now = 0;
#if defined(LANES_AVX2)
    now = count_lanes == count_lanes_avx2 ? 2 : now;
#endif
#if defined(__SSE2__)
    now = count_lanes == count_lanes_sse2 ? 1 : now;
#endif
    return PyLong_FromLong(now);
}

/* a read's ungapped counts on letters l facing it whole: mismatches in its ends (*miss) and middle
 * (*mid), unknown letters faced (*unknown) */
static void count_whole(const uint8_t *q, const uint8_t *l, int64_t len, int64_t end, int64_t *miss, int64_t *mid,
                        int64_t *unknown) {
    int64_t a = 0, b = 0, u = 0;
    for (int64_t j = 0; j < end; j++)
        a += (q[j] > 3) | (l[j] != q[j]);
    for (int64_t j = end; j < len - end; j++)
        b += (q[j] > 3) | (l[j] != q[j]);
    for (int64_t j = len - end > end ? len - end : end; j < len; j++)
        a += (q[j] > 3) | (l[j] != q[j]);
    for (int64_t j = 0; j < len; j++)
        u += l[j] > 3;
    *miss = a;
    *mid = b;
    *unknown = u;
}

/* diagonal place - shift added to the read's diagonals (keys: the table of those seen; anchors, diags:
 * each new one's place and diagonal, in order of first sight) */
static inline void add_diagonal(int64_t *keys, int64_t *anchors, int64_t *diags, int64_t *distinct, int64_t place,
                                int64_t shift) {
    int64_t d = place - shift;
    uint64_t hsh = ((uint64_t)d * HASH) >> 51; /* 13 bits: DIAG_SLOTS */
    while (keys[hsh] != INT64_MIN && keys[hsh] != d)
        hsh = (hsh + 1) & (DIAG_SLOTS - 1);
    if (keys[hsh] == INT64_MIN) {
        keys[hsh] = d;
        anchors[*distinct] = place;
        diags[(*distinct)++] = d;
    }
}

#define PLACES_AHEAD 16 /* windows ahead whose places are requested where their rows are given */
#define RECENT 16       /* the previous window's first diagonals, kept to skip their look-ups */

static PyObject *diagonal_edits(PyObject *self, PyObject *args) {
    Py_buffer codes_b, starts_b, lengths_b, first_b, at_b, slot_b, flip_b, letters_b, start_b, places_b, oread_b,
        odiag_b, oedits_b, ospan_b, oaligned_b, best_b, cstart_b = {0}, clength_b = {0}, around_b = {0}, wrow_b = {0},
        wcount_b = {0}, wgiven_b = {0};
    int wide;
    Py_ssize_t span, max_visits, margin, ends, wrap = 0, forward = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*innnnw*w*w*w*w*w*|y*y*nnw*y*y*y*", &codes_b, &starts_b, &lengths_b,
                          &first_b, &at_b, &slot_b, &flip_b, &letters_b, &start_b, &places_b, &wide, &span,
                          &max_visits, &margin, &ends, &oread_b, &odiag_b, &oedits_b, &ospan_b, &oaligned_b, &best_b,
                          &cstart_b, &clength_b, &wrap, &forward, &around_b, &wrow_b, &wcount_b, &wgiven_b))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = lengths_b.len / 8, h = at_b.len / 8, capacity = oread_b.len / 8, item = wide ? 8 : 4;
    Py_ssize_t n_keys = start_b.len / item - 1, n_places = places_b.len / item;
    int64_t *keys = NULL, *diags = NULL, *edits = NULL, *middle = NULL, *order = NULL, *anchors = NULL;
    int32_t *suffix = NULL, *other_prefix = NULL; /* suffix: one diagonal's mismatch_prefix, other_prefix: another's */
    uint8_t *facing_unknown = NULL, *ring = NULL, *around = NULL, *lane_bytes = NULL;
    int64_t *ga = NULL, *ge = NULL, *gs = NULL, *gl = NULL;
    /* each window's seed's row of the table, as the places check read it (share_place's rows and
     * counts, and the look-up's first place, -1 where it has none): its places visited without
     * fetching the row again, a seed of one place without fetching its place (half an all-viral
     * read's windows); empty: read from the table by slot */
    const int64_t *wrow = wrow_b.len ? (const int64_t *)wrow_b.buf : NULL;
    const int64_t *wcount = wrow ? (const int64_t *)wcount_b.buf : NULL;
    const int64_t *wgiven = wrow && wgiven_b.len ? (const int64_t *)wgiven_b.buf : NULL;
    Contigs ct = {NULL, NULL, 0, wrap, forward};
    if (starts_b.len != lengths_b.len || first_b.len != 8 * (n + 1) || slot_b.len != at_b.len ||
        (flip_b.len && flip_b.len != h) || odiag_b.len != oread_b.len || oedits_b.len != oread_b.len ||
        ospan_b.len != oread_b.len || oaligned_b.len != oread_b.len || best_b.len != lengths_b.len ||
        max_visits < 0 || max_visits > DIAG_SLOTS / 2 || margin < 0 || ends < 0 || n_keys < 0 ||
        (wrow && (wrow_b.len != at_b.len || wcount_b.len != at_b.len || (wgiven && wgiven_b.len != at_b.len)))) {
        PyErr_SetString(PyExc_ValueError, "diagonal_edits: arguments of the wrong size");
        goto done;
    }
    if (cstart_b.buf && cstart_b.len) { /* the contigs, checked: each inside the forward half, in order */
        ct.start = (const int64_t *)cstart_b.buf;
        ct.length = (const int64_t *)clength_b.buf;
        ct.n = cstart_b.len / 8;
        int ok = cstart_b.len % 8 == 0 && clength_b.len == cstart_b.len && around_b.len == n && wrap >= 0 &&
                 2 * (int64_t)forward == (int64_t)letters_b.len;
        for (Py_ssize_t c = 0; c < ct.n && ok; c++)
            ok = ct.length[c] > 0 && ct.start[c] >= (c ? ct.start[c - 1] + ct.length[c - 1] + wrap + 1 : 0) &&
                 ct.start[c] + ct.length[c] + wrap < forward;
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "diagonal_edits: contigs that do not lie in the letters");
            goto done;
        }
        around = (uint8_t *)around_b.buf;
        memset(around, 0, n);
    }
    const uint8_t *codes = (const uint8_t *)codes_b.buf, *letters = (const uint8_t *)letters_b.buf;
    const uint8_t *flip = flip_b.len ? (const uint8_t *)flip_b.buf : NULL;
    const int64_t *starts = (const int64_t *)starts_b.buf, *lengths = (const int64_t *)lengths_b.buf;
    const int64_t *first = (const int64_t *)first_b.buf, *at = (const int64_t *)at_b.buf;
    const int64_t *slot = (const int64_t *)slot_b.buf;
    int64_t *oread = (int64_t *)oread_b.buf, *odiag = (int64_t *)odiag_b.buf, *oedits = (int64_t *)oedits_b.buf;
    int64_t *ospan = (int64_t *)ospan_b.buf, *oaligned = (int64_t *)oaligned_b.buf, *best = (int64_t *)best_b.buf;
    Py_ssize_t m = codes_b.len, r = letters_b.len, found = 0, bad = 0, longest = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        longest = lengths[i] > longest ? lengths[i] : longest;
    keys = malloc(sizeof(int64_t) * DIAG_SLOTS);
    diags = malloc(sizeof(int64_t) * DIAG_SLOTS);
    edits = malloc(sizeof(int64_t) * DIAG_SLOTS);
    middle = malloc(sizeof(int64_t) * DIAG_SLOTS);
    order = malloc(sizeof(int64_t) * DIAG_SLOTS);
    facing_unknown = malloc(DIAG_SLOTS);
    anchors = malloc(sizeof(int64_t) * DIAG_SLOTS);
    if (longest >= ((Py_ssize_t)1 << 30)) {
        PyErr_SetString(PyExc_ValueError, "diagonal_edits: a read of 2^30 bases or more");
        goto done;
    }
    suffix = malloc(sizeof(int32_t) * (longest + 1));
    other_prefix = malloc(sizeof(int32_t) * (longest + 1));
    ring = calloc(longest + LANE_PAD, 1);
    lane_bytes = malloc(4 * (longest + LANE_PAD));
    ga = malloc(sizeof(int64_t) * GAPPED_MAX);
    ge = malloc(sizeof(int64_t) * GAPPED_MAX);
    gs = malloc(sizeof(int64_t) * GAPPED_MAX);
    gl = malloc(sizeof(int64_t) * GAPPED_MAX);
    if (!keys || !diags || !edits || !middle || !order || !facing_unknown || !anchors || !suffix || !other_prefix ||
        !ring || !lane_bytes || !ga || !ge || !gs || !gl) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t x = 0; x < DIAG_SLOTS; x++)
        keys[x] = INT64_MIN;
    Lanes lanes = {lane_bytes, lane_bytes + longest + LANE_PAD, lane_bytes + 2 * (longest + LANE_PAD),
                   lane_bytes + 3 * (longest + LANE_PAD), 0};
    Py_BEGIN_ALLOW_THREADS
    for (int64_t w = n ? first[0] : 0; wrow && n && w >= 0 && w < h && w < first[0] + PLACES_AHEAD; w++)
        if (wcount[w] > 0 && wrow[w] >= 0 && wrow[w] < n_places)
            __builtin_prefetch((const char *)places_b.buf + item * wrow[w]);
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        int64_t s0 = starts[i], len = lengths[i], distinct = 0, visits = 0;
        if (s0 < 0 || len < 0 || s0 + len > m || first[i] < 0 || first[i] > first[i + 1] || first[i + 1] > h) {
            bad = 1;
            break;
        }
        int64_t w_end = first[i + 1];
        if (wrow) {
            /* the rows as the places check read them: only the places fetched, a steady distance ahead
             * across reads (their rows known, no row's fetch waited on first) */
            for (int64_t w = first[i]; w < w_end && !bad; w++)
                bad = wcount[w] < 0 || wrow[w] < 0 || wrow[w] + wcount[w] > n_places;
            int64_t recent[RECENT], recent_n = 0;
            for (int64_t w = first[i]; w < w_end && !bad; w++) {
                int64_t ahead = w + PLACES_AHEAD, c = wcount[w];
                if (ahead < h && wcount[ahead] > 0 && !(wcount[ahead] == 1 && wgiven && wgiven[ahead] >= 0) &&
                    wrow[ahead] >= 0 && wrow[ahead] < n_places)
                    __builtin_prefetch((const char *)places_b.buf + item * wrow[ahead]);
                visits += c;
                if (visits > max_visits)
                    break;
                /* the window's kth place on the previous window's kth diagonal (the next window of one
                 * match, nearly always): that diagonal is the read's already, no look-up */
                int64_t shift = at[w] - s0, flipped = flip && flip[w];
                for (int64_t k = 0; k < c; k++) {
                    int64_t place = k == 0 && c == 1 && wgiven && wgiven[w] >= 0 ? wgiven[w]
                                                                                   : table_at(places_b.buf, wide, wrow[w] + k);
                    place = flipped ? r - place - span : place;
                    if (k < RECENT && k < recent_n && recent[k] == place - shift)
                        continue;
                    if (k < RECENT)
                        recent[k] = place - shift;
                    add_diagonal(keys, anchors, diags, &distinct, place, shift);
                }
                recent_n = c;
            }
        } else {
        /* windows in turn, each one's seed's row of the table requested 2 VISIT_AHEAD windows ahead
         * and its first places VISIT_AHEAD ahead, so that a steady number of fetches is in flight
         * (a chunk's rows and then its places requested at once waited on nearly every one) */
        int64_t ring_lo[VISIT_AHEAD], ring_hi[VISIT_AHEAD];
        for (int64_t w = first[i]; w < w_end && !bad; w++)
            bad = slot[w] >= n_keys;
        for (int64_t w = first[i]; w < w_end && w < first[i] + 2 * VISIT_AHEAD && !bad; w++)
            if (slot[w] >= 0)
                __builtin_prefetch((const char *)start_b.buf + item * slot[w]);
        for (int64_t w = first[i]; w < w_end && w < first[i] + VISIT_AHEAD && !bad; w++)
            bad = !visit_row(start_b.buf, places_b.buf, wide, item, n_places, slot[w],
                             &ring_lo[(w - first[i]) & (VISIT_AHEAD - 1)], &ring_hi[(w - first[i]) & (VISIT_AHEAD - 1)]);
        for (int64_t w = first[i]; w < w_end && !bad; w++) {
            int64_t k = (w - first[i]) & (VISIT_AHEAD - 1), lo = ring_lo[k], hi = ring_hi[k], ahead = w + VISIT_AHEAD;
            if (ahead + VISIT_AHEAD < w_end && slot[ahead + VISIT_AHEAD] >= 0)
                __builtin_prefetch((const char *)start_b.buf + item * slot[ahead + VISIT_AHEAD]);
            if (ahead < w_end && !visit_row(start_b.buf, places_b.buf, wide, item, n_places, slot[ahead], &ring_lo[k],
                                            &ring_hi[k])) {
                bad = 1;
                break;
            }
            visits += hi - lo;
            if (visits > max_visits)
                break;
            for (int64_t e = lo; e < hi; e++) {
                int64_t place = table_at(places_b.buf, wide, e);
                add_diagonal(keys, anchors, diags, &distinct, flip && flip[w] ? r - place - span : place, at[w] - s0);
            }
        }
        }
        if (bad)
            break;
        if (visits > max_visits)
            best[i] = -2;
        else if (!distinct)
            best[i] = -1;
        else {
            const uint8_t *q = codes + s0;
            int64_t end = len / 4 < ends ? len / 4 : ends, top = INT64_MAX, n_gapped = 0;
            lanes_fill(&lanes, q, len, end);
            for (int64_t x = 0; x < distinct && x < LETTERS_LEAD; x++)
                prefetch_span(letters, r, diags[x], len);
            for (int64_t x = 0; x < distinct; x++) { /* ungapped */
                int64_t d = diags[x], miss = 0, mid = 0, unknown = 0;
                if (x + LETTERS_LEAD < distinct)
                    prefetch_span(letters, r, diags[x + LETTERS_LEAD], len);
                if (d >= 0 && d + lanes.padded <= r) /* whole, with the letters past the read's end to read */
                    count_lanes(&lanes, letters + d, &miss, &mid, &unknown);
                else if (d >= 0 && d + len <= r)
                    count_whole(q, letters + d, len, end, &miss, &mid, &unknown);
                else
                    for (int64_t j = 0; j < len; j++) {
                        int one = mismatch(q, letters, r, d, j);
                        unknown += d + j < 0 || d + j >= r || letters[d + j] > 3;
                        if (j >= end && j < len - end)
                            mid += one;
                        else
                            miss += one;
                    }
                edits[x] = miss + mid;
                middle[x] = mid;
                facing_unknown[x] = unknown > 0;
                if (miss + mid < top)
                    top = miss + mid;
            }
            /* a diagonal out of its contig's letters: every one taken around its genome, and counted again */
            int around_read = 0;
            for (int64_t x = 0; x < distinct && ct.n && !around_read; x++)
                around_read = facing_unknown[x] && !contig_holds(&ct, diags[x], len);
            if (around_read) {
                around[i] = 1;
                for (int64_t x = 0; x < distinct; x++) { /* the table emptied of the diagonals as they were */
                    uint64_t hsh = ((uint64_t)diags[x] * HASH) >> 51;
                    while (keys[hsh] != diags[x])
                        hsh = (hsh + 1) & (DIAG_SLOTS - 1);
                    keys[hsh] = INT64_MIN;
                }
                int64_t kept = 0;
                for (int64_t x = 0; x < distinct; x++) {
                    int64_t base, length;
                    contig_frame(&ct, anchors[x], &base, &length);
                    int64_t d = around_of(diags[x], base, length);
                    uint64_t hsh = ((uint64_t)d * HASH) >> 51;
                    while (keys[hsh] != INT64_MIN && keys[hsh] != d)
                        hsh = (hsh + 1) & (DIAG_SLOTS - 1);
                    if (keys[hsh] == INT64_MIN) {
                        keys[hsh] = d;
                        diags[kept++] = d;
                    }
                }
                distinct = kept;
                top = INT64_MAX;
                for (int64_t x = 0; x < distinct; x++) {
                    int64_t base, length, miss, mid, unknown;
                    contig_frame(&ct, diags[x], &base, &length);
                    around_letters(letters, diags[x], len, base, length, ring);
                    count_lanes(&lanes, ring, &miss, &mid, &unknown);
                    edits[x] = miss + mid;
                    middle[x] = mid;
                    facing_unknown[x] = unknown > 0;
                    if (miss + mid < top)
                        top = miss + mid;
                }
            }
            int64_t bound = top + margin;
            /* one gap between two of the read's diagonals */
            memcpy(order, diags, sizeof(int64_t) * distinct);
            sort_int64(order, distinct, anchors); /* the anchors are spent: room to sort in */
            for (int64_t x = 0; x < distinct; x++)
                for (int64_t y = x + 1; y < distinct && order[y] - order[x] <= bound; y++) {
                    int64_t base = 0, length = 0; /* length 0: along the letters */
                    if (around_read)
                        contig_frame(&ct, order[x], &base, &length);
                    if (y == x + 1)
                        prefix_on(q, len, letters, r, order[x], base, length, ring, suffix);
                    if (around_read)
                        contig_frame(&ct, order[y], &base, &length);
                    prefix_on(q, len, letters, r, order[y], base, length, ring, other_prefix);
                    n_gapped = both_ways(len, order[x], order[y], suffix, other_prefix, bound, ga, ge, gs, gl, n_gapped);
                }
            /* and from a diagonal whose ends hold its mismatches to any diagonal that close */
            for (int64_t x = 0; x < distinct; x++) {
                if (middle[x] > bound || edits[x] - middle[x] < 2)
                    continue;
                int64_t base = 0, length = 0; /* around: the genome of diags[x], which its neighbours share */
                if (around_read)
                    contig_frame(&ct, diags[x], &base, &length);
                prefix_on(q, len, letters, r, diags[x], base, length, ring, suffix);
                for (int64_t g = -bound; g <= bound; g++) {
                    int64_t other = diags[x] + g, own = around_read ? around_of(other, base, length) : other;
                    uint64_t hsh = ((uint64_t)own * HASH) >> 51;
                    while (keys[hsh] != INT64_MIN && keys[hsh] != own)
                        hsh = (hsh + 1) & (DIAG_SLOTS - 1);
                    if (g == 0 || keys[hsh] == own) /* a diagonal of its own: tried above */
                        continue;
                    prefix_on(q, len, letters, r, other, base, length, ring, other_prefix);
                    int64_t before = n_gapped;
                    n_gapped = both_ways(len, diags[x], other, suffix, other_prefix, bound, ga, ge, gs, gl, n_gapped);
                    for (int64_t z = before; z < n_gapped && around_read; z++) /* the first diagonal taken around */
                        ga[z] = around_of(ga[z], base, length);
                }
            }
            for (int64_t x = 0; x < n_gapped; x++)
                top = ge[x] < top ? ge[x] : top;
            best[i] = top;
            int64_t kept = 0;
            for (int64_t x = 0; x < distinct; x++)
                kept += edits[x] <= top + margin || facing_unknown[x];
            for (int64_t x = 0; x < n_gapped; x++)
                kept += ge[x] <= top + margin;
            if (found + kept > capacity || n_gapped >= GAPPED_MAX)
                best[i] = -3;
            else {
                for (int64_t x = 0; x < distinct; x++)
                    if (edits[x] <= top + margin || facing_unknown[x]) {
                        oread[found] = i;
                        odiag[found] = diags[x];
                        oedits[found] = edits[x];
                        ospan[found] = len;
                        oaligned[found++] = len;
                    }
                for (int64_t x = 0; x < n_gapped; x++)
                    if (ge[x] <= top + margin) {
                        oread[found] = i;
                        odiag[found] = ga[x];
                        oedits[found] = ge[x];
                        ospan[found] = gs[x];
                        oaligned[found++] = gl[x];
                    }
            }
        }
        /* empty the table for the next read: its slots in use are exactly this read's diagonals */
        for (int64_t x = 0; x < distinct; x++) {
            uint64_t hsh = ((uint64_t)diags[x] * HASH) >> 51;
            while (keys[hsh] != diags[x])
                hsh = (hsh + 1) & (DIAG_SLOTS - 1);
            keys[hsh] = INT64_MIN;
        }
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "diagonal_edits: a read, seed or place outside the arrays");
    else
        result = PyLong_FromSsize_t(found);
done:
    free(keys);
    free(diags);
    free(edits);
    free(middle);
    free(order);
    free(facing_unknown);
    free(anchors);
    free(ring);
    free(lane_bytes);
    free(suffix);
    free(other_prefix);
    free(ga);
    free(ge);
    free(gs);
    free(gl);
    PyBuffer_Release(&codes_b);
    PyBuffer_Release(&starts_b);
    PyBuffer_Release(&lengths_b);
    PyBuffer_Release(&first_b);
    PyBuffer_Release(&at_b);
    PyBuffer_Release(&slot_b);
    PyBuffer_Release(&flip_b);
    PyBuffer_Release(&letters_b);
    PyBuffer_Release(&start_b);
    PyBuffer_Release(&places_b);
    PyBuffer_Release(&oread_b);
    PyBuffer_Release(&odiag_b);
    PyBuffer_Release(&oedits_b);
    PyBuffer_Release(&ospan_b);
    PyBuffer_Release(&oaligned_b);
    PyBuffer_Release(&best_b);
    if (cstart_b.obj)
        PyBuffer_Release(&cstart_b);
    if (clength_b.obj)
        PyBuffer_Release(&clength_b);
    if (around_b.obj)
        PyBuffer_Release(&around_b);
    if (wrow_b.obj)
        PyBuffer_Release(&wrow_b);
    if (wcount_b.obj)
        PyBuffer_Release(&wcount_b);
    if (wgiven_b.obj)
        PyBuffer_Release(&wgiven_b);
    return result;
}

/* best_per_contig(read, diagonal, edits, span, aligned, best, around, lengths, name_rank, contig_start,
 *                 contig_length, circular, wrap, forward, margin, share, o_read, o_contig, o_edits, o_st,
 *                 o_en, o_aligned, placed) -> count
 *
 * genointerp.viral.typing.diagonals.best_per_contig_numpy read by read (its numpy definition): the
 * rows of diagonal_edits (read, diagonal, edits, span, aligned int64 (c,), grouped by read in
 * ascending order; best int64 (n,); around uint8 (n,) or empty) placed on the contigs (contig_start,
 * contig_length int64 (R,) in the forward half `forward` of the letters, each followed by `wrap`
 * letters; circular uint8 (R,) or empty: every contig circular; ContigSpans.locate). A read is
 * placed (placed uint8 (n,)) where its best is at least 0 and at most floor(share x its length)
 * and every row of it lies in its contig; its rows within margin of its best then give each
 * contig's best (fewest edits, then the lowest start, then the reverse strand), ordered by edits
 * and then name_rank (int64 (R,)) of the contig, into o_read, o_contig, o_edits, o_st (the start
 * modulo the contig's length), o_en (o_st + span), o_aligned (c each). Returns how many. Stable
 * insertion sorts of a read's few rows, where numpy's two packed sorts, masks and gathers over
 * the batch were a twentieth of an all-viral run. */
typedef struct {
    int64_t contig, strand, st, edits, span, aligned, rank;
} ContigRow;

static int contig_row_before(const ContigRow *x, const ContigRow *y) { /* contig, edits, start, strand */
    if (x->contig != y->contig)
        return x->contig < y->contig;
    if (x->edits != y->edits)
        return x->edits < y->edits;
    if (x->st != y->st)
        return x->st < y->st;
    return x->strand < y->strand;
}

static PyObject *best_per_contig(PyObject *self, PyObject *args) {
    Py_buffer read_b, diag_b, edits_b, span_b, aligned_b, best_b, around_b, lengths_b, rank_b, cstart_b, clength_b,
        circular_b, oread_b, ocontig_b, oedits_b, ost_b, oen_b, oaligned_b, placed_b;
    Py_ssize_t wrap, forward, margin;
    double share;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*y*nnndw*w*w*w*w*w*w*", &read_b, &diag_b, &edits_b, &span_b,
                          &aligned_b, &best_b, &around_b, &lengths_b, &rank_b, &cstart_b, &clength_b, &circular_b,
                          &wrap, &forward, &margin, &share, &oread_b, &ocontig_b, &oedits_b, &ost_b, &oen_b,
                          &oaligned_b, &placed_b))
        return NULL;
    PyObject *result = NULL;
    ContigRow *rows = NULL;
    Py_ssize_t c = read_b.len / 8, n = best_b.len / 8, contigs = cstart_b.len / 8;
    Py_buffer *same_c[] = {&diag_b, &edits_b, &span_b, &aligned_b, &oread_b, &ocontig_b, &oedits_b, &ost_b, &oen_b,
                           &oaligned_b};
    int ok = read_b.len % 8 == 0 && best_b.len % 8 == 0 && lengths_b.len == best_b.len && placed_b.len == n &&
             (around_b.len == 0 || around_b.len == n) && contigs > 0 && clength_b.len == cstart_b.len &&
             rank_b.len == cstart_b.len && (circular_b.len == 0 || circular_b.len == contigs);
    for (int x = 0; x < 10 && ok; x++)
        ok = same_c[x]->len == read_b.len;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "best_per_contig: arguments of the wrong size");
        goto done;
    }
    const int64_t *read = (const int64_t *)read_b.buf, *diagonal = (const int64_t *)diag_b.buf;
    const int64_t *edits = (const int64_t *)edits_b.buf, *span = (const int64_t *)span_b.buf;
    const int64_t *aligned = (const int64_t *)aligned_b.buf, *best = (const int64_t *)best_b.buf;
    const int64_t *lengths = (const int64_t *)lengths_b.buf, *name_rank = (const int64_t *)rank_b.buf;
    const int64_t *start = (const int64_t *)cstart_b.buf, *length = (const int64_t *)clength_b.buf;
    const uint8_t *around = around_b.len ? (const uint8_t *)around_b.buf : NULL;
    const uint8_t *circular = circular_b.len ? (const uint8_t *)circular_b.buf : NULL;
    int64_t *o_read = (int64_t *)oread_b.buf, *o_contig = (int64_t *)ocontig_b.buf, *o_edits = (int64_t *)oedits_b.buf;
    int64_t *o_st = (int64_t *)ost_b.buf, *o_en = (int64_t *)oen_b.buf, *o_aligned = (int64_t *)oaligned_b.buf;
    uint8_t *placed = (uint8_t *)placed_b.buf;
    for (Py_ssize_t k = 0; k < contigs; k++)
        if (length[k] <= 0 || (k && start[k] < start[k - 1])) {
            PyErr_SetString(PyExc_ValueError, "best_per_contig: contigs out of order or empty");
            goto done;
        }
    rows = malloc(sizeof(ContigRow) * (c ? c : 1));
    if (!rows) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t found = 0, bad = 0;
    const int64_t f2 = 2 * (int64_t)forward;
    Py_BEGIN_ALLOW_THREADS
    memset(placed, 0, n);
    Py_ssize_t a = 0; /* the next read's first row */
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        Py_ssize_t b = a;
        while (b < c && read[b] == i)
            b++;
        if (b < c && read[b] < i) { /* rows not grouped by read in ascending order */
            bad = 1;
            break;
        }
        int take = best[i] >= 0 && (double)best[i] <= floor(share * (double)lengths[i]);
        Py_ssize_t kept = 0;
        for (Py_ssize_t j = a; j < b && take; j++) { /* ContigSpans.locate */
            int reverse = diagonal[j] >= forward;
            int64_t begin = reverse ? f2 - diagonal[j] - span[j] : diagonal[j];
            int round = around && around[i];
            int64_t facing = round ? (reverse ? f2 - 1 - diagonal[j] : diagonal[j]) : begin;
            Py_ssize_t lo = 0, hi = contigs; /* the last contig starting at or before facing (0 for none) */
            while (hi - lo > 1) {
                Py_ssize_t mid = lo + ((hi - lo) >> 1);
                if (start[mid] <= facing)
                    lo = mid;
                else
                    hi = mid;
            }
            int64_t offset = begin - start[lo], len = length[lo];
            int across = offset < 0 || offset + span[j] > len;
            if (circular)
                round = round && (circular[lo] || !across);
            if (!((offset >= 0 && offset + span[j] <= len + wrap) || round)) {
                take = 0; /* a row past its contig's letters: the read is aligned instead */
                break;
            }
            if (edits[j] > best[i] + margin)
                continue;
            ContigRow row = {lo, reverse ? -1 : 1, round ? ((offset % len) + len) % len : (offset >= len ? offset - len : offset),
                             edits[j], span[j], aligned[j], name_rank[lo]};
            Py_ssize_t at = kept++;
            for (; at > 0 && contig_row_before(&row, &rows[at - 1]); at--) /* stable: after its equals */
                rows[at] = rows[at - 1];
            rows[at] = row;
        }
        a = b;
        if (!take)
            continue;
        placed[i] = 1;
        Py_ssize_t first = 0; /* each contig's first row, in place */
        for (Py_ssize_t j = 0; j < kept; j++)
            if (!j || rows[j].contig != rows[j - 1].contig)
                rows[first++] = rows[j];
        for (Py_ssize_t j = 1; j < first; j++) { /* then by edits and the contig's name */
            ContigRow row = rows[j];
            Py_ssize_t at = j;
            for (; at > 0 && (row.edits < rows[at - 1].edits ||
                              (row.edits == rows[at - 1].edits && row.rank < rows[at - 1].rank)); at--)
                rows[at] = rows[at - 1];
            rows[at] = row;
        }
        for (Py_ssize_t j = 0; j < first; j++, found++) {
            o_read[found] = i;
            o_contig[found] = rows[j].contig;
            o_edits[found] = rows[j].edits;
            o_st[found] = rows[j].st;
            o_en[found] = rows[j].st + rows[j].span;
            o_aligned[found] = rows[j].aligned;
        }
    }
    bad = bad || a < c; /* rows of reads past the last */
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "best_per_contig: rows not grouped by read in ascending order");
    else
        result = PyLong_FromSsize_t(found);
done:
    free(rows);
    Py_buffer *all[] = {&read_b, &diag_b, &edits_b, &span_b, &aligned_b, &best_b, &around_b, &lengths_b, &rank_b,
                        &cstart_b, &clength_b, &circular_b, &oread_b, &ocontig_b, &oedits_b, &ost_b, &oen_b,
                        &oaligned_b, &placed_b};
    for (int x = 0; x < 19; x++)
        PyBuffer_Release(all[x]);
    return result;
}

/* strand_codons(codes, table, forward, reverse)
 *
 * The amino acid of the codon at every position of both strands of nucleotide codes uint8 (M,):
 * forward[i] of codes i, i+1, i+2 and reverse[i] of the reverse complement's (complements of codes
 * M-1-i, M-2-i, M-3-i), each uint8 (M-2,), through table bytes (125,) by 25 b1 + 5 b2 + b3 with
 * every code over 3 taken as 4 (genointerp.seq.translate's codons, which stays the definition).
 * One pass, no reversed copy of the codes: numpy's form made nine arrays the size of a batch. */
static PyObject *strand_codons(PyObject *self, PyObject *args) {
    Py_buffer codes, table, forward, reverse;
    if (!PyArg_ParseTuple(args, "y*y*w*w*", &codes, &table, &forward, &reverse))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t m = codes.len, a = m - 2;
    if (table.len != 125 || a < 1 || forward.len != a || reverse.len != a) {
        PyErr_SetString(PyExc_ValueError, "strand_codons: arguments of the wrong size");
        goto done;
    }
    const uint8_t *c = (const uint8_t *)codes.buf, *t = (const uint8_t *)table.buf;
    uint8_t *fwd = (uint8_t *)forward.buf, *rev = (uint8_t *)reverse.buf;
    Py_BEGIN_ALLOW_THREADS
    /* b: codes as 0..4 (4 for any unknown), and their complements (4 stays 4) */
#define BASE(x) ((x) > 3 ? 4 : (x))
#define COMP(x) ((x) > 3 ? 4 : 3 - (x))
    for (Py_ssize_t i = 0; i < a; i++)
        fwd[i] = t[25 * BASE(c[i]) + 5 * BASE(c[i + 1]) + BASE(c[i + 2])];
    for (Py_ssize_t i = 0; i < a; i++)
        rev[i] = t[25 * COMP(c[m - 1 - i]) + 5 * COMP(c[m - 2 - i]) + COMP(c[m - 3 - i])];
#undef BASE
#undef COMP
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&codes);
    PyBuffer_Release(&table);
    PyBuffer_Release(&forward);
    PyBuffer_Release(&reverse);
    return result;
}

/* stretch_letters(at, opens, offsets, width, pattern, marks, stretch[, codes, read, log_freq, n_symbols, sums])
 *     -> count
 *
 * The letters matched windows fix, each once (genointerp.viral.evidence.chance.fixed_letters).
 * Window i starts at at[i] (int64 (h,)) and fixes at[i] + offsets[pattern[i]][w] for w < width
 * (offsets int64 (P, width); pattern int64 (h,), or empty: row 0 for every window). opens uint8
 * (h,) marks the first window of each stretch (opens[0] set where h > 0), and a stretch's windows
 * come in ascending order of at. Stretch by stretch, the positions its windows fix go to marks,
 * each once and ascending, with the stretch's number (0, 1, ... in order) to stretch (int64, at
 * least h * width each); returns how many. No sort: a stretch's positions are ticked in a table as
 * wide as the stretch, then read off in order, so a batch of reads full of matches costs its
 * windows, where np.unique sorted every position of the batch at once.
 *
 * With sums (float64, one per stretch): each stretch's letters are not written out but summed, in
 * that order, as log_freq[read[i] * n_symbols + codes[position]] (read int64 (h,): each window's
 * read, the stretch's first window's counting; log_freq float64; codes uint8 (M,), every fixed
 * letter a code under n_symbols): the sums genointerp.viral.evidence.chance.chance_bits makes of
 * the written letters with np.bincount, which adds them in the same order (the same bits), without
 * the batch-sized arrays of positions, their stretches and their letters' frequencies (a tenth of
 * an all-viral read's evidence). marks and stretch may then be empty. */
/* stretch_letters' sums: the letter at `where` of codes (M,) added to *sum as log_freq[base + code];
 * 3 (an error) where it lies outside the codes, is no letter under n_symbols or past log_freq */
static inline int add_letter(const uint8_t *codes, Py_ssize_t m, const double *log_freq, Py_ssize_t n_freq, int64_t base,
                             Py_ssize_t n_symbols, int64_t where, double *sum) {
    int64_t code = where >= 0 && where < m ? codes[where] : n_symbols;
    if (code >= n_symbols || base + code >= n_freq)
        return 3;
    *sum += log_freq[base + code];
    return 0;
}

static PyObject *stretch_letters(PyObject *self, PyObject *args) {
    Py_buffer at_b, opens_b, offsets_b, pattern_b, marks_b, stretch_b, codes_b = {0}, read_b = {0}, freq_b = {0},
        sums_b = {0};
    Py_ssize_t width, n_symbols = 0;
    if (!PyArg_ParseTuple(args, "y*y*y*ny*w*w*|y*y*y*nw*", &at_b, &opens_b, &offsets_b, &width, &pattern_b, &marks_b,
                          &stretch_b, &codes_b, &read_b, &freq_b, &n_symbols, &sums_b))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t h = at_b.len / 8, n_patterns = width > 0 ? offsets_b.len / 8 / width : 0;
    const uint8_t *opens = (const uint8_t *)opens_b.buf;
    double *sums = sums_b.obj ? (double *)sums_b.buf : NULL;
    const uint8_t *codes = sums ? (const uint8_t *)codes_b.buf : NULL;
    const int64_t *read = sums ? (const int64_t *)read_b.buf : NULL;
    const double *log_freq = sums ? (const double *)freq_b.buf : NULL;
    Py_ssize_t n_stretches = sums ? sums_b.len / 8 : 0, n_freq = sums ? freq_b.len / 8 : 0, m = codes_b.len;
    if (at_b.len != 8 * h || opens_b.len != h || width < 1 || n_patterns < 1 ||
        offsets_b.len != 8 * n_patterns * width || (pattern_b.len && pattern_b.len != at_b.len) ||
        (!sums && (marks_b.len < 8 * h * width || stretch_b.len != marks_b.len)) || (h > 0 && !opens[0]) ||
        (sums && (read_b.len != at_b.len || n_symbols < 1 || sums_b.len % 8 || freq_b.len % 8))) {
        PyErr_SetString(PyExc_ValueError, "stretch_letters: arguments of the wrong size, or a first window opening no stretch");
        goto done;
    }
    const int64_t *at = (const int64_t *)at_b.buf, *offsets = (const int64_t *)offsets_b.buf;
    const int64_t *pattern = pattern_b.len ? (const int64_t *)pattern_b.buf : NULL;
    int64_t *marks = (int64_t *)marks_b.buf, *stretch = (int64_t *)stretch_b.buf;
    int64_t low = offsets[0], high = offsets[0];
    for (Py_ssize_t w = 1; w < n_patterns * width; w++) {
        low = offsets[w] < low ? offsets[w] : low;
        high = offsets[w] > high ? offsets[w] : high;
    }
    Py_ssize_t count = 0, capacity = 0;
    uint8_t *ticked = NULL;
    int bad = 0; /* 1: a pattern out of range or windows out of order; 2: no memory */
    /* sums of one pattern no wider than 64 letters: a window's letters are one word of bits (its
     * offsets), ORed into the stretch's bits at the window's start, then read off lowest first:
     * two ORs a window where its letters were ticked one by one (seeds of 18 compared letters) */
    uint64_t word_of = 0;
    int bitwise = sums && !pattern && high - low < 64;
    for (Py_ssize_t w = 0; w < width && bitwise; w++)
        word_of |= (uint64_t)1 << (offsets[w] - low);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0, number = 0; i < h && !bad; number++) {
        Py_ssize_t j = i + 1;
        while (j < h && !opens[j]) {
            bad |= at[j] < at[j - 1];
            j++;
        }
        int64_t lo = at[i] + low, span = at[j - 1] + high + 1 - lo;
        if (bad)
            break;
        if (bitwise) {
            int64_t words = (span + 63) / 64 + 1; /* one more for the last window's spill */
            if (8 * words > capacity) {
                uint8_t *grown = realloc(ticked, (size_t)(8 * words));
                if (grown == NULL) {
                    bad = 2;
                    break;
                }
                ticked = grown, capacity = 8 * words;
            }
            uint64_t *bits = (uint64_t *)ticked;
            memset(bits, 0, (size_t)(8 * words));
            for (Py_ssize_t t = i; t < j; t++) {
                int64_t shift = at[t] - at[i], at_bit = shift & 63;
                bits[shift >> 6] |= word_of << at_bit;
                if (at_bit)
                    bits[(shift >> 6) + 1] |= word_of >> (64 - at_bit);
            }
            double sum = 0.0;
            int64_t base = read[i] * n_symbols;
            if (number >= n_stretches || read[i] < 0)
                bad = 3;
            for (int64_t wd = 0; wd < words && !bad; wd++)
                for (uint64_t x = bits[wd]; x && !bad; x &= x - 1, count++)
                    bad = add_letter(codes, m, log_freq, n_freq, base, n_symbols, lo + 64 * wd + __builtin_ctzll(x), &sum);
            if (!bad)
                sums[number] = sum;
            i = j;
            continue;
        }
        if (span > capacity) {
            uint8_t *grown = realloc(ticked, (size_t)span);
            if (grown == NULL) {
                bad = 2;
                break;
            }
            ticked = grown, capacity = span;
        }
        memset(ticked, 0, (size_t)span);
        for (Py_ssize_t t = i; t < j && !bad; t++) {
            int64_t row = pattern ? pattern[t] : 0;
            if (row < 0 || row >= n_patterns) {
                bad = 1;
                break;
            }
            for (Py_ssize_t w = 0; w < width; w++)
                ticked[at[t] + offsets[row * width + w] - lo] = 1;
        }
        if (sums) { /* the stretch's letters summed in order, each checked to lie in the arrays */
            double sum = 0.0;
            int64_t base = read[i] * n_symbols;
            if (number >= n_stretches || read[i] < 0)
                bad = 3;
            for (int64_t p = 0; p < span && !bad; p++)
                if (ticked[p]) {
                    bad = add_letter(codes, m, log_freq, n_freq, base, n_symbols, lo + p, &sum);
                    count++;
                }
            if (!bad)
                sums[number] = sum;
        } else
            for (int64_t p = 0; p < span && !bad; p++)
                if (ticked[p]) {
                    marks[count] = lo + p;
                    stretch[count++] = number;
                }
        i = j;
    }
    Py_END_ALLOW_THREADS
    free(ticked);
    if (bad == 2)
        PyErr_NoMemory();
    else if (bad == 3)
        PyErr_SetString(PyExc_ValueError, "stretch_letters: a fixed letter, read or stretch outside the sums' arrays");
    else if (bad)
        PyErr_SetString(PyExc_ValueError, "stretch_letters: a pattern outside the offsets, or a stretch's windows out of order");
    else
        result = PyLong_FromSsize_t(count);
done:
    PyBuffer_Release(&at_b);
    PyBuffer_Release(&opens_b);
    PyBuffer_Release(&offsets_b);
    PyBuffer_Release(&pattern_b);
    PyBuffer_Release(&marks_b);
    PyBuffer_Release(&stretch_b);
    Py_buffer *optional[] = {&codes_b, &read_b, &freq_b, &sums_b};
    for (int x = 0; x < 4; x++)
        if (optional[x]->obj)
            PyBuffer_Release(optional[x]);
    return result;
}

/* letter_counts(codes, lengths, reads, n_symbols, counts)
 *
 * genointerp.viral.evidence.chance.composition's counts over owned_positions: for each read of
 * `reads` (int64, ascending, repeats counted once), the letters under n_symbols among its codes
 * and the separator after it, of reads joined by one separator (codes uint8 (M,), lengths int64
 * (n,)), added to counts int64 (n * n_symbols) (zeroed here); without the batch-sized arrays of
 * positions and owners numpy made of an all-viral batch. */
static PyObject *letter_counts(PyObject *self, PyObject *args) {
    Py_buffer codes_b, lengths_b, reads_b, counts_b;
    Py_ssize_t n_symbols;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*nw*", &codes_b, &lengths_b, &reads_b, &n_symbols, &counts_b))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = lengths_b.len / 8, r = reads_b.len / 8, m = codes_b.len;
    if (lengths_b.len % 8 || reads_b.len % 8 || n_symbols < 1 || n_symbols > 255 || counts_b.len != 8 * n * n_symbols) {
        PyErr_SetString(PyExc_ValueError, "letter_counts: arguments of the wrong size");
        goto done;
    }
    const uint8_t *codes = (const uint8_t *)codes_b.buf;
    const int64_t *lengths = (const int64_t *)lengths_b.buf, *reads = (const int64_t *)reads_b.buf;
    int64_t *counts = (int64_t *)counts_b.buf;
    memset(counts, 0, counts_b.len);
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    int64_t next = 0, end = 0; /* end: one past read next - 1's separator */
    for (Py_ssize_t x = 0; x < r && !bad; x++) {
        int64_t read = reads[x];
        if (read < 0 || read < next - 1 || read >= n) { /* out of range, or not ascending */
            bad = 1;
            break;
        }
        if (read == next - 1) /* a repeat: counted */
            continue;
        for (; next <= read && !bad; next++) {
            bad = lengths[next] < 0;
            end += lengths[next] + 1;
        }
        if (bad)
            break;
        int64_t lo = end - lengths[read] - 1, hi = end < m ? end : m;
        int64_t *row = counts + read * n_symbols;
        for (int64_t p = lo; p < hi; p++)
            if (codes[p] < n_symbols)
                row[codes[p]]++;
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "letter_counts: reads out of order or outside the lengths");
    else
        result = (Py_INCREF(Py_None), Py_None);
done:
    PyBuffer_Release(&codes_b);
    PyBuffer_Release(&lengths_b);
    PyBuffer_Release(&reads_b);
    PyBuffer_Release(&counts_b);
    return result;
}

/* window_entropy(codes, rows, width, n_symbols, term, out)
 *
 * The Shannon entropy of every window of `width` letters along each of `rows` rows of codes
 * uint8 (rows, c) (genointerp.seq.entropy.window_entropy): the sum over letters 0 .. n_symbols - 1,
 * in that order, of term[the letter's count in the window] (term float64 (width + 1,)); a code
 * of n_symbols or more counts to no letter. out float64 (rows, c - width + 1). The counts slide
 * from one window to the next, and each sum adds the same numbers in the same order as numpy's
 * form (one pass per letter over running sums), so the values are the same bits. */
static PyObject *window_entropy(PyObject *self, PyObject *args) {
    Py_buffer codes_b, term_b, out_b;
    Py_ssize_t rows, width;
    int n_symbols;
    if (!PyArg_ParseTuple(args, "y*nniy*w*", &codes_b, &rows, &width, &n_symbols, &term_b, &out_b))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t c = rows > 0 ? codes_b.len / rows : 0, windows = c - width + 1;
    if (rows < 1 || width < 1 || n_symbols < 1 || n_symbols > 256 || codes_b.len != rows * c || windows < 1 ||
        term_b.len != 8 * (width + 1) || out_b.len != 8 * rows * windows) {
        PyErr_SetString(PyExc_ValueError, "window_entropy: arguments of the wrong size");
        goto done;
    }
    const uint8_t *codes = (const uint8_t *)codes_b.buf;
    const double *term = (const double *)term_b.buf;
    double *out = (double *)out_b.buf;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t count[256];
    for (Py_ssize_t r = 0; r < rows; r++) {
        const uint8_t *row = codes + r * c;
        for (int a = 0; a < n_symbols; a++)
            count[a] = 0;
        for (Py_ssize_t i = 0; i < width; i++)
            if (row[i] < n_symbols)
                count[row[i]]++;
        for (Py_ssize_t j = 0; j < windows; j++) {
            if (j > 0) {
                if (row[j - 1] < n_symbols)
                    count[row[j - 1]]--;
                if (row[j + width - 1] < n_symbols)
                    count[row[j + width - 1]]++;
            }
            double entropy = 0.0;
            for (int a = 0; a < n_symbols; a++)
                entropy += term[count[a]];
            out[r * windows + j] = entropy;
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&codes_b);
    PyBuffer_Release(&term_b);
    PyBuffer_Release(&out_b);
    return result;
}

/* The typing EM over compatibility classes (em_classes, below), over parts: the references that
 * classes join (a class joins the references of its matches) form connected parts, and no sum of
 * a step crosses from one part to another (a class's sum is over its own matches; a reference's
 * new abundance over the matches on it, all in classes of its part, in their order). So each part
 * steps on its own, and only the stopping rule (no abundance moved by the tolerance, over every
 * reference) is shared. A part whose step left every abundance of it the same bits stays so (the
 * next step reads the same numbers): it is not stepped again (its moves are 0 from then on; on
 * the all-HPV reads a fifth of the matches' steps).
 *
 * Over several threads: every EM_ROUND steps the parts still stepping are dealt out (the most work
 * first, each to the thread of the least so far), and each thread steps its own; within a round
 * none waits for another: each publishes each step's largest move, any may tell from the published
 * ones the step at which the one-thread EM stops, and one that has stepped beyond it takes back its
 * references' abundances from that step (they are kept for every step). Dealt once, the threads
 * ended unevenly where parts settled (36 against 22 ms of CPU on the all-HPV reads; dealt every 16
 * steps, 21 against 19).
 *
 * A part's classes and references are laid out for side-by-side sums (em_groups): its classes, the
 * longest first, EM_LANES to a group; its references, those of the most matches first, EM_LANES to
 * a group too, each lane summing the posterior * reads of its reference's matches in their order
 * from the slots they sit in (the last slot, never written, holds the +0.0 the shorter lanes add). */
typedef struct {
    Py_ssize_t g0, g1, rg0, rg1; /* its class groups and reference groups */
    Py_ssize_t ref0, n_refs;     /* its references: local ref0 .. ref0 + n_refs */
    int fixed;                   /* the step after which its abundances stay the same bits; -1 */
} em_part;

typedef struct {
    em_part *part;            /* the most matches first */
    int64_t *work;            /* [n_parts] each part's slots, class and reference groups' (em_deal's measure) */
    Py_ssize_t n_parts, groups, rgroups, slots, locals; /* locals: local references, with gaps; the zero one */
    int32_t *g_size;          /* [groups] matches a lane */
    int64_t *g_at;            /* [groups] the group's first slot */
    double *g_reads;          /* [groups * EM_LANES] each lane's class's reads (0 for an empty lane) */
    int32_t *s_ref;           /* [slots] the local reference (locals: the zero abundance, for padding) */
    double *s_like;           /* [slots] the likelihood (0 for padding) */
    int64_t *s_hit;           /* [slots] the match, -1 for padding */
    int32_t *r_len;           /* [rgroups] matches a lane */
    int64_t *r_at;            /* [rgroups] the group's first place in r_slot */
    int32_t *r_slot;          /* lane l's j-th match's slot at r_at + j * EM_LANES + l (slots: the +0.0) */
    int32_t *r_ref;           /* [rgroups * EM_LANES] the lane's local reference, -1 for none */
    int64_t *global;          /* [locals] the reference a local one is, -1 for a gap */
} em_layout;

static void em_layout_free(em_layout *lay) {
    free(lay->part); free(lay->g_size); free(lay->g_at); free(lay->g_reads); free(lay->s_ref); free(lay->s_like);
    free(lay->s_hit); free(lay->r_len); free(lay->r_at); free(lay->r_slot); free(lay->r_ref); free(lay->global);
    free(lay->work);
}

/* order[0..n) (the items 0..n-1) by rank ascending, then size descending, then item: two stable
 * counting sorts (sizes 0..most, ranks 0..ranks-1); 0 where memory ran out */
static int em_rank_size_order(const int64_t *rank, const int64_t *size, Py_ssize_t n, Py_ssize_t ranks, int64_t most,
                              int64_t *order) {
    int64_t *by_size = malloc(sizeof(int64_t) * (n + 1)), *count = calloc((size_t)(most > ranks ? most : ranks) + 2, sizeof(int64_t));
    if (!by_size || !count) {
        free(by_size); free(count);
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        count[most - size[i]]++;
    for (int64_t k = 0, t = 0; k <= most; k++) {
        int64_t x = count[k];
        count[k] = t;
        t += x;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        by_size[count[most - size[i]]++] = i;
    memset(count, 0, sizeof(int64_t) * (size_t)(ranks + 1));
    for (Py_ssize_t i = 0; i < n; i++)
        count[rank[i]]++;
    for (int64_t k = 0, t = 0; k < ranks; k++) {
        int64_t x = count[k];
        count[k] = t;
        t += x;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        order[count[rank[by_size[i]]]++] = by_size[i];
    free(by_size); free(count);
    return 1;
}

/* lane l's item of the group that starts at a in order[0..n) (up to EM_LANES items of one rank), -1 for none */
static int64_t em_lane(const int64_t *rank, const int64_t *order, Py_ssize_t a, int l, Py_ssize_t n) {
    return l < EM_LANES && a + l < n && rank[order[a + l]] == rank[order[a]] ? order[a + l] : -1;
}

/* the end of the group that starts at a */
static Py_ssize_t em_group_end(const int64_t *rank, const int64_t *order, Py_ssize_t a, Py_ssize_t n) {
    int l = 0;
    while (em_lane(rank, order, a, l, n) >= 0)
        l++;
    return a + l;
}

/* The parts laid out (the most matches first; each part's local references from a cache line of
 * their own, so that no two threads write one); 0 where memory ran out. `ref` etc. as em_classes
 * takes them. */
static int em_layout_build(em_layout *lay, const int64_t *first, const int64_t *ref, const double *like,
                           const double *weight, Py_ssize_t h, Py_ssize_t r, Py_ssize_t classes) {
    int ok = 0;
    memset(lay, 0, sizeof(*lay));
    int64_t *parent = malloc(sizeof(int64_t) * (r + 1)), *load = calloc((size_t)r + 1, sizeof(int64_t));
    int64_t *roots = malloc(sizeof(int64_t) * (r + 1)), *rank_of = malloc(sizeof(int64_t) * (r + 1));
    const Py_ssize_t most_items = (classes > r ? classes : r) + 1; /* classes, or parts */
    int64_t *c_rank = malloc(sizeof(int64_t) * most_items), *c_size = malloc(sizeof(int64_t) * most_items);
    int64_t *c_order = malloc(sizeof(int64_t) * most_items), *r_rank = malloc(sizeof(int64_t) * (r + 1));
    int64_t *r_hits = calloc((size_t)r + 1, sizeof(int64_t)), *r_order = malloc(sizeof(int64_t) * (r + 1));
    int64_t *local = malloc(sizeof(int64_t) * (r + 1)), *fill = calloc((size_t)r + 1, sizeof(int64_t));
    int32_t *slot_of = malloc(sizeof(int32_t) * (h + 1)), *r_group = malloc(sizeof(int32_t) * (r + 1));
    int32_t *r_lane = malloc(sizeof(int32_t) * (r + 1));
    if (!parent || !load || !roots || !rank_of || !c_rank || !c_size || !c_order || !r_rank || !r_hits || !r_order ||
        !local || !fill || !slot_of || !r_group || !r_lane)
        goto out;
    /* the parts: references joined by a class (union-find, the larger root under the smaller) */
    for (Py_ssize_t j = 0; j < r; j++)
        parent[j] = j;
    for (Py_ssize_t c = 0; c < classes; c++)
        for (Py_ssize_t i = first[c] + 1; i < first[c + 1]; i++) {
            int64_t x = ref[first[c]], y = ref[i];
            while (parent[x] != x)
                x = parent[x] = parent[parent[x]];
            while (parent[y] != y)
                y = parent[y] = parent[parent[y]];
            if (x != y) {
                if (x < y) parent[y] = x; else parent[x] = y;
            }
        }
    for (Py_ssize_t j = 0; j < r; j++) {
        int64_t x = j;
        while (parent[x] != x)
            x = parent[x];
        parent[j] = x;
    }
    for (Py_ssize_t i = 0; i < h; i++)
        load[parent[ref[i]]]++, r_hits[ref[i]]++;
    Py_ssize_t n_parts = 0;
    for (Py_ssize_t j = 0; j < r; j++)
        if (parent[j] == j)
            roots[n_parts++] = j;
    /* the most matches first */
    int64_t heaviest = 0;
    for (Py_ssize_t a = 0; a < n_parts; a++) {
        c_rank[a] = 0;
        c_size[a] = load[roots[a]];
        heaviest = c_size[a] > heaviest ? c_size[a] : heaviest;
    }
    if (!em_rank_size_order(c_rank, c_size, n_parts, 1, heaviest, c_order))
        goto out;
    for (Py_ssize_t a = 0; a < n_parts; a++)
        rank_of[roots[c_order[a]]] = a;
    lay->part = calloc((size_t)n_parts + 1, sizeof(em_part));
    lay->work = calloc((size_t)n_parts + 1, sizeof(int64_t));
    if (!lay->part || !lay->work)
        goto out;
    lay->n_parts = n_parts;
    /* the classes (empty ones add nothing) by part, longest first; the references by part, most matches first */
    Py_ssize_t n_cl = 0;
    int64_t widest = 0, most = 0;
    for (Py_ssize_t c = 0; c < classes; c++)
        if (first[c + 1] > first[c]) {
            c_rank[n_cl] = rank_of[parent[ref[first[c]]]];
            c_size[n_cl] = first[c + 1] - first[c];
            widest = c_size[n_cl] > widest ? c_size[n_cl] : widest;
            c_order[n_cl++] = c; /* for now: the class of each place */
        }
    int64_t *by = r_order; /* room: the ranks' order of the classes' places, then of the references */
    int64_t *c_place = malloc(sizeof(int64_t) * (n_cl + 1));
    if (!c_place || !em_rank_size_order(c_rank, c_size, n_cl, n_parts, widest, c_place)) {
        free(c_place);
        goto out;
    }
    for (Py_ssize_t j = 0; j < r; j++) {
        r_rank[j] = rank_of[parent[j]];
        most = r_hits[j] > most ? r_hits[j] : most;
    }
    if (!em_rank_size_order(r_rank, r_hits, r, n_parts, most, by)) {
        free(c_place);
        goto out;
    }
    /* sizes: groups and slots part by part; local references */
    Py_ssize_t groups = 0, slots = 0, rgroups = 0, rslots = 0, locals = 0, work_before = 0;
    for (Py_ssize_t a = 0, b = 0, p = 0; p < n_parts; p++) {
        em_part *pt = &lay->part[p];
        pt->fixed = -1;
        pt->g0 = groups;
        for (; a < n_cl && c_rank[c_place[a]] == p; a = em_group_end(c_rank, c_place, a, n_cl), groups++)
            slots += EM_LANES * c_size[c_place[a]];
        pt->g1 = groups;
        locals = (locals + EM_LANES - 1) / EM_LANES * EM_LANES; /* a cache line of its own */
        pt->ref0 = locals;
        pt->rg0 = rgroups;
        for (; b < r && r_rank[by[b]] == p; b = em_group_end(r_rank, by, b, r), rgroups++) {
            rslots += EM_LANES * r_hits[by[b]];
            for (Py_ssize_t e = b; e < em_group_end(r_rank, by, b, r); e++)
                local[by[e]] = locals++;
        }
        pt->rg1 = rgroups;
        pt->n_refs = locals - pt->ref0;
        lay->work[p] = slots + rslots - work_before;
        work_before = slots + rslots;
    }
    locals = (locals + EM_LANES - 1) / EM_LANES * EM_LANES; /* the zero abundance on a line of its own */
    if (slots + 1 > INT32_MAX || locals + 1 > INT32_MAX) {
        free(c_place);
        goto out;
    }
    lay->groups = groups, lay->slots = slots, lay->rgroups = rgroups, lay->locals = locals;
    lay->g_size = malloc(sizeof(int32_t) * (groups + 1));
    lay->g_at = malloc(sizeof(int64_t) * (groups + 1));
    lay->g_reads = calloc((size_t)groups * EM_LANES + 1, sizeof(double));
    lay->s_ref = malloc(sizeof(int32_t) * (slots + 1));
    lay->s_like = malloc(sizeof(double) * (slots + 1));
    lay->s_hit = malloc(sizeof(int64_t) * (slots + 1));
    lay->r_len = malloc(sizeof(int32_t) * (rgroups + 1));
    lay->r_at = malloc(sizeof(int64_t) * (rgroups + 1));
    lay->r_slot = malloc(sizeof(int32_t) * (rslots + 1));
    lay->r_ref = malloc(sizeof(int32_t) * (rgroups * EM_LANES + 1));
    lay->global = malloc(sizeof(int64_t) * (locals + 1));
    if (!lay->g_size || !lay->g_at || !lay->g_reads || !lay->s_ref || !lay->s_like || !lay->s_hit || !lay->r_len ||
        !lay->r_at || !lay->r_slot || !lay->r_ref || !lay->global) {
        free(c_place);
        goto out;
    }
    /* the class groups: lane l of a group its l-th class, the shorter padded */
    Py_ssize_t g = 0, at = 0;
    for (Py_ssize_t a = 0; a < n_cl; g++) {
        const int64_t k = c_size[c_place[a]];
        lay->g_size[g] = (int32_t)k;
        lay->g_at[g] = at;
        for (int l = 0; l < EM_LANES; l++) {
            const int64_t place = em_lane(c_rank, c_place, a, l, n_cl), c = place >= 0 ? c_order[place] : -1;
            const int64_t size = place >= 0 ? c_size[place] : 0;
            lay->g_reads[g * EM_LANES + l] = place >= 0 ? weight[first[c]] : 0.0;
            for (int64_t j = 0; j < k; j++) {
                const Py_ssize_t s = at + j * EM_LANES + l;
                if (j < size) {
                    const Py_ssize_t i = first[c] + j;
                    lay->s_ref[s] = (int32_t)local[ref[i]];
                    lay->s_like[s] = like[i];
                    lay->s_hit[s] = i;
                    slot_of[i] = (int32_t)s;
                } else {
                    lay->s_ref[s] = (int32_t)locals;
                    lay->s_like[s] = 0.0;
                    lay->s_hit[s] = -1;
                }
            }
        }
        a = em_group_end(c_rank, c_place, a, n_cl);
        at += EM_LANES * k;
    }
    free(c_place);
    /* the reference groups; then each reference's matches, in their order, into its lane */
    for (Py_ssize_t j = 0; j < locals + 1; j++)
        lay->global[j] = -1;
    Py_ssize_t rg = 0, rat = 0;
    for (Py_ssize_t b = 0; b < r; rg++) {
        const int64_t k = r_hits[by[b]];
        lay->r_len[rg] = (int32_t)k;
        lay->r_at[rg] = rat;
        for (int l = 0; l < EM_LANES; l++) {
            const int64_t j = em_lane(r_rank, by, b, l, r);
            lay->r_ref[rg * EM_LANES + l] = j >= 0 ? (int32_t)local[j] : -1;
            if (j >= 0) {
                lay->global[local[j]] = j;
                r_group[j] = (int32_t)rg;
                r_lane[j] = l;
            }
        }
        for (int64_t s = 0; s < EM_LANES * k; s++)
            lay->r_slot[rat + s] = (int32_t)slots;
        b = em_group_end(r_rank, by, b, r);
        rat += EM_LANES * k;
    }
    for (Py_ssize_t c = 0; c < classes; c++)
        for (Py_ssize_t i = first[c]; i < first[c + 1]; i++) {
            const int64_t j = ref[i];
            lay->r_slot[lay->r_at[r_group[j]] + fill[j]++ * EM_LANES + r_lane[j]] = slot_of[i];
        }
    ok = 1;
out:
    free(parent); free(load); free(roots); free(rank_of); free(c_rank); free(c_size); free(c_order); free(r_rank);
    free(r_hits); free(r_order); free(local); free(fill); free(slot_of); free(r_group); free(r_lane);
    if (!ok)
        em_layout_free(lay);
    return ok;
}

/* Each reference's sum of its matches' pw (slots), lane by lane in their order, for reference
 * groups rg0..rg1, into fresh */
static void em_refs(const em_layout *lay, Py_ssize_t rg0, Py_ssize_t rg1, const double *pw, double *fresh) {
    for (Py_ssize_t g = rg0; g < rg1; g++) {
        const Py_ssize_t k = lay->r_len[g];
        const int32_t *rs = lay->r_slot + lay->r_at[g];
        double acc[EM_LANES] = {0.0};
        for (Py_ssize_t j = 0; j < k * EM_LANES; j += EM_LANES)
            for (int l = 0; l < EM_LANES; l++)
                acc[l] += pw[rs[j + l]];
        for (int l = 0; l < EM_LANES; l++)
            if (lay->r_ref[g * EM_LANES + l] >= 0)
                fresh[lay->r_ref[g * EM_LANES + l]] = acc[l];
    }
}

/* A step's new abundances: each reference's sum over `count` (also into `kept`, where given);
 * returns the largest move, with *unsettled set where a move was NaN (numpy's max is NaN then,
 * never under the tolerance) and *changed where any abundance's bits changed. */
static double em_settle(const double *fresh, double *abundance, Py_ssize_t r, double count, double *kept,
                        int *unsettled, int *changed) {
    double moved = 0.0;
    for (Py_ssize_t j = 0; j < r; j++) {
        double v = fresh[j] / count, d = v - abundance[j];
        d = d < 0 ? -d : d;
        if (d != d)
            *unsettled = 1;
        else if (d > moved)
            moved = d;
        *changed |= memcmp(&v, &abundance[j], sizeof(double)) != 0;
        abundance[j] = v;
        if (kept != NULL)
            kept[j] = v;
    }
    return moved;
}

#define EM_THREAD_HITS 4096         /* fewer matches: one thread (starting others costs more than it saves) */
#define EM_HISTORY_LIMIT (1 << 23)  /* references x steps whose abundances the threads may keep (64 MB) */
#define EM_ROUND 16                 /* steps between the threads' meetings, where the parts are dealt anew */

/* the threads' meeting place (a mutex and a condition, where not every system has pthread barriers);
 * `gate` opens once every thread has started (1), or tells those that did to leave (-1) */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t moved;
    int waiting, round, gate;
} em_meeting;

static void em_meet(em_meeting *m, int threads) {
    pthread_mutex_lock(&m->lock);
    const int round = m->round;
    if (++m->waiting == threads) {
        m->waiting = 0;
        m->round++;
        pthread_cond_broadcast(&m->moved);
    } else
        while (m->round == round)
            pthread_cond_wait(&m->moved, &m->lock);
    pthread_mutex_unlock(&m->lock);
}

typedef struct {
    const em_layout *lay;
    double *abundance, *fresh, *pw; /* local references' (and the zero one), and the slots' */
    double count, tolerance;
    int iterations, threads;
    double *moved;          /* [thread][step]: the largest move of the references the thread stepped */
    unsigned char *nan;     /* [thread][step]: a move was NaN */
    int *published;         /* [thread]: steps whose moves are published (atomic) */
    int *stop;              /* the steps the one-thread EM takes (atomic; iterations until known) */
    double *history;        /* [step][local]: the abundances after each step (NULL on one thread) */
    unsigned int csr;       /* the caller's floating-point control (denormals), for the threads */
    em_meeting *meeting;
    int *dealt;             /* [thread][n_parts]: the parts a thread steps this round */
    int64_t *busy;          /* [thread][threads]: room for dealing them */
} em_shared;

typedef struct {
    em_shared *sh;
    int t;
} em_thread;

static int em_lowest_published(em_shared *sh) {
    int lowest = sh->iterations;
    for (int u = 0; u < sh->threads; u++) {
        int got = __atomic_load_n(&sh->published[u], __ATOMIC_ACQUIRE);
        if (got < lowest)
            lowest = got;
    }
    return lowest;
}

/* The parts thread t steps from step k0 on (into mine; returns how many): those still stepping then,
 * the most work first, each to the thread of the least work so far. Every thread deals alike (the
 * parts that settled before k0 are the same for all: they are set before the threads meet). */
static int em_deal(const em_layout *lay, int k0, int threads, int t, int *mine, int64_t *busy) {
    int n = 0;
    for (int u = 0; u < threads; u++)
        busy[u] = 0;
    for (Py_ssize_t p = 0; p < lay->n_parts; p++) {
        const int fixed = __atomic_load_n(&lay->part[p].fixed, __ATOMIC_RELAXED);
        if (fixed >= 0 && fixed < k0)
            continue;
        int best = 0;
        for (int u = 1; u < threads; u++)
            if (busy[u] < busy[best])
                best = u;
        busy[best] += lay->work[p];
        if (best == t)
            mine[n++] = (int)p;
    }
    return n;
}

/* Thread t's share of the steps until the one-thread EM's stop (see above) */
static void *em_thread_run(void *arg) {
    em_shared *sh = ((em_thread *)arg)->sh;
    const int t = ((em_thread *)arg)->t;
    const em_layout *lay = sh->lay;
    int *mine = sh->dealt + (Py_ssize_t)t * (lay->n_parts + 1);
#if defined(__SSE__)
    _mm_setcsr(sh->csr);
#endif
    if (sh->threads > 1) { /* every thread started, or leave */
        pthread_mutex_lock(&sh->meeting->lock);
        while (sh->meeting->gate == 0)
            pthread_cond_wait(&sh->meeting->moved, &sh->meeting->lock);
        const int gate = sh->meeting->gate;
        pthread_mutex_unlock(&sh->meeting->lock);
        if (gate < 0)
            return NULL;
    }
    int scanned = 0; /* steps whose stopping rule this thread has read */
    for (int k0 = 0; k0 < __atomic_load_n(sh->stop, __ATOMIC_ACQUIRE); k0 += EM_ROUND) {
        const int n_mine = em_deal(lay, k0, sh->threads, t, mine, sh->busy + (Py_ssize_t)t * sh->threads);
        const int k1 = k0 + EM_ROUND < sh->iterations ? k0 + EM_ROUND : sh->iterations;
        for (int step = k0; step < k1 && step < __atomic_load_n(sh->stop, __ATOMIC_ACQUIRE); step++) {
            double moved = 0.0;
            int unsettled = 0;
            for (int q = 0; q < n_mine; q++) {
                em_part *pt = &lay->part[mine[q]];
                if (pt->fixed >= 0)
                    continue;
                em_groups(lay->g_size, lay->g_at, lay->g_reads, lay->s_ref, lay->s_like, pt->g0, pt->g1,
                          sh->abundance, sh->pw, 1);
                em_refs(lay, pt->rg0, pt->rg1, sh->pw, sh->fresh);
                int changed = 0, part_nan = 0;
                double m = em_settle(sh->fresh + pt->ref0, sh->abundance + pt->ref0, pt->n_refs, sh->count,
                                     sh->history ? sh->history + (Py_ssize_t)step * lay->locals + pt->ref0 : NULL,
                                     &part_nan, &changed);
                moved = m > moved ? m : moved;
                unsettled |= part_nan;
                /* a NaN's bits can repeat, but its move never settles the numpy loop, which steps on to
                 * its cap: a part with one is stepped on too, so that its NaN keeps the EM going */
                if (!changed && !part_nan)
                    __atomic_store_n(&pt->fixed, step, __ATOMIC_RELAXED);
            }
            sh->moved[(Py_ssize_t)t * sh->iterations + step] = moved;
            sh->nan[(Py_ssize_t)t * sh->iterations + step] = (unsigned char)unsettled;
            __atomic_store_n(&sh->published[t], step + 1, __ATOMIC_RELEASE);
            /* the steps every thread has published: where the one-thread EM stops, if it does there */
            for (int lowest = em_lowest_published(sh); scanned < lowest; scanned++) {
                double all = 0.0;
                int any_nan = 0;
                for (int u = 0; u < sh->threads; u++) {
                    const double m = sh->moved[(Py_ssize_t)u * sh->iterations + scanned];
                    any_nan |= sh->nan[(Py_ssize_t)u * sh->iterations + scanned];
                    if (m > all)
                        all = m;
                }
                if (!any_nan && all < sh->tolerance) {
                    int want = scanned + 1, now = __atomic_load_n(sh->stop, __ATOMIC_ACQUIRE);
                    while (want < now && !__atomic_compare_exchange_n(sh->stop, &now, want, 0, __ATOMIC_ACQ_REL,
                                                                      __ATOMIC_ACQUIRE))
                        ;
                    break;
                }
            }
        }
        if (sh->threads > 1) /* every thread's steps of this round done: the stop, if it came, known to all */
            em_meet(sh->meeting, sh->threads);
    }
    return NULL;
}

/* n doubles, 0.0, from the start of a cache line (each part's from one of its own: see em_layout_build) */
static double *em_lines(Py_ssize_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, sizeof(double) * (size_t)n) != 0)
        return NULL;
    memset(p, 0, sizeof(double) * (size_t)n);
    return (double *)p;
}

/* em_classes' steps and posteriors (see above) on up to `threads` threads: the steps taken, -1 where
 * memory ran out. One thread where fewer than EM_THREAD_HITS matches (starting others costs more
 * than it saves) or the kept abundances would pass EM_HISTORY_LIMIT, or where a thread will not start. */
static int em_run(const int64_t *first, const int64_t *ref, const double *like, const double *weight, Py_ssize_t h,
                  Py_ssize_t r, Py_ssize_t classes, double count, int iterations, double tolerance, double *abundance,
                  double *posterior, int threads) {
    em_layout lay;
    if (!em_layout_build(&lay, first, ref, like, weight, h, r, classes))
        return -1;
    if (h < EM_THREAD_HITS || (double)lay.locals * iterations > EM_HISTORY_LIMIT || lay.n_parts < 2)
        threads = 1;
    if (threads > lay.n_parts)
        threads = (int)lay.n_parts;
    int stop = -1, started = 0;
    const Py_ssize_t steps_room = (Py_ssize_t)threads * iterations + 1;
    double *ab = em_lines(lay.locals + 1), *fresh = em_lines(lay.locals + 1), *pw = em_lines(lay.slots + 1);
    double *history = NULL; /* written before it is read: no need to clear it */
    if (threads > 1 && posix_memalign((void **)&history, 64, sizeof(double) * ((size_t)lay.locals * iterations + 1)) != 0)
        history = NULL;
    double *moved = calloc((size_t)steps_room, sizeof(double));
    unsigned char *nan = calloc((size_t)steps_room, 1);
    int *published = calloc((size_t)threads, sizeof(int));
    int *dealt = malloc(sizeof(int) * (size_t)threads * (lay.n_parts + 1));
    int64_t *busy = malloc(sizeof(int64_t) * (size_t)threads * threads);
    pthread_t *ids = calloc((size_t)threads, sizeof(pthread_t));
    em_thread *args = calloc((size_t)threads, sizeof(em_thread));
    em_meeting meeting = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0};
    if (!ab || !fresh || !pw || !moved || (threads > 1 && !history) || !nan || !published || !dealt || !busy || !ids ||
        !args)
        goto out;
    for (Py_ssize_t j = 0; j < lay.locals; j++)
        ab[j] = lay.global[j] >= 0 ? abundance[lay.global[j]] : 0.0; /* gaps, and the zero one, 0 */
    stop = iterations;
#if defined(__SSE__)
    unsigned int csr = _mm_getcsr();
#else
    unsigned int csr = 0;
#endif
    em_shared sh = {&lay, ab, fresh, pw, count, tolerance, iterations, threads, moved, nan, published, &stop, history,
                    csr, &meeting, dealt, busy};
    for (int t = 0; t < threads; t++)
        args[t] = (em_thread){&sh, t};
    /* threads 1, 2, ... of their own, thread 0 on this one; where one will not start, those that did
     * leave and every part steps here */
    for (started = 1; started < threads; started++)
        if (pthread_create(&ids[started], NULL, em_thread_run, &args[started]) != 0)
            break;
    if (threads > 1) {
        pthread_mutex_lock(&meeting.lock);
        meeting.gate = started < threads ? -1 : 1;
        pthread_cond_broadcast(&meeting.moved);
        pthread_mutex_unlock(&meeting.lock);
    }
    if (started < threads) {
        for (int t = 1; t < started; t++)
            pthread_join(ids[t], NULL);
        sh.threads = threads = 1;
        sh.history = NULL;
    }
    em_thread_run(&args[0]);
    for (int t = 1; t < threads; t++)
        pthread_join(ids[t], NULL);
    /* on threads, each part's abundances as they were after the one-thread EM's last step */
    for (Py_ssize_t p = 0; threads > 1 && stop > 0 && p < lay.n_parts; p++) {
        const em_part *pt = &lay.part[p];
        const int at = pt->fixed >= 0 && pt->fixed < stop - 1 ? pt->fixed : stop - 1;
        memcpy(ab + pt->ref0, history + (Py_ssize_t)at * lay.locals + pt->ref0, sizeof(double) * pt->n_refs);
    }
    for (Py_ssize_t j = 0; j < lay.locals; j++)
        if (lay.global[j] >= 0)
            abundance[lay.global[j]] = ab[j];
    /* the posteriors of the last abundances */
    em_groups(lay.g_size, lay.g_at, lay.g_reads, lay.s_ref, lay.s_like, 0, lay.groups, ab, pw, 0);
    for (Py_ssize_t s = 0; s < lay.slots; s++)
        if (lay.s_hit[s] >= 0)
            posterior[lay.s_hit[s]] = pw[s];
out:
    free(ab); free(fresh); free(pw); free(moved); free(history); free(nan); free(published); free(dealt); free(busy);
    free(ids); free(args);
    em_layout_free(&lay);
    return stop;
}

/* The typing EM over compatibility classes (genointerp.viral.typing.typer.run_em), its numpy loop's
 * arithmetic in its order (typer.em_steps_numpy), so the same bytes. Class c's hits are
 * first[c]:first[c + 1] (classes one after another, as run_em lays them out). Per step, each hit's
 * weight w = abundance[ref] * like; its class's sum of them, from 0.0 hit by hit (np.bincount's
 * order); its posterior w / that sum; each reference's new abundance, the sum of posterior *
 * weight (the class's reads) over the hits in order, from 0.0, over n. It stops after
 * `iterations` steps, or once no abundance moved by `tolerance` or more (a NaN keeps it going,
 * as numpy's max does). `abundance` (r,) is updated in place and `posterior` (h,) gets the last
 * abundance's posteriors; returns the steps taken. Part by part, on up to `threads` threads (see
 * em_run), the same bytes for any. */
static PyObject *em_classes(PyObject *self, PyObject *args) {
    Py_buffer first_b, ref_b, like_b, weight_b, abundance_b, posterior_b;
    Py_ssize_t n;
    int iterations, threads = 1;
    double tolerance;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nidw*w*|i", &first_b, &ref_b, &like_b, &weight_b, &n, &iterations, &tolerance,
                          &abundance_b, &posterior_b, &threads))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t h = ref_b.len / 8, r = abundance_b.len / 8, classes = first_b.len / 8 - 1;
    if (first_b.len % 8 || classes < 0 || ref_b.len != 8 * h || like_b.len != 8 * h || weight_b.len != 8 * h ||
        posterior_b.len != 8 * h || abundance_b.len != 8 * r || n < 1 || iterations < 0) {
        PyErr_SetString(PyExc_ValueError, "em_classes: arguments of the wrong size");
        goto done;
    }
    const int64_t *first = (const int64_t *)first_b.buf, *ref = (const int64_t *)ref_b.buf;
    const double *like = (const double *)like_b.buf, *weight = (const double *)weight_b.buf;
    double *abundance = (double *)abundance_b.buf, *posterior = (double *)posterior_b.buf;
    if (first[0] != 0 || first[classes] != h) {
        PyErr_SetString(PyExc_ValueError, "em_classes: the classes do not cover the hits");
        goto done;
    }
    for (Py_ssize_t c = 0; c < classes; c++)
        if (first[c + 1] < first[c]) {
            PyErr_SetString(PyExc_ValueError, "em_classes: the classes' hits out of order");
            goto done;
        }
    for (Py_ssize_t i = 0; i < h; i++)
        if (ref[i] < 0 || ref[i] >= r) {
            PyErr_SetString(PyExc_ValueError, "em_classes: a reference out of range");
            goto done;
        }
    int it;
    Py_BEGIN_ALLOW_THREADS
    it = em_run(first, ref, like, weight, h, r, classes, (double)n, iterations, tolerance, abundance, posterior,
                threads < 1 ? 1 : threads);
    Py_END_ALLOW_THREADS
    if (it < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyLong_FromLong(it);
done:
    PyBuffer_Release(&first_b);
    PyBuffer_Release(&ref_b);
    PyBuffer_Release(&like_b);
    PyBuffer_Release(&weight_b);
    PyBuffer_Release(&abundance_b);
    PyBuffer_Release(&posterior_b);
    return result;
}

/* splitmix64's finalizer: every bit of x reaches every bit */
static uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* read_classes(ref, behind, count, of, first[, mixed]) -> classes: the typing EM's compatibility
 * classes (genointerp.viral.typing.typer.class_of_reads): reads with the same matches, reference
 * and edits behind their best each (ref, behind int64 (H,): the reads' matches one after another,
 * count[i] of read i, int64 (n,)), numbered in order of their first read. of (n,) gets each read's
 * class, first (n,) each class's first read in its first `classes` places. A table of the classes'
 * first reads by a hash of their matches; a read whose hash is found is compared match by match
 * with that class's first read, so the classes are those of equal matches whatever the hash
 * (`mixed` 0: every read the same hash, for the tests). Where numpy's hash, np.unique's sorts and a
 * check of every read against its class's first took 19 ms for the 108,181 all-HPV reads. */
static PyObject *read_classes(PyObject *self, PyObject *args) {
    Py_buffer ref_b, behind_b, count_b, of_b, first_b;
    int mixed = 1;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*|p", &ref_b, &behind_b, &count_b, &of_b, &first_b, &mixed))
        return NULL;
    PyObject *result = NULL;
    int64_t *start = NULL, *table = NULL;
    uint64_t *hash = NULL;
    const Py_ssize_t h = ref_b.len / 8, n = count_b.len / 8;
    if (ref_b.len % 8 || behind_b.len != ref_b.len || count_b.len % 8 || of_b.len != count_b.len ||
        first_b.len != count_b.len) {
        PyErr_SetString(PyExc_ValueError, "read_classes: arguments of the wrong size");
        goto done;
    }
    const int64_t *ref = (const int64_t *)ref_b.buf, *behind = (const int64_t *)behind_b.buf;
    const int64_t *count = (const int64_t *)count_b.buf;
    int64_t *of = (int64_t *)of_b.buf, *first = (int64_t *)first_b.buf;
    start = malloc(sizeof(int64_t) * (n + 1));
    hash = malloc(sizeof(uint64_t) * (n + 1));
    Py_ssize_t size = 16;
    while (size < 2 * n)
        size *= 2;
    table = malloc(sizeof(int64_t) * size);
    if (!start || !hash || !table) {
        PyErr_NoMemory();
        goto done;
    }
    start[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (count[i] < 0 || count[i] > h - start[i]) {
            PyErr_SetString(PyExc_ValueError, "read_classes: the counts do not cover the matches");
            goto done;
        }
        start[i + 1] = start[i] + count[i];
    }
    if (start[n] != h) {
        PyErr_SetString(PyExc_ValueError, "read_classes: the counts do not cover the matches");
        goto done;
    }
    Py_ssize_t classes = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t s = 0; s < size; s++)
        table[s] = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t x = mix64((uint64_t)count[i]);
        for (int64_t j = start[i]; j < start[i + 1] && mixed; j++)
            x += mix64(((uint64_t)ref[j] << 32 ^ ((uint64_t)behind[j] & 0xFFFFFFFFULL)) ^ mix64((uint64_t)(j - start[i] + 1)));
        x = mixed ? mix64(x) : 0;
        hash[i] = x;
        Py_ssize_t s = (Py_ssize_t)(x & (uint64_t)(size - 1));
        for (;; s = (s + 1) & (size - 1)) { /* linear probing: the first empty slot, or the class */
            const int64_t c = table[s];
            if (c < 0) {
                table[s] = classes;
                first[classes] = i;
                of[i] = classes++;
                break;
            }
            const int64_t f = first[c];
            if (hash[f] == x && count[f] == count[i] &&
                !memcmp(ref + start[f], ref + start[i], sizeof(int64_t) * (size_t)count[i]) &&
                !memcmp(behind + start[f], behind + start[i], sizeof(int64_t) * (size_t)count[i])) {
                of[i] = c;
                break;
            }
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(classes);
done:
    free(start);
    free(hash);
    free(table);
    PyBuffer_Release(&ref_b);
    PyBuffer_Release(&behind_b);
    PyBuffer_Release(&count_b);
    PyBuffer_Release(&of_b);
    PyBuffer_Release(&first_b);
    return result;
}

/* Denormal floats flushed to zero (FTZ) and read as zero (DAZ) in the calling thread, as
 * torch.set_flush_denormal(True) does for torch: the folded XVir (genointerp.models.xvir_folded)
 * runs numpy in threads torch never touches, and a CPU that handles denormals in microcode slows
 * down many times where a softmax underflows. Returns whether the CPU has the flags (x86 SSE). */
static PyObject *flush_denormals(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
#if defined(__SSE__)
    _mm_setcsr(_mm_getcsr() | 0x8040); /* FTZ (bit 15) | DAZ (bit 6) */
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"seed_scan", seed_scan, METH_VARARGS, "Look every clean k-window of joined reads up in a seed index."},
    {"seed_buckets", seed_buckets, METH_VARARGS, "The fences' buckets seed_scan reads, made once per index."},
    {"id_lookup", id_lookup, METH_VARARGS, "A table of sorted ids by their hash, for seed_scan."},
    {"aa_scan", aa_scan, METH_VARARGS, "Look every amino-acid seed of one strand's codons up in an index."},
    {"share_place", share_place, METH_VARARGS, "Whether pairs of matched seeds lie on one diagonal of the references."},
    {"count_lanes_kind", count_lanes_kind, METH_VARARGS, "The form of diagonal_edits' counts and one-gap searches and the EM's class sums: 2 AVX2, 1 SSE2, 0 plain C (set where given)."},
    {"letter_counts", letter_counts, METH_VARARGS, "Letter counts of chosen reads joined by one separator."},
    {"best_per_contig", best_per_contig, METH_VARARGS, "Each read's best placement per contig, read by read."},
    {"diagonal_edits", diagonal_edits, METH_VARARGS, "Reads placed on the diagonals their matched seeds lie on."},
    {"strand_codons", strand_codons, METH_VARARGS, "The codon at every position of both strands of nucleotide codes."},
    {"stretch_letters", stretch_letters, METH_VARARGS, "The letters matched windows fix, each once, stretch by stretch."},
    {"window_entropy", window_entropy, METH_VARARGS, "The Shannon entropy of every window of rows of letter codes."},
    {"em_classes", em_classes, METH_VARARGS, "The typing EM's steps over compatibility classes."},
    {"read_classes", read_classes, METH_VARARGS, "The typing EM's compatibility classes: reads of the same matches."},
    {"flush_denormals", flush_denormals, METH_NOARGS, "Flush denormal floats to zero in this thread (x86)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "Viral index look-ups over reads; denormals flushed.",
                                     -1, methods};

PyMODINIT_FUNC PyInit__scan(void) {
    lanes_choose(lanes_best());
    return PyModule_Create(&module);
}
