# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled layouts of a sequence's elements (``compiled.element_groups``,
``layout_spans``): what every rule reads of an element, in C, so elements alike are
walked once (engine/by_layout.py) and their values built a group at a time
(engine/layout_values.py)."""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcmp, memcpy, memset

from onnxdata.wire._seen cimport (MAX_SEEN, Out, Seen, _add, _find, _free_seen, _hash, _keep,
                                   _put, _seen, _start)
from onnxdata.wire._wire cimport _length_at, _skip_group, _varint_at

cdef enum:
    MAX_FIELD = 0x1FFFFFFF  # protobuf's largest field number


# A sequence's elements grouped by what the rules read of them.
#
# An element's layout is its bytes with the contents no rule reads left out: a tensor's
# name, doc_string and string_data, the bytes of its raw_data, float_data and double_data
# (their lengths kept: the rules count them), a map's one string key (two or more are
# kept: they may repeat), and a map's int keys when all are in its key type's range and
# distinct (a marker and how many stand for them: a rule that names a key, a repeat or
# one out of range, cannot fire). Everything else is kept byte for byte (dims, data types,
# int32/int64/uint64 entries, other keys, external_data, unknown fields, the tags themselves),
# and a child message is its own layout, so two elements of one layout have the same
# verdict, problems (but for the index in their path), type and summary. The indices of
# a sparse tensor are kept whole, and so is a group. Bad wire or nesting past 100 levels
# gives no layout: the caller walks every element then.

cdef enum:
    L_TENSOR = 1
    L_SPARSE = 2
    L_SEQUENCE = 3
    L_MAP = 4
    L_OPTIONAL = 5
    L_KEPT_TENSOR = 6  # a sparse tensor's indices: every byte counts
    # what a layout keeps of a field
    KEEP_ALL = 0
    KEEP_LENGTH = 1  # tag and length
    KEEP_TAG = 2
    LAYOUT_DEPTH = 100  # protobuf's: deeper bytes are refused by the walk itself
    # the events of layout_spans: a content left out is (kind << 8 | number << 3 | wire
    # type, start, end); a message opening is (OPEN | kind, key type of a map, 0)
    OPEN = 1 << 16
    CLOSE = 2 << 16
    R_INT_KEY = (L_MAP << 8) | (3 << 3)
    # in the tree only, a tensor's data_type and data_location: (their tag, value, 0)


cdef inline int _child(int kind, uint64_t number) noexcept nogil:
    """The layout kind of message field ``number`` of ``kind`` (0: not a message we enter)."""
    if kind == L_SEQUENCE or kind == L_OPTIONAL:
        if number == 3:
            return L_TENSOR
        if number == 4:
            return L_SPARSE
        if number == 5:
            return L_SEQUENCE
        if number == 6:
            return L_MAP
        if number == 7:
            return L_OPTIONAL
    elif kind == L_MAP:
        if number == 5:
            return L_SEQUENCE
    elif kind == L_SPARSE:
        if number == 1:
            return L_TENSOR
        if number == 2:
            return L_KEPT_TENSOR
    return 0


cdef inline int _keeps(int kind, uint64_t number, int wt, bint one_key) noexcept nogil:
    """What a layout keeps of field ``number`` given with wire type ``wt``."""
    if kind == L_TENSOR:
        if wt == 2 and (number == 6 or number == 8 or number == 12):
            return KEEP_TAG  # string_data, name, doc_string
        if wt == 2 and (number == 9 or number == 4 or number == 10):
            return KEEP_LENGTH  # raw_data, packed float_data and double_data
        if (wt == 5 and number == 4) or (wt == 1 and number == 10):
            return KEEP_TAG  # one float or double
    elif kind == L_MAP and one_key and wt == 2 and number == 4:
        return KEEP_TAG  # the map's only string key
    return KEEP_ALL


#: Stands for an int key in range: 11 bytes of 0xFF are no varint (at most 10 bytes).
cdef unsigned char[11] FITS = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                               0xFF]


cdef inline bint _plain_varint(const unsigned char *p, Py_ssize_t a, Py_ssize_t b,
                               int64_t *value) noexcept nogil:
    """``[a, b)`` is one varint whose bits all fit in 64 (none is cut off): its value."""
    cdef Py_ssize_t i = a
    cdef uint64_t v
    if not _varint_at(p, &i, b, &v) or i != b:
        return False
    if b - a == 10 and p[b - 1] > 1:
        return False  # bits past the 64th: keep the bytes, let the rules read them
    value[0] = <int64_t>v
    return True


cdef inline bint _int_key_type(int key_type) noexcept nogil:
    """``key_type`` is one of MapProto's int key types (dtypes.KEY_TYPES but STRING)."""
    return 2 <= key_type <= 7 or key_type == 12 or key_type == 13


cdef inline bint _key_fits(int key_type, int64_t k) noexcept nogil:
    """An int key of MapProto ``key_type`` in its range (dtypes.key_range)."""
    if key_type == 7 or key_type == 13:  # INT64, UINT64: any 64 bits
        return True
    if key_type == 3:
        return -128 <= k <= 127
    if key_type == 2:
        return 0 <= k <= 255
    if key_type == 5:
        return -32768 <= k <= 32767
    if key_type == 4:
        return 0 <= k <= 65535
    if key_type == 6:
        return -2147483648LL <= k <= 2147483647LL
    if key_type == 12:
        return 0 <= k <= 4294967295LL
    return False


cdef enum:
    KEYS_ON_STACK = 64  # a map's int keys held without malloc (more: on the heap)
    KEYS_BY_PAIRS = 16  # ... and told distinct by comparing each pair (more: sorted)


cdef struct Keys:
    int64_t *data  # ``local``, or a heap copy once past KEYS_ON_STACK
    Py_ssize_t n
    Py_ssize_t cap
    bint plain  # every key one whole varint of at most 64 bits
    int64_t[KEYS_ON_STACK] local


cdef inline int _add_key(Keys *k, int64_t value) noexcept nogil:
    """Note one key: 0, or -1 (out of memory)."""
    cdef int64_t *grown
    if k.n == k.cap:
        if k.data == k.local:
            grown = <int64_t *>malloc(2 * k.cap * sizeof(int64_t))
            if grown != NULL:
                memcpy(grown, k.local, k.n * sizeof(int64_t))
        else:
            grown = <int64_t *>realloc(k.data, 2 * k.cap * sizeof(int64_t))
        if grown == NULL:
            return -1
        k.data = grown
        k.cap *= 2
    k.data[k.n] = value
    k.n += 1
    return 0


cdef inline int _add_keys(Keys *k, const unsigned char *p, Py_ssize_t a,
                          Py_ssize_t b) noexcept nogil:
    """Note the packed keys at ``[a, b)`` (a run not of whole plain varints: not plain)."""
    cdef Py_ssize_t i = a, at
    cdef int64_t value
    cdef uint64_t v
    while i < b and k.plain:
        at = i
        if not _varint_at(p, &i, b, &v):
            k.plain = False
        elif _plain_varint(p, at, i, &value):
            if _add_key(k, value) < 0:
                return -1
        else:
            k.plain = False
    return 0


cdef int _cmp_keys(const void *a, const void *b) noexcept nogil:
    cdef int64_t x = (<const int64_t *>a)[0]
    cdef int64_t y = (<const int64_t *>b)[0]
    return (x > y) - (x < y)


cdef bint _keys_fine(Keys *k, int key_type) noexcept nogil:
    """Every key noted in ``key_type``'s range and none a repeat (``k``'s keys reordered):
    nothing a rule says of them names one (containers.map_problems)."""
    cdef Py_ssize_t i, j
    if not k.plain or not _int_key_type(key_type):
        return False
    for i in range(k.n):
        if not _key_fits(key_type, k.data[i]):
            return False
    if k.n <= KEYS_BY_PAIRS:
        for i in range(k.n):
            for j in range(i):
                if k.data[i] == k.data[j]:
                    return False
        return True
    qsort(k.data, k.n, sizeof(int64_t), _cmp_keys)
    for i in range(1, k.n):
        if k.data[i] == k.data[i - 1]:
            return False
    return True


cdef inline Py_ssize_t _varints_in(const unsigned char *p, Py_ssize_t a,
                                   Py_ssize_t b) noexcept nogil:
    """How many whole varints ``[a, b)`` holds (a varint's last byte is below 0x80)."""
    cdef Py_ssize_t i, n = 0
    for i in range(a, b):
        n += p[i] < 0x80
    return n


cdef int _event(Out *ev, uint64_t role, uint64_t a, uint64_t b) noexcept nogil:
    """Note one event (role, a, b) for ``layout_spans``; 0, or -1 (out of memory)."""
    cdef uint64_t[3] item
    if ev == NULL:
        return 0
    item[0] = role
    item[1] = a
    item[2] = b
    return _put(ev, <unsigned char *>item, sizeof(item))


cdef int _map_keys(const unsigned char *p, Py_ssize_t pos, Py_ssize_t end, int *key_type,
                   int *string_keys, bint *int_keys_fine) noexcept nogil:
    """A map's key type (the last one written, as protobuf reads it), how many string keys
    it has, and whether its int keys (field 3, packed or not) all fit that type and are
    distinct (``_keys_fine``): 0, or -1 (bad wire, out of memory)."""
    cdef Keys k
    cdef Py_ssize_t i = pos, head
    cdef uint64_t key, value
    cdef int wt, r = 0
    k.data = k.local
    k.n = 0
    k.cap = KEYS_ON_STACK
    k.plain = True
    while i < end:
        if not _varint_at(p, &i, end, &key):
            r = -1
            break
        wt = key & 7
        if wt == 0:
            head = i
            if not _varint_at(p, &i, end, &value):
                r = -1
                break
            if key >> 3 == 2:
                key_type[0] = <int>(<int32_t>(value & 0xFFFFFFFFULL))
            elif key >> 3 == 3 and k.plain:
                r = _add_keys(&k, p, head, i)
        elif wt == 2:
            if not _length_at(p, &i, end, &value) or value > <uint64_t>(end - i):
                r = -1
                break
            head = i
            i += <Py_ssize_t>value
            string_keys[0] += (key >> 3) == 4
            if key >> 3 == 3 and k.plain:  # packed keys
                r = _add_keys(&k, p, head, i)
        elif wt == 1 or wt == 5:
            i += 8 if wt == 1 else 4
            if i > end:
                r = -1
        else:
            r = -1
        if r < 0:
            break
    if r == 0:
        int_keys_fine[0] = _keys_fine(&k, key_type[0])
    if k.data != k.local:
        free(k.data)
    return r


cdef int _layout(const unsigned char *p, Py_ssize_t pos, Py_ssize_t end, int kind, int depth,
                 Out *o, Out *ev=NULL, bint tree=False) noexcept nogil:
    """Add the layout of the ``kind`` message at ``[pos, end)`` to ``o``: 0, or -1 (none).
    With ``ev``, also note there the contents left out that a value reads (role, start,
    end; see ``layout_spans``), and with ``tree`` where each message opens and closes."""
    cdef Py_ssize_t i, tag_at, head, content, mark, size
    cdef uint64_t key, value, number
    cdef int wt, child, keeps, key_type = -1, string_keys = 0
    cdef bint one_key = False, int_keys_fine = False
    cdef unsigned char[4] length
    if depth > LAYOUT_DEPTH:
        return -1
    if kind == L_MAP and _map_keys(p, pos, end, &key_type, &string_keys,
                                   &int_keys_fine) < 0:
        return -1
    one_key = string_keys <= 1
    if tree and _event(ev, OPEN | kind, <uint64_t>(<uint32_t>key_type), 0) < 0:
        return -1
    i = pos
    while i < end:
        tag_at = i
        if not _varint_at(p, &i, end, &key) or i - tag_at > 5:
            return -1
        number = key >> 3
        wt = key & 7
        if number == 0 or number > MAX_FIELD or wt == 4 or wt > 5:
            return -1
        if wt == 3:  # a group (an unknown field): kept whole
            if not _skip_group(p, &i, end, number, depth) or \
                    _put(o, p + tag_at, i - tag_at) < 0:
                return -1
            continue
        if wt == 0:
            head = i
            if not _varint_at(p, &i, end, &value):
                return -1
            if int_keys_fine and number == 3:
                if _put(o, p + tag_at, head - tag_at) < 0 or _put(o, FITS, 11) < 0 or \
                        _event(ev, R_INT_KEY, head, i) < 0:
                    return -1
                continue
            if _put(o, p + tag_at, i - tag_at) < 0:
                return -1
            if tree and kind == L_TENSOR and (number == 2 or number == 14) and \
                    _event(ev, key, <uint32_t>value, 0) < 0:
                return -1  # data_type, data_location (the last one counts, as in protobuf)
            continue
        if wt == 1 or wt == 5:
            size = 8 if wt == 1 else 4
            if end - i < size:
                return -1
            i += size
            keeps = _keeps(kind, number, wt, one_key)
            if _put(o, p + tag_at, (i - size if keeps == KEEP_TAG else i) - tag_at) < 0:
                return -1
            if keeps == KEEP_TAG and _event(ev, (kind << 8) | (number << 3) | wt, i - size,
                                            i) < 0:
                return -1
            continue
        head = i  # past the tag
        if not _length_at(p, &i, end, &value) or value > <uint64_t>(end - i):
            return -1
        content = i
        i += <Py_ssize_t>value
        child = _child(kind, number)
        if child:
            # the tag, then the child's layout with its length in 4 bytes (not the
            # child's own length: that counts the contents left out)
            if _put(o, p + tag_at, head - tag_at) < 0 or _put(o, length, 4) < 0:
                return -1
            mark = o.size
            if _layout(p, content, i, child, depth + 1, o, ev, tree) < 0:
                return -1
            size = o.size - mark
            o.data[mark - 4] = size & 0xFF
            o.data[mark - 3] = (size >> 8) & 0xFF
            o.data[mark - 2] = (size >> 16) & 0xFF
            o.data[mark - 1] = (size >> 24) & 0xFF
            continue
        if int_keys_fine and number == 3:  # packed keys: the tag, that they fit, how many
            size = _varints_in(p, content, i)
            length[0] = size & 0xFF
            length[1] = (size >> 8) & 0xFF
            length[2] = (size >> 16) & 0xFF
            length[3] = (size >> 24) & 0xFF
            if _put(o, p + tag_at, head - tag_at) < 0 or _put(o, FITS, 11) < 0 or \
                    _put(o, length, 4) < 0 or _event(ev, R_INT_KEY, content, i) < 0:
                return -1
            continue
        keeps = _keeps(kind, number, wt, one_key)
        if keeps == KEEP_TAG:
            size = head - tag_at
        elif keeps == KEEP_LENGTH:
            size = content - tag_at
        else:
            size = i - tag_at
        if _put(o, p + tag_at, size) < 0:
            return -1
        if keeps != KEEP_ALL and not (kind == L_TENSOR and (number == 8 or number == 12)):
            if _event(ev, (kind << 8) | (number << 3) | wt, content, i) < 0:
                return -1  # (a name or doc_string is in no value)
    if tree and _event(ev, CLOSE, 0, 0) < 0:
        return -1
    return 0


cdef enum:
    MAX_GROUPS = 4096  # distinct layouts kept: past it grouping does not pay
    MAX_KEPT = 16777216  # bytes of distinct layouts kept
    RAW_BYTES = 512  # elements this small are looked up by their own bytes first
    # ... and one up to this size is compared with the element before (bigger ones are
    # mostly payload, which a layout skips and a compare would read: pages of a mapping)
    SAME_BYTES = 4096


cdef inline bint _same_bytes(const unsigned char *p, const unsigned long long[:] starts,
                             const unsigned long long[:] ends, Py_ssize_t base,
                             Py_ssize_t k) noexcept nogil:
    """Element ``k`` is byte for byte element ``k - 1`` (a value written again and again:
    96 levels of nested sequences cost 2.4 us each to lay out, a compare 0.05 us)."""
    cdef Py_ssize_t n = <Py_ssize_t>(ends[k] - starts[k])
    if n != <Py_ssize_t>(ends[k - 1] - starts[k - 1]):
        return False
    return n == 0 or memcmp(p + (<Py_ssize_t>starts[k] - base),
                            p + (<Py_ssize_t>starts[k - 1] - base), n) == 0


cdef int _layouts_seen(Seen *t, dict seen) except -1:
    """``t`` holding ``seen``'s layouts (group numbers 0 to len(seen) - 1)."""
    cdef const unsigned char *d
    cdef uint64_t h
    cdef Py_ssize_t n
    _seen(t)
    for layout, g in seen.items():
        d = <const unsigned char *><char *>layout
        n = len(layout)
        h = _hash(d, n)
        _keep(t, _find(t, t.kept.data, d, n, h), d, n, h, g)
    return 0




def layout_groups(const unsigned char[:] buf, Py_ssize_t base,
                  const unsigned long long[:] starts, const unsigned long long[:] ends,
                  Py_ssize_t lo, Py_ssize_t hi, int kind, int depth, dict seen,
                  int[:] ids, list firsts):
    """The group of elements ``lo`` to ``hi - 1`` (``[starts[k], ends[k])``, in ``buf``
    from offset ``base``) of layout kind ``kind`` at ``depth``, into ``ids``: one number
    per distinct layout, numbered as first met (``seen`` maps layouts to numbers, and
    goes on from an earlier call; ``firsts`` gets each new group's first element). False
    where some element has no layout, or there are too many distinct ones (MAX_GROUPS,
    MAX_KEPT)."""
    cdef Out o, prev, swap
    cdef Seen t, raw
    cdef Py_ssize_t k = lo, at = 0, n = 0
    cdef int r = 0, g = 0, free_raw = 0, prev_g = -1
    cdef uint64_t h = 0, rh = 0
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t kept = sum(len(x) for x in seen)
    _start(&o, 256)
    _start(&prev, 256)
    prev.size = -1
    memset(&t, 0, sizeof(Seen))
    memset(&raw, 0, sizeof(Seen))
    try:
        if o.data == NULL or prev.data == NULL:
            raise MemoryError()
        _layouts_seen(&t, seen)
        _seen(&raw)
        while k < hi:
            with nogil:  # elements of layouts met before, without the GIL
                while k < hi:
                    at = <Py_ssize_t>starts[k] - base
                    n = <Py_ssize_t>(ends[k] - starts[k])
                    free_raw = 0
                    if n <= RAW_BYTES:  # (the layout is the bytes' own: no walk)
                        rh = _hash(p + at, n)
                        g = _find(&raw, p, p + at, n, rh)
                        if g >= 0:
                            ids[k] = g
                            k += 1
                            continue
                        free_raw = g
                    elif n <= SAME_BYTES and k > lo and _same_bytes(p, starts, ends, base, k):
                        ids[k] = ids[k - 1]
                        k += 1
                        continue
                    o.size = 0
                    r = _layout(p, at, at + n, kind, depth, &o)
                    if r < 0:
                        break
                    if o.size == prev.size and not memcmp(o.data, prev.data, o.size):
                        g = prev_g  # (the layout last laid out: not always element k - 1's)
                    else:
                        h = _hash(o.data, o.size)
                        g = _find(&t, t.kept.data, o.data, o.size, h)
                        if g < 0:
                            break  # a new layout
                        swap = prev
                        prev = o
                        o = swap
                        prev_g = g
                    ids[k] = g
                    if free_raw:
                        _add(&raw, free_raw, at, n, rh, g)  # (past MAX_SEEN: not noted)
                    k += 1
            if k == hi:
                break
            if r < 0:
                return False
            if len(seen) >= MAX_GROUPS or kept + o.size > MAX_KEPT:
                return False
            number = len(seen)
            seen[PyBytes_FromStringAndSize(<char *>o.data, o.size)] = number
            firsts.append(k)
            kept += o.size
            _keep(&t, g, o.data, o.size, h, number)
            ids[k] = number
            if free_raw:
                _add(&raw, free_raw, at, n, rh, number)
            swap = prev
            prev = o
            o = swap
            prev_g = number
            k += 1
        return True
    finally:
        free(o.data)
        free(prev.data)
        _free_seen(&t)
        _free_seen(&raw)


def layout_spans(const unsigned char[:] buf, Py_ssize_t base,
                 const unsigned long long[:] starts, const unsigned long long[:] ends,
                 const long long[:] members, int kind, int depth):
    """The contents left out of the layouts of elements ``members`` (of one group: one
    layout) that a value reads, for building their values from their group's first:
    ``(tree, spans)``. ``tree`` is the first member's events as uint64 triples in wire
    order: ``(OPEN | kind, map key type, 0)``, ``(CLOSE, 0, 0)``, and per content
    ``(kind << 8 | number << 3 | wire type, start, end)`` (offsets in ``buf``);
    ``spans`` is every member's contents, the same roles in the same order, as bytes of
    triples. None where some member has no layout or other contents."""
    cdef Out o, ev, first
    cdef Py_ssize_t k, mark, n = members.shape[0], size = -1
    cdef int r = 0
    cdef long long m
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    _start(&o, 256)
    _start(&ev, 4096)
    _start(&first, 256)
    try:
        if o.data == NULL or ev.data == NULL or first.data == NULL:
            raise MemoryError()
        with nogil:
            for k in range(n):
                m = members[k]
                o.size = 0
                if k == 0:
                    r = _layout(p, <Py_ssize_t>starts[m] - base, <Py_ssize_t>ends[m] - base,
                                kind, depth, &o, &first, True)
                    if r < 0:
                        break
                mark = ev.size
                r = _layout(p, <Py_ssize_t>starts[m] - base, <Py_ssize_t>ends[m] - base,
                            kind, depth, &o, &ev, False)
                if r < 0:
                    break
                if size < 0:
                    size = ev.size - mark
                elif ev.size - mark != size:
                    r = -1
                    break
        if r < 0:
            return None
        return (PyBytes_FromStringAndSize(<char *>first.data, first.size),
                PyBytes_FromStringAndSize(<char *>ev.data, ev.size))
    finally:
        free(o.data)
        free(ev.data)
        free(first.data)


# --- the fields of a message and of the messages in it, counted (explorer/table.py) --------------

cdef enum:
    C_LEAF = 7  # a message with no message fields (an entry, a segment)


cdef inline int _counted_child(int kind, uint64_t number) noexcept nogil:
    """The kind of message field ``number`` of ``kind`` the byte table enters (0: none)."""
    if kind == L_SPARSE:
        return L_TENSOR if number == 1 or number == 2 else 0
    if kind == L_TENSOR:
        return C_LEAF if number == 3 or number == 13 or number == 16 else 0
    if kind == C_LEAF:
        return 0
    return _child(kind, number)


cdef long long _count(const unsigned char *p, Py_ssize_t pos, Py_ssize_t end, int kind,
                      int depth) noexcept nogil:
    """The fields of the message at ``[pos, end)`` and of those in it, or -1 where
    ``_count_upto`` stops before its end."""
    cdef Py_ssize_t stop
    cdef long long count = _count_upto(p, pos, end, kind, depth, &stop)
    return count if stop == end else -1


cdef long long _count_upto(const unsigned char *p, Py_ssize_t pos, Py_ssize_t end, int kind,
                           int depth, Py_ssize_t *stop) noexcept nogil:
    """The fields of ``[pos, end)`` (and of the messages in them) that are whole and sound,
    up to the first that is not (cut off at ``end``, bad wire, nesting past 100); ``stop``
    is where the last one counted ends."""
    cdef Py_ssize_t i = pos, tag_at
    cdef uint64_t key, value
    cdef int wt, child
    cdef long long count = 0, inner
    stop[0] = pos
    while i < end:
        tag_at = i
        if not _varint_at(p, &i, end, &key) or i - tag_at > 5:
            break
        wt = key & 7
        if key >> 3 == 0 or key >> 3 > MAX_FIELD or wt == 4 or wt > 5:
            break
        inner = 0
        if wt == 3:  # a group: one field, as the table counts it
            if not _skip_group(p, &i, end, key >> 3, depth):
                break
        elif wt == 0:
            if not _varint_at(p, &i, end, &value):
                break
        elif wt == 1 or wt == 5:
            i += 8 if wt == 1 else 4
            if i > end:
                break
        else:
            if not _length_at(p, &i, end, &value) or value > <uint64_t>(end - i):
                break
            child = _counted_child(kind, key >> 3)
            if child:
                if depth + 1 > LAYOUT_DEPTH:
                    break
                inner = _count(p, i, i + <Py_ssize_t>value, child, depth + 1)
                if inner < 0:
                    break
            i += <Py_ssize_t>value
        count += 1 + inner
        stop[0] = i
    return count


def count_fields(const unsigned char[:] buf, int kind, int depth):
    """The fields of the ``kind`` message in ``buf`` (at ``depth``) and of every message
    in it that the byte table enters, as ``table._Table.count`` counts them; -1 where
    it meets what the Python count must say (bad wire, nesting past 100)."""
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    cdef long long got
    with nogil:
        got = _count(p, 0, buf.shape[0], kind, depth)
    return got


def count_prefix(const unsigned char[:] buf, int kind, int depth):
    """``count_fields`` of the whole fields at the start of ``buf`` (a window of a message
    too long to read at once): ``(count, stop)``, ``stop`` where the last field counted
    ends. A field the window cuts off, or one the Python count must say something of (bad
    wire, nesting past 100), ends the count before it."""
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t stop
    cdef long long count
    with nogil:
        count = _count_upto(p, 0, buf.shape[0], kind, depth, &stop)
    return count, stop


# --- the first field a message's schema does not take (io/load_save.py's warning) -------------

cdef enum:
    U_WIRE_TYPES = 0x3F  # an entry's bits 0-5: the wire types the field may be given with
    U_CHILD_SHIFT = 8  # bits 8 and up: the index + 1 of a message field's message (0: none)


cdef Py_ssize_t _unknown_at(const unsigned char *p, Py_ssize_t pos, Py_ssize_t end,
                            const int32_t *table, Py_ssize_t width, Py_ssize_t message,
                            int depth, int64_t *trail) noexcept nogil:
    """The offset of the first field of the message at ``[pos, end)``, or of a message in
    it, that its schema in ``table`` does not take (an unknown number, or a known one of
    another wire type: protobuf sets either aside as unknown); -1 where there is none, -2
    where the bytes are bad (as ``wire.format.iter_fields`` refuses them: each field is
    read whole before it is looked at) or nest deeper than LAYOUT_DEPTH. Where there is
    one, ``trail[0]`` is the depth of its message, and ``trail[1 + 2 * d]``,
    ``trail[2 + 2 * d]`` the number and the index (among that number's occurrences) of
    the field taken at depth ``d``: the message fields down to it, then the field itself."""
    cdef Py_ssize_t i = pos, tag_at, at, inner
    cdef uint64_t key, value = 0, number
    cdef int wt
    cdef int32_t entry
    cdef const int32_t *row = table + message * width
    if depth > LAYOUT_DEPTH:
        return -2
    while i < end:
        tag_at = i
        if p[i] < 0x80:  # (a one-byte tag, as every field of ours has: no varint loop)
            key = p[i]
            i += 1
        elif not _varint_at(p, &i, end, &key) or i - tag_at > 5:
            return -2
        wt = key & 7
        number = key >> 3
        if number == 0 or number > MAX_FIELD or wt == 4 or wt > 5:
            return -2
        at = i
        if wt == 0:
            if i < end and p[i] < 0x80:
                i += 1
            elif not _varint_at(p, &i, end, &value):
                return -2
        elif wt == 1 or wt == 5:
            i += 8 if wt == 1 else 4
            if i > end:
                return -2
        elif wt == 3:
            if not _skip_group(p, &i, end, number, depth):
                return -2
        else:
            if not _length_at(p, &i, end, &value) or value > <uint64_t>(end - i):
                return -2
            at = i
            i += <Py_ssize_t>value
        entry = row[number] if number < <uint64_t>width else 0
        if not (entry >> wt) & 1:  # (a group, too: no field of ours is one)
            trail[0] = depth
            _step(p, pos, tag_at, number, depth, trail)
            return tag_at
        if wt == 2 and entry >> U_CHILD_SHIFT:
            inner = _unknown_at(p, at, i, table, width, (entry >> U_CHILD_SHIFT) - 1,
                                depth + 1, trail)
            if inner >= 0:
                _step(p, pos, tag_at, number, depth, trail)
            if inner != -1:
                return inner
    return -1


cdef void _step(const unsigned char *p, Py_ssize_t pos, Py_ssize_t tag_at, uint64_t number,
                int depth, int64_t *trail) noexcept nogil:
    """Put the field ``number`` at ``tag_at`` in ``trail`` at ``depth``: its number and how
    many fields of that number come before it from ``pos`` (read already: sound wire)."""
    cdef Py_ssize_t i = pos
    cdef uint64_t key, value
    cdef int64_t index = 0
    cdef int wt
    while i < tag_at:
        _varint_at(p, &i, tag_at, &key)
        wt = key & 7
        if key >> 3 == number:
            index += 1
        if wt == 0:
            _varint_at(p, &i, tag_at, &value)
        elif wt == 1 or wt == 5:
            i += 8 if wt == 1 else 4
        elif wt == 3:
            _skip_group(p, &i, tag_at, key >> 3, depth)
        else:
            _length_at(p, &i, tag_at, &value)
            i += <Py_ssize_t>value
    trail[1 + 2 * depth] = <int64_t>number
    trail[2 + 2 * depth] = index


def unknown_field_at(const unsigned char[:] buf, const int32_t[:] table, Py_ssize_t width,
                     Py_ssize_t message, int64_t[:] trail):
    """``unknown_fields.unknown_field_at_reference``: the offset of the first field of the
    ``message`` (its index in ``table``) in ``buf``, or of a message in it, that its schema
    does not take, and its place in ``trail`` (``_unknown_at``'s; it holds
    2 * (LAYOUT_DEPTH + 1) + 1 numbers); -1 where none, -2 where the bytes are bad.
    ``table[m * width + number]`` holds field ``number`` of message ``m``: the wire types
    it may come with (bits 0-5) and, for a message field, its message's index + 1 (bits 8
    and up)."""
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t got
    if trail.shape[0] < 2 * (LAYOUT_DEPTH + 1) + 1:
        raise ValueError("trail too short")
    with nogil:
        got = _unknown_at(p, 0, buf.shape[0], &table[0], width, message, 0, &trail[0])
    return got
