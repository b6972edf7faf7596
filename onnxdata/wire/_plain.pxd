# A tensor's few fields as the plain path reads them (engine.tensor's
# plain_fields_reference), as inline C: wire/_walk.pyx's plain_fields and plain_container
# (a small optional or sequence of such tensors) both read them.
from libc.stdint cimport uint64_t

from onnxdata.wire._wire cimport _length_at, _varint_at


cdef struct _Plain:
    # what plain_fields takes (engine.tensor's constants): the most dims, data_location's
    # EXTERNAL, the most bytes of packed dims, string_data entries, external_data entries
    Py_ssize_t max_ndim
    uint64_t external
    Py_ssize_t packed_dims
    Py_ssize_t most_strings
    Py_ssize_t most_entries


cdef inline object _plain_fields(const unsigned char *p, Py_ssize_t start, Py_ssize_t end,
                                 const _Plain *lim):
    """``plain_fields`` of ``p[start:end]``, which the caller checked is held."""
    cdef Py_ssize_t pos = start, i, stop
    cdef uint64_t value, code = 0, location = <uint64_t>-1
    cdef unsigned char key
    cdef Py_ssize_t raw = -1, raw_len = 0, typed_key = -1, typed_at = 0
    cdef Py_ssize_t max_ndim = lim.max_ndim, most_strings = lim.most_strings
    cdef Py_ssize_t most_entries = lim.most_entries
    cdef uint64_t external = lim.external
    cdef Py_ssize_t packed_dims = lim.packed_dims
    cdef list dims = [], entries = [], strings = []
    while pos < end:
        key = p[pos]
        if not (key == 0x08 or key == 0x0A or key == 0x10 or key == 0x22 or key == 0x32
                or key == 0x42 or key == 0x4A or key == 0x52 or key == 0x6A or key == 0x70):
            return None
        i = pos + 1
        if i >= end:
            return None
        if p[i] < 0x80:
            value = p[i]
            i += 1
        elif key & 7 == 2:
            if not _length_at(p, &i, end, &value):
                return None
        elif not _varint_at(p, &i, end, &value):
            return None
        pos = i
        if key == 0x08:
            if value >> 63 or len(dims) >= max_ndim:
                return None
            dims.append(value)
        elif key == 0x10:
            code = value
        elif key == 0x70:
            if value > external:
                return None
            location = value
        elif key == 0x0A:
            if value > <uint64_t>packed_dims or value > <uint64_t>(end - pos):
                return None
            stop = pos + <Py_ssize_t>value
            while i < stop:
                if not _varint_at(p, &i, stop, &value):
                    return None
                if value >> 63 or len(dims) >= max_ndim:
                    return None
                dims.append(value)
            pos = stop
        else:
            if value > <uint64_t>(end - pos):
                return None
            if key == 0x4A:
                raw, raw_len = pos, <Py_ssize_t>value
            elif key == 0x6A:
                if len(entries) >= most_entries:
                    return None
                entries.append((pos, pos + <Py_ssize_t>value))
            elif key == 0x32:
                strings.append((pos, pos + <Py_ssize_t>value))
                if len(strings) > most_strings:
                    return None
            elif key == 0x22 or key == 0x52:
                if typed_key >= 0:
                    return None
                typed_key, typed_at = key, pos
                raw_len = <Py_ssize_t>value
            pos += <Py_ssize_t>value
    return (code, dims, raw, raw_len, -1 if location == <uint64_t>-1 else location,
            entries, strings, (typed_key, typed_at) if typed_key >= 0 else None)


cdef inline bint _inline(object fields):
    """Whether ``_plain_fields`` took the tensor and its data is in the message: no
    external_data, and data_location DEFAULT or not given."""
    return fields is not None and not (<tuple>fields)[5] and (<tuple>fields)[4] <= 0
