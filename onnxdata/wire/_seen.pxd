# What the compiled layouts (wire/_layouts.pyx) keep as they go, as inline C: a growing
# byte buffer (Out) and a table of byte strings by hash (Seen).
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

cdef enum:
    MAX_SEEN = 4096  # entries of a table of byte strings (Seen): MAX_GROUPS layouts ...
    SLOTS = 8192  # ... in twice as many slots (a power of 2)


cdef struct Out:
    unsigned char *data
    Py_ssize_t size
    Py_ssize_t cap


cdef inline void _start(Out *o, Py_ssize_t cap) noexcept:
    o.data = <unsigned char *>malloc(cap)  # NULL: the caller raises MemoryError
    o.size = 0
    o.cap = cap


cdef inline int _put(Out *o, const unsigned char *p, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t cap
    cdef unsigned char *grown
    if o.size + n > o.cap:
        cap = 2 * o.cap if 2 * o.cap >= o.size + n else o.size + n + 64
        grown = <unsigned char *>realloc(o.data, cap)
        if grown == NULL:
            return -1
        o.data = grown
        o.cap = cap
    memcpy(o.data + o.size, p, n)
    o.size += n
    return 0



# Byte strings met so far, each with a group number: an open-addressed table by hash.
# One holds the layouts (``seen``'s, in C; their bytes in ``kept``), so elements of layouts
# that take turns (a map's 64 key sets, storage fields in turn) find their group without a
# bytes object and a dict lookup each. The other holds a call's small elements by their
# own bytes (in the input), so one written again anywhere in the call (a map's 64 values
# in turn) takes its group in a few dozen instructions, not laid out again in thousands.
cdef struct Seen:
    int *slot  # SLOTS of them: an entry, or -1
    uint64_t *hash  # by entry (MAX_SEEN of each)
    Py_ssize_t *at  # where the entry's bytes start (in ``kept``, or in the input)
    Py_ssize_t *size
    int *group
    int n
    Out kept


cdef inline uint64_t _hash(const unsigned char *d, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n
    cdef uint64_t w
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        memcpy(&w, d + i, 8)
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL
        h ^= h >> 32
        i += 8
    if i < n:
        w = 0
        memcpy(&w, d + i, n - i)
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL
    # murmur3's finalizer: every bit of the words reaches the low bits that pick a slot
    # (without it, 200,000 scalar tensors differing in their float's high bytes fell in
    # a few runs of slots and each lookup walked a thousand of them)
    h ^= h >> 33
    h *= 0xFF51AFD7ED558CCDULL
    h ^= h >> 33
    h *= 0xC4CEB9FE1A85EC53ULL
    h ^= h >> 33
    return h


cdef inline int _seen(Seen *t) except -1:
    t.slot = <int *>malloc(SLOTS * sizeof(int))
    t.hash = <uint64_t *>malloc(MAX_SEEN * sizeof(uint64_t))
    t.at = <Py_ssize_t *>malloc(MAX_SEEN * sizeof(Py_ssize_t))
    t.size = <Py_ssize_t *>malloc(MAX_SEEN * sizeof(Py_ssize_t))
    t.group = <int *>malloc(MAX_SEEN * sizeof(int))
    t.n = 0
    _start(&t.kept, 4096)
    if t.slot == NULL or t.hash == NULL or t.at == NULL or t.size == NULL or \
            t.group == NULL or t.kept.data == NULL:
        raise MemoryError()
    memset(t.slot, 0xFF, SLOTS * sizeof(int))
    return 0


cdef inline int _find(Seen *t, const unsigned char *base, const unsigned char *d,
                      Py_ssize_t n, uint64_t h) noexcept nogil:
    """The group of ``d[:n]`` (hash ``h``; entries' bytes at ``base + at``), or ``-1 -
    slot``: the free slot where it goes."""
    cdef Py_ssize_t s = <Py_ssize_t>(h & (SLOTS - 1))
    cdef int e
    while True:
        e = t.slot[s]
        if e < 0:
            return <int>(-1 - s)
        if t.hash[e] == h and t.size[e] == n and (n == 0 or
                                                   memcmp(base + t.at[e], d, n) == 0):
            return t.group[e]  # (no memcmp of nothing: in a mapping it cost 200 ns a call)
        s = (s + 1) & (SLOTS - 1)


cdef inline int _add(Seen *t, int free_slot, Py_ssize_t at, Py_ssize_t n, uint64_t h,
                     int g) noexcept nogil:
    """Note entry ``g`` (its bytes at ``at``) in the free slot ``_find`` gave; a full table
    notes no more (-1)."""
    if t.n >= MAX_SEEN:
        return -1
    t.slot[-1 - free_slot] = t.n
    t.hash[t.n] = h
    t.at[t.n] = at
    t.size[t.n] = n
    t.group[t.n] = g
    t.n += 1
    return 0


cdef inline int _keep(Seen *t, int free_slot, const unsigned char *d, Py_ssize_t n, uint64_t h,
               int g) except -1:
    """``_add`` of a layout, its bytes copied into ``kept``."""
    if _add(t, free_slot, t.kept.size, n, h, g) < 0 or _put(&t.kept, d, n) < 0:
        raise MemoryError()
    return 0


cdef inline void _free_seen(Seen *t) noexcept:
    free(t.slot)
    free(t.hash)
    free(t.at)
    free(t.size)
    free(t.group)
    free(t.kept.data)
