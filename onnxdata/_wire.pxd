# The varint reader both compiled loops share (_walk.pyx, _layouts.pyx): protobuf's rule,
# at most 10 bytes, bits past the 64th dropped.
from libc.stdint cimport uint64_t


cdef inline bint _varint_at(const unsigned char *p, Py_ssize_t *i, Py_ssize_t end,
                            uint64_t *value) noexcept nogil:
    """The varint at ``p[i[0]]`` (False: cut off at ``end`` or longer than 10 bytes)."""
    cdef uint64_t result = 0
    cdef int shift = 0
    cdef Py_ssize_t j = i[0]
    cdef Py_ssize_t start = j
    cdef unsigned char b
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
