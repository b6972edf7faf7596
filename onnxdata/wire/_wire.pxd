# The varint reader both compiled loops share (wire/_walk.pyx, wire/_layouts.pyx): protobuf's rule,
# at most 10 bytes, bits past the 64th dropped; and a LEN field's length, upb's rule.
from libc.stdint cimport uint64_t


cdef inline bint _varint_at(const unsigned char *p, Py_ssize_t *i, Py_ssize_t end,
                            uint64_t *value) noexcept nogil:
    """The varint at ``p[i[0]]`` (False: cut off at ``end`` or longer than 10 bytes)."""
    cdef uint64_t result = 0
    cdef int shift = 0, k
    cdef Py_ssize_t j = i[0]
    cdef Py_ssize_t start = j
    cdef unsigned char b
    if end - j >= 10:  # all ten bytes there: no bound to check per byte (overlong varints)
        for k in range(10):
            b = p[j + k]
            result |= (<uint64_t>(b & 0x7F)) << (7 * k)  # (the tenth's shift, 63, keeps 1 bit)
            if b < 0x80:
                value[0] = result
                i[0] = j + k + 1
                return True
        return False
    while True:
        if j >= end or j - start >= 10:
            return False
        b = p[j]
        j += 1
        if shift < 64:
            result |= (<uint64_t>(b & 0x7F)) << shift
        if b < 0x80:
            value[0] = result
            i[0] = j
            return True
        shift += 7


cdef inline bint _length_at(const unsigned char *p, Py_ssize_t *i, Py_ssize_t end,
                            uint64_t *value) noexcept nogil:
    """A LEN field's length at ``p[i[0]]``: ``_varint_at``'s, and False where
    format.read_length refuses it (over 5 bytes where fewer hold it: upb refuses it)."""
    cdef Py_ssize_t start = i[0], n
    if not _varint_at(p, i, end, value):
        return False
    n = i[0] - start
    return n <= 5 or value[0] >= (<uint64_t>1) << (7 * (n - 1))


cdef inline bint _skip_group(const unsigned char *p, Py_ssize_t *i, Py_ssize_t end,
                             uint64_t number, int depth) noexcept nogil:
    """Past the group ``number`` whose start tag ends at ``p[i[0]]``, to after its end tag,
    as wire.skip_field takes it (``depth``: the message's, and groups nest at most
    100 - depth deep, as upb counts them); False where skip_field
    raises, or the group runs past ``end``: the Python walk then says what is wrong."""
    cdef uint64_t key, value
    cdef Py_ssize_t j = i[0], tag_at
    cdef int wt
    if depth >= 100:
        return False
    while True:
        if j >= end:
            return False
        tag_at = j
        if not _varint_at(p, &j, end, &key) or j - tag_at > 5:
            return False
        wt = key & 7
        if key >> 3 == 0 or key >> 3 > 0x1FFFFFFF or wt > 5:
            return False
        if wt == 4:
            if key >> 3 != number:
                return False
            i[0] = j
            return True
        if wt == 0:
            if not _varint_at(p, &j, end, &value):
                return False
        elif wt == 1 or wt == 5:
            j += 8 if wt == 1 else 4
            if j > end:
                return False
        elif wt == 2:
            if not _length_at(p, &j, end, &value) or value > <uint64_t>(end - j):
                return False
            j += <Py_ssize_t>value
        elif not _skip_group(p, &j, end, key >> 3, depth + 1):
            return False
