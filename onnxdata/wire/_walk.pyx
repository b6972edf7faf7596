# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled loop behind ``walk.scan``: one message's fields gathered by a schema table.

``scan(buf, base, pos, end, kinds, names, out, limit)`` walks the fields of the
message at ``[pos, end)`` whose bytes ``buf`` holds from offset ``base``, and
adds each to ``out`` (a ``walk.Fields``) exactly as ``walk.scan``'s Python loop
adds it: tags, lengths and varints read in C, the field's kind looked up in
``kinds`` (by field number; its name in ``names``), and the dicts, lists and
arrays of ``Fields`` filled through the C API. No tuple is made per field. One
difference: fixed-width values of one field one after another (a float_data written
a value at a time) are one ROW piece (``occurrences.ROW``), where the Python walk keeps a
piece per value; the tests compare the two a value at a time.

It returns the position where it stopped: ``end``, or the first field whose
head (tag, length or varint: at most 15 bytes), or the first group, ``buf`` does not
hold when more bytes follow (the caller reads the next window, a wider one where it
stopped at its start, and goes on), or ``-1`` when it
meets what it does not take: bytes that break the wire format, or a group it cannot
skip within the message (a group is an unknown field, skipped as wire.skip_field skips
it: ``depth``, the message's, leaves it 100 - depth levels, as upb counts them). The
caller then runs the Python walk over the whole message again, which raises the
WireError protobuf's parser would (the same reason and offset): the Python walk stays
the one that says what is wrong.
"""

from cpython.array cimport array, clone, resize_smart
from cpython.object cimport Py_SIZE
from libc.stdint cimport uint64_t
from libc.string cimport memset

from onnxdata.wire._plain cimport _inline, _Plain, _plain_fields
from onnxdata.wire._wire cimport _length_at, _skip_group, _varint_at

# The kinds of wire/walk.py's schemas (SCALAR ... FIXED64S), and data_location's closed enum.
cdef enum:
    SCALAR = 0
    VARINTS = 1
    LAST = 2
    MANY = 3
    FIXED32S = 4
    FIXED64S = 5
    ENUM = 6
    KEEP = 64
    KEEP_PIECES = 1024
    COMPACT_PIECES = 4194304
    MAX_FIELD = 0x1FFFFFFF
    GROW_AHEAD = 1 << 20  # most occurrences a MANY field's arrays are sized ahead for
    ROW = 16  # occurrences.ROW: fixed-width values one after another, each after a 1-byte tag

cdef int[7] WANT = [0, 0, 2, 2, 5, 1, 0]  # wire type each kind takes unpacked



cdef enum:
    MAX_KINDS = 64  # field numbers a schema table may hold (TensorProto's reach 16)


# What one call notes of a message's fields in C, written to its Fields once at the end
# (``_flush``): scalars, the last range of a LAST field, the counts of LAST and MANY
# fields, and the unknown fields past the limit. So a field costs no Python object.
cdef struct State:
    Py_ssize_t nseen  # numbers met, in ``order`` as first met
    int order[MAX_KINDS]
    unsigned char seen[MAX_KINDS]
    unsigned char has_scalar[MAX_KINDS]
    uint64_t scalar[MAX_KINDS]
    unsigned char has_last[MAX_KINDS]
    Py_ssize_t last_a[MAX_KINDS]
    Py_ssize_t last_b[MAX_KINDS]
    Py_ssize_t count[MAX_KINDS]  # a LAST or MANY field's count so far (from ``counts``)
    Py_ssize_t unknown_more


cdef inline int _push(array arr, unsigned long long v) except -1:
    """Append ``v`` to an array of "Q" (or "b") without a Python call."""
    cdef Py_ssize_t n = Py_SIZE(arr)
    resize_smart(arr, n + 1)
    if arr.ob_descr.itemsize == 8:
        arr.data.as_ulonglongs[n] = v
    else:
        arr.data.as_schars[n] = <signed char>v
    return 0


cdef int _flush(State *st, list names, out) except -1:
    """Write what ``st`` noted to ``out`` (a ``walk.Fields``)."""
    cdef Py_ssize_t j
    cdef int k
    cdef dict scalars = out.scalars, counts = out.counts, last = out.last
    for j in range(st.nseen):
        k = st.order[j]
        name = names[k]
        if st.has_scalar[k]:
            scalars[name] = st.scalar[k]
        if st.has_last[k]:
            last[name] = (st.last_a[k], st.last_b[k])
        if st.count[k] > 0:
            counts[name] = st.count[k]
    if st.unknown_more:
        out.unknown_more += st.unknown_more
    return 0


cdef inline void _init(State *st) noexcept:
    st.nseen = 0
    st.unknown_more = 0
    memset(st.seen, 0, MAX_KINDS)


cdef class _Into:
    """The containers of one ``walk.Fields`` that ``_scan`` fills, fetched once per call;
    ``cache`` holds, per field number, the arrays of its RangeStore (starts, ends, None)
    or Compact (starts, ends, wire types) once the call has taken them (``_take``)."""
    cdef object out
    cdef dict counts, many, pieces
    cdef list unknown, names, cache
    cdef const signed char[:] kinds
    # the kinds' memory, for a plain load per field (a memoryview taken per occurrence of a
    # merged message cost more than its fields)
    cdef const signed char *kind_of
    cdef Py_ssize_t nkinds
    # The arrays in ``cache`` as the loop appends to them (a MANY field's ranges, a number
    # field's pieces: starts or values, ends, and wire types), sized ahead to ``col_cap``
    # with ``col_n`` used (``col_on``: taken by this call), their true size set again by
    # ``_settle``: a few stores per occurrence, not a call each.
    cdef unsigned long long *col_s[MAX_KINDS]
    cdef unsigned long long *col_e[MAX_KINDS]
    cdef signed char *col_w[MAX_KINDS]  # (NULL for a RangeStore)
    cdef Py_ssize_t col_n[MAX_KINDS]
    cdef Py_ssize_t col_cap[MAX_KINDS]
    cdef bint col_on[MAX_KINDS]



cdef _Into _into(out, const signed char[:] kinds, list names):
    """The ``_Into`` of ``out`` (a cdef function: a typed memoryview handed to a Python
    ``__init__`` is made an object and taken apart again, 0.3 us a message)."""
    cdef _Into into = _Into.__new__(_Into)
    into.out = out
    into.counts = out.counts
    into.many = out.many
    into.pieces = out.pieces
    into.unknown = out.unknown
    into.kinds = kinds
    into.kind_of = &kinds[0] if kinds.shape[0] else NULL
    into.nkinds = kinds.shape[0]
    into.names = names
    into.cache = [None] * (3 * kinds.shape[0])
    return into


def scan(const unsigned char[:] buf, Py_ssize_t base, Py_ssize_t pos, Py_ssize_t end,
         const signed char[:] kinds, list names, out, Py_ssize_t limit, int depth=0):
    cdef State st
    cdef _Into into = _into(out, kinds, names)
    _init(&st)
    try:
        pos = _scan(&buf[0] if buf.shape[0] else NULL, buf.shape[0], base, pos, end, into,
                    limit, &st, depth)
    finally:
        _settle(into)
    if pos >= 0:
        _flush(&st, names, out)
    return pos


def scan_many(const unsigned char[:] buf, Py_ssize_t base, const unsigned long long[:] starts,
              const unsigned long long[:] ends, const signed char[:] kinds, list names, out,
              Py_ssize_t limit, int depth=0):
    """``scan`` of many occurrences of one message, all in ``buf`` (from offset ``base``),
    in order: True, or False where ``scan`` would return -1."""
    cdef Py_ssize_t k
    cdef State st
    cdef _Into into = _into(out, kinds, names)
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    _init(&st)
    try:
        for k in range(starts.shape[0]):
            if starts[k] == ends[k]:
                continue  # an empty occurrence (a merged one written 500,000 times)
            if _scan(p, buf.shape[0], base, <Py_ssize_t>starts[k], <Py_ssize_t>ends[k], into,
                     limit, &st, depth) != <Py_ssize_t>ends[k]:
                return False
    finally:
        _settle(into)
    _flush(&st, names, out)
    return True


cdef int _take(_Into into, int k, store) except -1:
    """Keep the arrays of field ``k``'s RangeStore or Compact in ``cache`` and point at
    them, full (the next append sizes them ahead)."""
    store._growable()
    into.cache[3 * k] = store.starts
    into.cache[3 * k + 1] = store.ends
    into.cache[3 * k + 2] = getattr(store, "wts", None)
    into.col_n[k] = into.col_cap[k] = Py_SIZE(<array>store.starts)
    into.col_on[k] = True
    _point(into, k)
    return 0


cdef int _grow(_Into into, int k, Py_ssize_t room) except -1:
    """Field ``k``'s arrays sized to ``room``."""
    cdef int j
    for j in range(3):
        if into.cache[3 * k + j] is not None:
            resize_smart(<array>into.cache[3 * k + j], room)
    into.col_cap[k] = room
    _point(into, k)
    return 0


cdef inline void _point(_Into into, int k) noexcept:
    into.col_s[k] = (<array>into.cache[3 * k]).data.as_ulonglongs
    into.col_e[k] = (<array>into.cache[3 * k + 1]).data.as_ulonglongs
    into.col_w[k] = NULL if into.cache[3 * k + 2] is None else \
        (<array>into.cache[3 * k + 2]).data.as_schars


cdef int _settle(_Into into) except -1:
    """Give the arrays the loop sized ahead their true size."""
    cdef Py_ssize_t k
    for k in range(into.nkinds):
        if into.col_on[k]:
            if into.col_cap[k] != into.col_n[k]:
                _grow(into, <int>k, into.col_n[k])
            into.col_on[k] = False
    return 0


cdef inline int _piece(_Into into, int k, int wt, uint64_t v, uint64_t e) except -1:
    """Append a piece (``wt``, ``v``, ``e``) to field ``k``'s Compact."""
    cdef Py_ssize_t n = into.col_n[k]
    if n >= into.col_cap[k]:
        _grow(into, k, n + (n >> 1) + 64)
    into.col_w[k][n] = <signed char>wt
    into.col_s[k][n] = v
    into.col_e[k][n] = e
    into.col_n[k] = n + 1
    return 0


cdef int _grow_many(_Into into, int k, Py_ssize_t count, Py_ssize_t a, Py_ssize_t end) except -1:
    """Room for more occurrences of the MANY field ``k`` (whose ``count``-th this is, at
    ``a``, in a message ending at ``end``): its RangeStore made (at KEEP) or taken, and
    its arrays sized ahead for as many more as the bytes left hold at the density so far
    (at most GROW_AHEAD more: a few small occurrences then big ones reserve little), so a
    merged message's 70,000 occurrences are one allocation, not 20 reallocations."""
    cdef Py_ssize_t n, room, first, ahead
    if not into.col_on[k]:
        if count == KEEP:
            from onnxdata.wire.walk import RangeStore
            into.many[into.names[k]] = RangeStore(into.many[into.names[k]])
        _take(into, k, into.many[into.names[k]])
    n = into.col_n[k]
    room = n + (n >> 1) + 64
    if n:
        first = <Py_ssize_t>into.col_s[k][0]
        if a > first and end > a:
            ahead = <Py_ssize_t>((<double>(end - a)) * count / (a - first)) + 64
            if ahead > GROW_AHEAD:
                ahead = GROW_AHEAD
            if n + ahead > room:
                room = n + ahead
    _grow(into, k, room)
    return 0


cdef Py_ssize_t _scan(const unsigned char *p, Py_ssize_t n, Py_ssize_t base, Py_ssize_t pos,
                      Py_ssize_t end, _Into into, Py_ssize_t limit, State *st,
                      int depth) except -2:
    """One message's fields (``p[pos - base:end - base]``, of ``n`` bytes held) into ``st``
    and ``into``. No Python object is touched here but in the helpers below, so a merged
    message's occurrence (three fields, a call each) costs no reference counting."""
    cdef Py_ssize_t hi = base + n
    cdef Py_ssize_t lim = (end if end < hi else hi) - base
    cdef Py_ssize_t i, tag_at, a, b, count, m
    cdef uint64_t key, value = 0
    cdef uint64_t number
    cdef int wt, kind, k
    cdef const signed char *kinds = into.kind_of
    cdef Py_ssize_t nkinds = into.nkinds
    if nkinds > MAX_KINDS:
        return -1  # (no schema is this wide) the Python walk's
    while pos < end:
        if pos + 15 > hi and hi < end:
            return pos  # the head may not be in buf: the caller reads on
        i = pos - base
        tag_at = pos
        key = p[i]
        if key < 0x80:
            i += 1
        else:
            if not _varint_at(p, &i, lim, &key) or i - (pos - base) > 5:
                return -1
        number = key >> 3
        wt = key & 7
        if number == 0 or number > MAX_FIELD or wt > 5:
            return -1
        if wt == 0:
            if i < lim and p[i] < 0x80:
                value = p[i]
                i += 1
            elif not _varint_at(p, &i, lim, &value):
                return -1
            a = <Py_ssize_t>0
            b = i + base
        elif wt == 2:
            if i < lim and p[i] < 0x80:
                value = p[i]
                i += 1
            elif not _length_at(p, &i, lim, &value):
                return -1
            a = i + base
            if value > <uint64_t>(end - a):
                return -1
            b = a + <Py_ssize_t>value
        elif wt == 5 or wt == 1:
            a = i + base
            m = 4 if wt == 5 else 8
            if end - a < m:
                return -1
            b = a + m
        elif wt == 3:  # a group: an unknown field (no schema field is one), skipped whole
            a = i + base
            if not _skip_group(p, &i, lim, number, depth):
                if hi < end:
                    return tag_at  # (maybe) past buf: the caller reads a wider window
                return -1  # bad or too deep: the Python walk's
            b = i + base
        else:
            return -1  # a stray end-group tag: the Python walk's
        pos = b
        kind = kinds[number] if number < <uint64_t>nkinds else -1
        if kind < 0:
            _unknown(into, st, number, wt, limit)
            continue
        k = <int>number
        if not st.seen[k]:
            _first(into, st, k, kind)
        if wt == WANT[kind]:
            if kind == SCALAR:
                st.scalar[k] = value
                st.has_scalar[k] = 1
            elif kind == LAST:
                st.last_a[k] = a
                st.last_b[k] = b
                st.has_last[k] = 1
                st.count[k] += 1
            elif kind == MANY:
                count = st.count[k]
                st.count[k] = count + 1
                m = into.col_n[k]
                if count >= KEEP and count < COMPACT_PIECES and m < into.col_cap[k]:
                    into.col_s[k][m] = <unsigned long long>a
                    into.col_e[k][m] = <unsigned long long>b
                    into.col_n[k] = m + 1
                else:
                    _many(into, k, count, a, b, end)
            elif kind == ENUM:
                if (value & 0xFFFFFFFF) > 1:
                    into.out.bad_enum = value  # a closed enum reads the low 32 bits
                else:
                    st.scalar[k] = value
                    st.has_scalar[k] = 1
            else:  # a number field's single value
                pos = _number(into, k, wt, value, a, b, tag_at, p, base, lim)
            continue
        if wt == 2 and (kind == VARINTS or kind == FIXED32S or kind == FIXED64S):
            _packed(into, k, a, b)
            continue
        _unknown(into, st, number, wt, limit)  # a known number of another wire type
    return pos


cdef int _first(_Into into, State *st, int k, int kind) except -1:
    """Field ``k`` met for the first time in this call."""
    st.seen[k] = 1
    st.order[st.nseen] = k
    st.nseen += 1
    st.has_scalar[k] = 0
    st.has_last[k] = 0
    st.count[k] = -1
    if kind == LAST or kind == MANY:
        st.count[k] = into.counts.get(into.names[k], 0)
    return 0


cdef int _unknown(_Into into, State *st, uint64_t number, int wt, Py_ssize_t limit) except -1:
    if len(into.unknown) < limit:
        into.unknown.append((number, wt))
    else:
        st.unknown_more += 1
    return 0


cdef int _many(_Into into, int k, Py_ssize_t count, Py_ssize_t a, Py_ssize_t b,
               Py_ssize_t end) except -1:
    """The ``count``-th occurrence of the MANY field ``k`` where ``_scan``'s store does not
    take it: a list's (the first KEEP), a RangeStore's that needs room, or none (past
    COMPACT_PIECES: found again by ``walk.Rewalked``)."""
    cdef Py_ssize_t m
    if count < KEEP:
        if count == 0:
            into.many[into.names[k]] = [(a, b)]
        else:
            (<list>into.many[into.names[k]]).append((a, b))
    elif count < COMPACT_PIECES:
        _grow_many(into, k, count, a, end)
        m = into.col_n[k]
        into.col_s[k][m] = <unsigned long long>a
        into.col_e[k][m] = <unsigned long long>b
        into.col_n[k] = m + 1
    else:
        into.many[into.names[k]] = None
        into.col_on[k] = False
    return 0


cdef Py_ssize_t _number(_Into into, int k, int wt, uint64_t value, Py_ssize_t a, Py_ssize_t b,
                        Py_ssize_t tag_at, const unsigned char *p, Py_ssize_t base,
                        Py_ssize_t lim) except -2:
    """A number field's single value (a varint, or a fixed-width value at ``[a, b)``) into
    its pieces; where the walk goes on (past a row of like values joined in place)."""
    cdef list cache = into.cache
    cdef Py_ssize_t count, row_end
    if cache[3 * k] is None:
        name = into.names[k]
        run = into.pieces.get(name)
        if run is None:
            run = into.pieces[name] = []
        if type(run) is list:
            count = len(<list>run)
            if wt == 0 and count and (<tuple>(<list>run)[count - 1])[0] == 0:
                _push(<array>(<tuple>(<list>run)[count - 1])[1], value)
                return b
            if count < KEEP_PIECES and not (
                    wt != 0 and count and a == tag_at + 1
                    and (<tuple>(<list>run)[count - 1])[0] == wt
                    and (<tuple>(<list>run)[count - 1])[2] == tag_at):
                # (a second fixed value right after the first: a ROW, in a Compact, which
                # it extends in place)
                if wt == 0:
                    (<list>run).append((0, array("Q", [value]), 0))
                else:
                    (<list>run).append((wt, a, b))
                return b
            into.pieces[name] = run = _compact_of(<list>run)
        _take(into, k, run)
    if wt != 0 and a == tag_at + 1:
        row_end = _extend_row(into, k, wt, tag_at, b, p, base, lim + base)
        if row_end >= 0:
            return row_end
    if into.col_n[k] < COMPACT_PIECES:
        _piece(into, k, wt, value if wt == 0 else <uint64_t>a, b)
    else:
        into.out.over.add(into.names[k])
    return b


cdef object _compact_of(list listed):
    """``Compact(listed)`` (the walk's first KEEP_PIECES pieces of a number field, as
    tuples) with its columns filled here: Compact's own loop over 1,024 tuples cost
    about 100 us, twice per reading set of a bogus map's keys or sparse dims."""
    from onnxdata.wire.walk import Compact
    cdef Py_ssize_t n = 0, at = 0
    cdef tuple piece
    cdef array values, wts, starts, ends
    cdef uint64_t v
    for piece in listed:
        n += len(<array>piece[1]) if piece[0] == 0 else 1
    wts = clone(array("b"), n, False)
    starts = clone(array("Q"), n, False)
    ends = clone(array("Q"), n, False)
    for piece in listed:
        if piece[0] == 0:  # (VARINT, array of values, 0): a piece per value
            values = <array>piece[1]
            for v in values.data.as_ulonglongs[:len(values)]:
                wts.data.as_schars[at] = 0
                starts.data.as_ulonglongs[at] = v
                ends.data.as_ulonglongs[at] = 0
                at += 1
        else:
            wts.data.as_schars[at] = <signed char>piece[0]
            starts.data.as_ulonglongs[at] = <uint64_t>piece[1]
            ends.data.as_ulonglongs[at] = <uint64_t>piece[2]
            at += 1
    store = Compact([])
    store.wts, store.starts, store.ends = wts, starts, ends
    return store


cdef int _packed(_Into into, int k, Py_ssize_t a, Py_ssize_t b) except -1:
    """A packed run ``[a, b)`` of a number field into its pieces."""
    if into.cache[3 * k] is None:
        name = into.names[k]
        run = into.pieces.get(name)
        if run is None:
            run = into.pieces[name] = []
        if type(run) is list and len(<list>run) >= KEEP_PIECES:
            into.pieces[name] = run = _compact_of(<list>run)
        if type(run) is list:
            (<list>run).append((2, a, b))
            return 0
        _take(into, k, run)
    if into.col_n[k] < COMPACT_PIECES:
        _piece(into, k, 2, <uint64_t>a, b)
    else:
        into.out.over.add(into.names[k])
    return 0


cdef inline Py_ssize_t _extend_row(_Into into, int k, int wt, Py_ssize_t tag_at, Py_ssize_t b,
                                   const unsigned char *p, Py_ssize_t base, Py_ssize_t stop):
    """Where the row ends, or -1: the fixed-width value of wire type ``wt`` ending at ``b``,
    whose one-byte tag is at ``tag_at``, joins the Compact's last piece for field ``k`` when
    that is a value or row of the same type ending at the tag (a float_data written one
    value at a time: one piece), and so do the same tag and value after it, up to
    ``stop`` (what ``p`` holds of the message), in one tight loop."""
    cdef Py_ssize_t last = into.col_n[k] - 1
    cdef Py_ssize_t size = 4 if wt == 5 else 8
    cdef Py_ssize_t j = b - base
    cdef unsigned char tag = p[tag_at - base]
    if last < 0 or into.col_e[k][last] != <unsigned long long>tag_at:
        return -1
    if into.col_w[k][last] != wt and into.col_w[k][last] != (wt | ROW):
        return -1
    stop -= base + size + 1
    while j <= stop and p[j] == tag:
        j += size + 1
    into.col_w[k][last] = <signed char>(wt | ROW)
    into.col_e[k][last] = <unsigned long long>(j + base)
    return j + base


def sample(const unsigned char[:] buf, Py_ssize_t end, Py_ssize_t most, Py_ssize_t long_value):
    """``compiled.short_runs``' counts of the first ``most`` fields of ``buf[:end]``,
    read as ``format.iter_fields`` reads them: ``(count, changes, fixed, long, cut)``;
    ``cut`` where a field breaks the wire format or runs past ``end`` (where iter_fields
    raises). In Python it was a tenth of the read of a 1 MB merged optional."""
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t i = 0, tag_at, count = 0, changes = 0, fixed = 0, longs = 0
    cdef uint64_t key, value = 0, number, last = 0  # (no field is number 0)
    cdef int wt
    if end > buf.shape[0]:
        end = buf.shape[0]
    if long_value < 0:  # (as 0: every LEN value is long, as in sample_reference)
        long_value = 0
    while i < end and count < most:
        tag_at = i
        if not _varint_at(p, &i, end, &key) or i - tag_at > 5:
            return count, changes, fixed, longs, True
        number = key >> 3
        wt = key & 7
        if number == 0 or number > MAX_FIELD or wt > 5 or wt == 4:
            return count, changes, fixed, longs, True
        if wt == 0:
            if not _varint_at(p, &i, end, &value):
                return count, changes, fixed, longs, True
        elif wt == 2:
            if not _length_at(p, &i, end, &value) or value > <uint64_t>(end - i):
                return count, changes, fixed, longs, True
            i += <Py_ssize_t>value
        elif wt == 1 or wt == 5:
            i += 8 if wt == 1 else 4
            if i > end:
                return count, changes, fixed, longs, True
        elif not _skip_group(p, &i, end, number, 0):
            return count, changes, fixed, longs, True
        count += 1
        changes += number != last
        fixed += wt == 0 or wt == 1 or wt == 5 or wt == 3 or number >= 16
        longs += wt == 2 and value >= <uint64_t>long_value
        last = number
    return count, changes, fixed, longs, False


# -- a small file's bytes at one instant (source._read_at_once's compiled twin)

cdef extern from *:
    """
    #if defined(__linux__)
    #include <errno.h>
    #include <fcntl.h>
    #include <sys/stat.h>
    #include <time.h>
    #include <unistd.h>
    static long long onnxdata_ns(struct timespec t) {
        return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
    }
    /* The bytes of the regular file at `path` if it holds at most `small` bytes, was last
       changed over `settled_ns` before the read began and did not change during it. Else
       the descriptor, opened as source.open_checked opens it and past its wait for writes
       (a FIFO, a device, a folder, a big file, one written just now: the caller goes on
       the Python way with it), or None where the open failed (the caller's open says
       why). */
    static PyObject *onnxdata_small_file(PyObject *path, Py_ssize_t small,
                                         long long settled_ns) {
        PyObject *encoded = NULL, *out = NULL;
        struct stat before, after;
        struct timespec now;
        Py_ssize_t size = 0;
        ssize_t got = -1;
        int fd = -1, regular = 0, ok = 0;
        if (!PyUnicode_FSConverter(path, &encoded)) { PyErr_Clear(); Py_RETURN_NONE; }
        const char *name = PyBytes_AS_STRING(encoded);
        Py_BEGIN_ALLOW_THREADS
        fd = open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0) {
    #ifdef SEEK_DATA
            (void)lseek(fd, 0, SEEK_DATA);  /* waits for a write under way */
    #endif
            regular = fstat(fd, &before) == 0 && S_ISREG(before.st_mode)
                && before.st_size <= small;
        }
        Py_END_ALLOW_THREADS
        Py_DECREF(encoded);
        if (fd < 0) Py_RETURN_NONE;
        if (regular) {
            size = (Py_ssize_t)before.st_size;
            out = PyBytes_FromStringAndSize(NULL, size + 1);
            if (out == NULL) PyErr_Clear();
        }
        if (out != NULL) {
            Py_BEGIN_ALLOW_THREADS
            if (clock_gettime(CLOCK_REALTIME, &now) == 0) {
                got = pread(fd, PyBytes_AS_STRING(out), (size_t)size + 1, 0);
                ok = got == size
                    && onnxdata_ns(before.st_mtim) < onnxdata_ns(now) - settled_ns
                    && onnxdata_ns(before.st_ctim) < onnxdata_ns(now) - settled_ns
                    && fstat(fd, &after) == 0 && after.st_size == before.st_size
                    && onnxdata_ns(after.st_mtim) == onnxdata_ns(before.st_mtim)
                    && onnxdata_ns(after.st_ctim) == onnxdata_ns(before.st_ctim);
            }
            Py_END_ALLOW_THREADS
            if (!ok) Py_CLEAR(out);
        }
        if (out == NULL) {
            PyObject *number = PyLong_FromLong(fd);
            if (number == NULL) close(fd);
            return number;
        }
        close(fd);
        if (_PyBytes_Resize(&out, size) != 0) { PyErr_Clear(); Py_RETURN_NONE; }
        return out;
    }
    #else
    static PyObject *onnxdata_small_file(PyObject *path, Py_ssize_t small,
                                         long long settled_ns) {
        (void)path; (void)small; (void)settled_ns;
        Py_RETURN_NONE;
    }
    #endif
    """
    object onnxdata_small_file(object path, Py_ssize_t small, long long settled_ns)


def small_file(path, Py_ssize_t small, long long settled_ns):
    """``source.open_checked``'s open and wait and ``_read_at_once`` in one call: the bytes of
    a regular file of at most ``small`` bytes whose stamps are older than ``settled_ns``
    before the read and the same after it; else the open descriptor, for the caller to go
    on with; or None where the open failed."""
    return onnxdata_small_file(path, small, settled_ns)


# -- the common tensor's few fields (engine.tensor's plain_fields_reference, compiled)

def plain_fields(const unsigned char[:] buf, Py_ssize_t start, Py_ssize_t end,
                 Py_ssize_t max_ndim, uint64_t external, Py_ssize_t packed_dims,
                 Py_ssize_t most_strings, Py_ssize_t most_entries):
    """``tensor.plain_fields_reference`` of the TensorProto at ``[start, end)`` of ``buf``
    (which holds all of it): ``(data_type, dims, raw_data's start, its length,
    data_location, external_data's ranges, string_data's ranges, (tag, start) of a packed
    float_data or double_data or None)``, or None where the plain path does not take it."""
    if start < 0 or end > buf.shape[0]:
        return None
    cdef _Plain limits = _Plain(max_ndim, external, packed_dims, most_strings, most_entries)
    return _plain_fields(&buf[0] if buf.shape[0] else NULL, start, end, &limits)


# -- a small optional or sequence of plain tensors (the engine's common valid case, compiled)

cdef inline bint _container_field(const unsigned char *p, Py_ssize_t *pos, Py_ssize_t end,
                                  unsigned char *key, Py_ssize_t *at, uint64_t *elem_type,
                                  bint *has_elem_type) noexcept:
    """One field of a SequenceProto or OptionalProto at ``pos[0]``, whose tag is ``key[0]``
    (one byte): elem_type (once) read into ``elem_type[0]``, or a length-delimited field
    whose bytes start at ``at[0]``; ``pos[0]`` then past it. False for anything else:
    elem_type twice, another wire type, a varint or length that is bad or runs past
    ``end``."""
    cdef Py_ssize_t i = pos[0] + 1
    cdef uint64_t value
    key[0] = p[pos[0]]
    if i >= end:
        return False
    if key[0] == 0x10:
        if has_elem_type[0] or not _varint_at(p, &i, end, &value):
            return False
        elem_type[0] = value
        has_elem_type[0] = True
        pos[0] = i
        return True
    if (key[0] & 7) != 2 or not _length_at(p, &i, end, &value) or value > <uint64_t>(end - i):
        return False
    at[0] = i
    pos[0] = i + <Py_ssize_t>value
    return True


cdef object _plain_tensors(const unsigned char *p, Py_ssize_t start, Py_ssize_t end,
                           Py_ssize_t most_tensors, const _Plain *lim):
    """The ``_plain_fields`` of each tensor_values of the SequenceProto at ``[start, end)``:
    a list of them, or None unless its fields are only elem_type TENSOR (once), name and
    at most ``most_tensors`` tensors that ``_plain_fields`` takes (``_inline``), each with
    a one-byte tag and a varint or length as ``_scan`` reads them."""
    cdef Py_ssize_t pos = start, at
    cdef uint64_t elem_type = 0
    cdef bint has_elem_type = False
    cdef unsigned char key
    cdef list out = []
    while pos < end:
        if not _container_field(p, &pos, end, &key, &at, &elem_type, &has_elem_type):
            return None
        if key == 0x10 or key == 0x0A:  # elem_type, name
            continue
        if key != 0x1A or len(out) >= most_tensors:  # (tensor_values)
            return None
        fields = _plain_fields(p, at, pos, lim)
        if not _inline(fields):
            return None
        out.append(fields)
    if not has_elem_type or elem_type != 1:
        return None
    return out


def plain_container(const unsigned char[:] buf, Py_ssize_t end, bint optional,
                    Py_ssize_t most_tensors, Py_ssize_t max_ndim, uint64_t external,
                    Py_ssize_t packed_dims, Py_ssize_t most_strings,
                    Py_ssize_t most_entries):
    """The plain tensors of the SequenceProto or (``optional``) OptionalProto at ``[0,
    end)`` of ``buf``, for ``Engine.run``'s twin of its walk: a sequence's list of ``plain_fields``
    (``_plain_tensors``); an optional's ``(elem_type, None)`` when empty, ``(1,
    plain_fields)`` for a tensor, ``(3, list)`` for a sequence of plain tensors. None where
    the bytes are anything else: another field, a field given twice (but name), a
    multi-byte tag, another elem_type, a tensor ``plain_fields`` does not take or whose
    data is external, more than
    ``most_tensors`` of them, bad wire. The engine then walks them as it always does."""
    cdef const unsigned char *p = &buf[0] if buf.shape[0] else NULL
    cdef Py_ssize_t pos = 0, i, at = -1, stop = 0
    cdef uint64_t elem_type = 0
    cdef bint has_elem_type = False
    cdef unsigned char key, held = 0
    cdef _Plain limits = _Plain(max_ndim, external, packed_dims, most_strings, most_entries)
    if end < 0 or end > buf.shape[0]:
        return None
    if not optional:
        return _plain_tensors(p, 0, end, most_tensors, &limits)
    while pos < end:
        if not _container_field(p, &pos, end, &key, &i, &elem_type, &has_elem_type):
            return None
        if key == 0x10 or key == 0x0A:  # elem_type, name
            continue
        if (key != 0x1A and key != 0x2A) or held:  # (tensor_value, sequence_value; two
            return None  # values: merged, or of two kinds)
        held, at, stop = key, i, pos
    if not has_elem_type:
        return None
    if held == 0:
        return (elem_type, None) if 1 <= elem_type <= 5 else None
    if held == 0x1A and elem_type == 1:
        fields = _plain_fields(p, at, stop, &limits)
        return (1, fields) if _inline(fields) else None
    if held == 0x2A and elem_type == 3:
        tensors = _plain_tensors(p, at, stop, most_tensors, &limits)
        return (3, tensors) if tensors is not None else None
    return None
