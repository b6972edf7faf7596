# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled loop behind ``walk.scan``: one message's fields gathered by a schema table.

``scan(buf, base, pos, end, kinds, names, out, limit)`` walks the fields of the
message at ``[pos, end)`` whose bytes ``buf`` holds from offset ``base``, and
adds each to ``out`` (a ``walk.Fields``) exactly as ``walk.scan``'s Python loop
adds it: tags, lengths and varints read in C, the field's kind looked up in
``kinds`` (by field number; its name in ``names``), and the dicts, lists and
arrays of ``Fields`` filled through the C API. No tuple is made per field.

It returns the position where it stopped: ``end``, or the first field whose
head (tag, length or varint: at most 15 bytes) ``buf`` does not hold when more
bytes follow (the caller reads the next window and goes on), or ``-1`` when it
meets what it does not take: bytes that break the wire format, or a group it cannot
skip within ``buf`` (a group is an unknown field, skipped as wire.skip_field skips
it). The caller then runs the Python walk over the whole message again, which raises
the WireError protobuf's parser would (the same reason and offset): the Python walk
stays the one that says what is wrong.
"""

from array import array
from libc.stdint cimport uint64_t

from onnxdata.wire._wire cimport _skip_group, _varint_at

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

cdef int[7] WANT = [0, 0, 2, 2, 5, 1, 0]  # wire type each kind takes unpacked



def scan(const unsigned char[:] buf, Py_ssize_t base, Py_ssize_t pos, Py_ssize_t end,
         const signed char[:] kinds, list names, out, Py_ssize_t limit):
    return _scan(buf, base, pos, end, kinds, names, out, limit)


def scan_many(const unsigned char[:] buf, Py_ssize_t base, const unsigned long long[:] starts,
              const unsigned long long[:] ends, const signed char[:] kinds, list names, out,
              Py_ssize_t limit):
    """``scan`` of many occurrences of one message, all in ``buf`` (from offset ``base``),
    in order: True, or False where ``scan`` would return -1."""
    cdef Py_ssize_t k
    for k in range(starts.shape[0]):
        if _scan(buf, base, <Py_ssize_t>starts[k], <Py_ssize_t>ends[k], kinds, names, out,
                 limit) != <Py_ssize_t>ends[k]:
            return False
    return True


cdef Py_ssize_t _scan(const unsigned char[:] buf, Py_ssize_t base, Py_ssize_t pos,
                      Py_ssize_t end, const signed char[:] kinds, list names, out,
                      Py_ssize_t limit) except -2:
    cdef Py_ssize_t n = buf.shape[0]
    cdef Py_ssize_t hi = base + n
    cdef Py_ssize_t lim = (end if end < hi else hi) - base
    cdef const unsigned char *p = &buf[0] if n else NULL
    cdef Py_ssize_t i, tag_at
    cdef uint64_t key, value
    cdef uint64_t number
    cdef int wt, kind
    cdef Py_ssize_t a, b, size
    cdef dict scalars = out.scalars
    cdef dict counts = out.counts
    cdef dict many = out.many
    cdef dict pieces = out.pieces
    cdef dict last = out.last
    cdef list unknown = out.unknown
    cdef Py_ssize_t nkinds = kinds.shape[0]
    cdef object name, kept, run
    cdef Py_ssize_t count
    while pos < end:
        if pos + 15 > hi and hi < end:
            return pos  # the head may not be in buf: the caller reads on
        i = pos - base
        tag_at = pos
        key = buf[i]
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
            if i < lim and buf[i] < 0x80:
                value = buf[i]
                i += 1
            elif not _varint_at(p, &i, lim, &value):
                return -1
            a = <Py_ssize_t>0
            b = i + base
        elif wt == 2:
            if i < lim and buf[i] < 0x80:
                value = buf[i]
                i += 1
            elif not _varint_at(p, &i, lim, &value):
                return -1
            a = i + base
            if value > <uint64_t>(end - a):
                return -1
            b = a + <Py_ssize_t>value
        elif wt == 5 or wt == 1:
            a = i + base
            size = 4 if wt == 5 else 8
            if end - a < size:
                return -1
            b = a + size
        elif wt == 3:  # a group: an unknown field (no schema field is one), skipped whole
            a = i + base
            if not _skip_group(p, &i, lim, number, 0):
                return -1  # bad, too deep, or past buf: the Python walk's
            b = i + base
        else:
            return -1  # a stray end-group tag: the Python walk's
        pos = b
        kind = kinds[number] if number < <uint64_t>nkinds else -1
        if kind >= 0:
            name = names[number]
            if wt == WANT[kind]:
                if kind == SCALAR:
                    scalars[name] = value
                    continue
                if kind == ENUM:
                    if (value & 0xFFFFFFFF) > 1:
                        out.bad_enum = value  # a closed enum reads the low 32 bits
                    else:
                        scalars[name] = value
                    continue
                if kind == LAST:
                    last[name] = (a, b)
                    counts[name] = counts.get(name, 0) + 1
                    continue
                if kind == MANY:
                    count = counts.get(name, 0)
                    counts[name] = count + 1
                    if count == 0:
                        many[name] = [(a, b)]
                    elif count < KEEP:
                        (<list>many[name]).append((a, b))
                    elif count < COMPACT_PIECES:
                        kept = many[name]
                        if count == KEEP:
                            from onnxdata.wire.walk import RangeStore
                            many[name] = kept = RangeStore(kept)
                        kept.starts.append(a)
                        kept.ends.append(b)
                    else:
                        many[name] = None
                    continue
                # a number field's single value
                run = pieces.get(name)
                if run is None:
                    run = pieces[name] = []
                if type(run) is list:
                    count = len(<list>run)
                    if wt == 0 and count and (<tuple>(<list>run)[count - 1])[0] == 0:
                        (<tuple>(<list>run)[count - 1])[1].append(value)
                    elif len(<list>run) < KEEP_PIECES:
                        if wt == 0:
                            (<list>run).append((0, array("Q", [value]), 0))
                        else:
                            (<list>run).append((wt, a, b))
                    else:
                        from onnxdata.wire.walk import Compact
                        pieces[name] = run = Compact(run)
                if type(run) is not list:
                    if len(run.wts) < COMPACT_PIECES:
                        run.wts.append(wt)
                        run.starts.append(value if wt == 0 else a)
                        run.ends.append(b)
                    else:
                        out.over.add(name)
                continue
            if wt == 2 and (kind == VARINTS or kind == FIXED32S or kind == FIXED64S):
                run = pieces.get(name)
                if run is None:
                    run = pieces[name] = []
                if type(run) is list and len(<list>run) >= KEEP_PIECES:
                    from onnxdata.wire.walk import Compact
                    pieces[name] = run = Compact(run)
                if type(run) is list:
                    (<list>run).append((2, a, b))
                elif len(run.wts) < COMPACT_PIECES:
                    run.wts.append(2)
                    run.starts.append(a)
                    run.ends.append(b)
                else:
                    out.over.add(name)
                continue
        if len(unknown) < limit:
            unknown.append((number, wt))
        else:
            out.unknown_more += 1
    return pos
