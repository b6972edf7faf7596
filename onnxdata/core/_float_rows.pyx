# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""numpy's repr of many small float32 arrays at once, in C: the compiled twin of
``cli/array_text._floats`` and ``_joined`` (their numpy code is the reference, and
tests/cli/test_float_rows.py checks the two give the same text).

``show --limit all`` of a nested value prints tens of thousands of tiny float32 arrays;
numpy's float-to-text cast takes ~0.4 µs a value, and the padding and joining as numpy
string operations as much again. Here each value's digits are found exactly with
integers: a float32 ``x = m * 2**-s`` (``s`` from 4 to 37 in the positional range numpy
prints, 1e-4 to 1e6) is printed by numpy (Dragon4, "unique") with the fewest digits
after the point that name it alone: the fewest ``k`` with an integer ``d`` strictly inside
its rounding interval ``(x - ulp/2, x + ulp/2) * 10**k`` (the lower half-ulp halved at a
power of two), and of those ``d`` the nearest ``x * 10**k`` (halfway: the even one).
More than 8 digits: ``x`` rounded to 8 places, its trailing zeros cut (numpy's
precision 8, "maxprec"). Every
quantity fits in 64 bits: ``4m < 2**26`` and ``10**8 < 2**27``. A row with a value
exactly on its interval's boundary (never in this range: ``x * 10**s`` is a candidate
first), or whose line is longer than ``width``, is declined (None): the caller's numpy
route prints it.
"""

from libc.math cimport fabs, isfinite, signbit
from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

cdef enum:
    MOST = 8  # values in a row (array_text._MOST)
    CELL = 24  # a cell's characters at most: sign, 7 integer digits, the point, 8 digits
    LINE = 512

cdef uint64_t[9] POW10 = [1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000]


cdef inline uint64_t _nearest(uint64_t num, int s) noexcept nogil:
    """The integer nearest ``num * 2**-s``, halfway to the even one (as Dragon4 and
    "%.8f" round)."""
    cdef uint64_t d = num >> s, rest = num & ((<uint64_t>1 << s) - 1)
    cdef uint64_t half = <uint64_t>1 << (s - 1)
    if rest > half or (rest == half and (d & 1)):
        d += 1
    return d


cdef inline int _digits(float x, bint *neg, uint64_t *whole, uint64_t *frac,
                        int *places) noexcept nogil:
    """``x``'s integer part, fraction (``places`` digits) and sign as numpy prints it in
    positional notation: 0, or -1 where it cannot say (out of range, on a boundary)."""
    cdef uint32_t bits
    memcpy(&bits, &x, 4)
    neg[0] = (bits >> 31) != 0
    cdef int e = <int>((bits >> 23) & 0xFF)
    cdef uint64_t f = bits & 0x7FFFFF
    if e == 0 and f == 0:  # zero: "0." (numpy's "0.0" is printed "0.")
        whole[0] = 0
        frac[0] = 0
        places[0] = 0
        return 0
    if e == 0 or e == 0xFF:
        return -1  # subnormal (below 1e-4), inf, nan: not positional
    cdef uint64_t m = f | 0x800000
    cdef int s = 150 - e  # x = m * 2**-s
    if s < 4 or s > 40:
        return -1  # at or above 2**20 or below 2**-17: numpy's exponents, or not seen here
    cdef uint64_t lower = 4 * m - (1 if f == 0 and e > 1 else 2)
    cdef uint64_t upper = 4 * m + 2
    cdef int S = s + 2  # the interval is (lower, upper) * 2**-S
    cdef uint64_t below = (<uint64_t>1 << S) - 1, d = 0, lo, hi
    cdef int k
    for k in range(9):
        lo = lower * POW10[k]
        hi = upper * POW10[k]
        if (lo & below) == 0 or (hi & below) == 0:
            return -1  # a candidate on the boundary: inside or not is numpy's to say
        lo = (lo >> S) + 1
        hi = hi >> S
        if lo <= hi:
            d = _nearest(m * POW10[k], s)
            if d < lo:
                d = lo
            elif d > hi:
                d = hi
            break
    else:  # more than 8 digits: rounded to 8 places, as "%.8f" rounds, zeros cut
        k = 8
        d = _nearest(m * POW10[8], s)
        while k > 0 and d % 10 == 0:
            d //= 10
            k -= 1
    whole[0] = d // POW10[k]
    frac[0] = d % POW10[k]
    places[0] = k
    return 0


cdef inline int _put_uint(char *out, uint64_t v) noexcept nogil:
    """``v`` in decimal at ``out``: the characters written."""
    cdef char[24] tmp
    cdef int n = 0, i
    while True:
        tmp[n] = <char>(48 + v % 10)
        n += 1
        v //= 10
        if v == 0:
            break
    for i in range(n):
        out[i] = tmp[n - 1 - i]
    return n


def float32_rows(const float[:, ::1] rows, bytes suffix, int width):
    """numpy's repr of each row of ``rows`` (N arrays of 1 to 8 float32 values) in
    positional notation, as ``array([..., ...]`` + ``suffix``, or None where this cannot
    say it (a row numpy prints with exponents, nan or inf; a line over ``width``)."""
    cdef Py_ssize_t n = rows.shape[0], cols = rows.shape[1], r, c
    cdef bint[MOST] neg
    cdef uint64_t[MOST] whole, frac
    cdef int[MOST] places, int_len
    cdef char[MOST][CELL] ints
    cdef char[LINE] line
    cdef double v, size, high, low
    cdef bint ok
    cdef int left, right, at, pad, j, sl = len(suffix)
    cdef const char *sfx = suffix
    out = [None] * n
    if cols < 1 or cols > MOST or sl > 64:
        return out
    for r in range(n):
        high = 0.0
        low = 1e300
        ok = True
        for c in range(cols):
            v = <double>rows[r, c]
            if not isfinite(v):
                ok = False
                break
            size = fabs(v)
            if size > high:
                high = size
            if size > 0 and size < low:
                low = size
        # numpy's FloatingFormat: exponents when a nonzero value is below 1e-4 (float32's),
        # one is 1e6 or more, or the largest is over 1000 times the smallest
        if not ok or high >= 1e6 or low < <double>(<float>1e-4) or \
                (low < 1e300 and high / low > 1000.0):
            continue
        left = 0
        right = 0
        for c in range(cols):
            if _digits(rows[r, c], &neg[c], &whole[c], &frac[c], &places[c]) < 0:
                ok = False
                break
            at = 0
            if neg[c]:
                ints[c][0] = 45  # "-"
                at = 1
            at += _put_uint(&ints[c][at], whole[c])
            int_len[c] = at
            if at > left:
                left = at
            if places[c] > right:
                right = places[c]
        if not ok:
            continue
        memcpy(line, b"array([", 7)
        at = 7
        for c in range(cols):
            if c:
                line[at] = 44  # ", "
                line[at + 1] = 32
                at += 2
            for pad in range(left - int_len[c]):
                line[at] = 32
                at += 1
            memcpy(&line[at], ints[c], int_len[c])
            at += int_len[c]
            line[at] = 46  # "."
            at += 1
            for j in range(places[c] - 1, -1, -1):  # the fraction's digits, zeros kept
                line[at + j] = <char>(48 + (frac[c] % 10))
                frac[c] //= 10
            at += places[c]
            for pad in range(right - places[c]):
                line[at] = 32
                at += 1
        line[at] = 93  # "]"
        at += 1
        memcpy(&line[at], sfx, sl)
        at += sl
        if at <= width:
            out[r] = line[:at].decode("ascii")
    return out
