# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""The compiled loops behind ``decode``: a packed varint run in one pass (``decode``,
``scan``), many small runs scanned in place (``scan_runs``) or joined (``join``), a run
of length-delimited fields split (``split``), and their values made bytes objects
(``strings``).

Varints of up to 8 bytes are decoded from unaligned little-endian 64-bit
loads: a varint's last byte is the first byte without the continuation bit (a
count of trailing zeros), the bytes after it are masked off and the 7-bit
groups are squeezed together in three mask-and-shift steps, with no branch on
the length. Each load yields two varints when both end in its 8 bytes (the
next load's address waits on the lengths, so this halves that chain), or eight
when all its bytes are one-byte varints.
Longer varints (9 and 10 bytes: negative int32/int64) and the last 7 bytes of a
run go one byte at a time.

``decode`` returns the count of values written, or ``-(start + 1)`` where
``start`` is the first byte of the first varint that is over 10 bytes or cut
off at the end; ``decode.decode_varints`` then raises the WireError the numpy
decoder raises for that run (the same reason and offset).
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

cdef extern from *:
    """
    #include <string.h>
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int onnxdata_ctz64(unsigned long long x) {
        unsigned long i; _BitScanForward64(&i, x); return (int)i;
    }
    #else
    static inline int onnxdata_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    #endif
    static inline unsigned long long onnxdata_load_le64(const unsigned char *p) {
        unsigned long long w; memcpy(&w, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
    #endif
        return w;
    }
    """
    int onnxdata_ctz64(unsigned long long x) nogil
    int __builtin_clzll(unsigned long long x) nogil
    unsigned long long onnxdata_load_le64(const unsigned char *p) nogil

ctypedef fused uint_out:
    uint32_t
    uint64_t

cdef uint64_t STOP_BITS = 0x8080808080808080ULL


cdef inline uint64_t _squeeze(uint64_t w) noexcept nogil:
    """The value of the varint in the low bytes of ``w`` (the bytes after it zero)."""
    cdef uint64_t x = w & 0x7F7F7F7F7F7F7F7FULL
    x = ((x & 0x7F007F007F007F00ULL) >> 1) | (x & 0x007F007F007F007FULL)
    x = ((x & 0x3FFF00003FFF0000ULL) >> 2) | (x & 0x00003FFF00003FFFULL)
    return ((x & 0x0FFFFFFF00000000ULL) >> 4) | (x & 0x000000000FFFFFFFULL)


cdef inline Py_ssize_t _run(const uint8_t *p, Py_ssize_t n, uint_out *out) noexcept nogil:
    cdef Py_ssize_t i = 0, k = 0, start
    cdef uint64_t w, stops, rest, value
    cdef uint8_t b
    cdef int shift, j
    while i < n:
        if i + 8 <= n:
            w = onnxdata_load_le64(p + i)
            stops = ~w & STOP_BITS  # the last byte of each varint in the word
            if stops == STOP_BITS:  # eight one-byte varints
                for j in range(8):
                    out[k + j] = <uint_out>((w >> (8 * j)) & 0xFF)
                k += 8
                i += 8
                continue
            if stops:
                # the first varint: its bytes up to its last (the lowest stop bit)
                out[k] = <uint_out>_squeeze(w & (stops ^ (stops - 1)))
                rest = stops & (stops - 1)
                if rest:  # a second one ends in the word too: no second load needed
                    out[k + 1] = <uint_out>_squeeze(
                        (w & (rest ^ (rest - 1))) >> (onnxdata_ctz64(stops) + 1))
                    k += 2
                    i += (onnxdata_ctz64(rest) >> 3) + 1
                else:
                    k += 1
                    i += (onnxdata_ctz64(stops) >> 3) + 1
                continue
        # 9 or 10 bytes, the last 7 bytes of the run, or a bad varint: a byte at a time
        start = i
        value = 0
        shift = 0
        while True:
            if i >= n or i - start == 10:
                return -(start + 1)
            b = p[i]
            i += 1
            value |= (<uint64_t>(b & 0x7F)) << shift
            if b < 0x80:
                break
            shift += 7
        out[k] = <uint_out>value
        k += 1
    return k


def decode(const uint8_t[::1] data, uint_out[::1] out):
    """Decode the varints of ``data`` into ``out`` (at least ``len(data)`` long): the count
    written, or ``-(start + 1)`` for the first varint over 10 bytes or cut off."""
    cdef Py_ssize_t n = data.shape[0], got
    if out.shape[0] < n:
        raise ValueError("decode needs an output of at least one value per input byte")
    if n == 0:
        return 0
    with nogil:
        got = _run(&data[0], n, &out[0])
    return got


cdef uint64_t LOW7 = 0x7F7F7F7F7F7F7F7FULL


cdef inline uint64_t _zero_bytes(uint64_t w) noexcept nogil:
    """Bit 7 of each byte of ``w`` that is 0x00 (exact: no borrow between bytes)."""
    return ~(((w & LOW7) + LOW7) | w) & STOP_BITS


cdef enum:
    SCAN_BUFFER = 8192  # bytes of short runs ``scan_runs`` joins on the stack, then scans


ctypedef struct Facts:
    Py_ssize_t count
    bint long_run
    bint negative
    bint zero


cdef void _scan(const uint8_t *p, Py_ssize_t n, Facts *f) noexcept nogil:
    """``scan`` of the ``n`` bytes at ``p`` (whole varints), its facts added to ``f``'s."""
    cdef Py_ssize_t i = 0, count = 0
    cdef uint64_t w, stops, zeros, odd, below
    cdef int run = 0, first, last_end, k, prev
    cdef bint long_run = False, negative = False, zero = f.zero, all80 = True
    cdef uint8_t b
    while i + 8 <= n:
        w = onnxdata_load_le64(p + i)
        stops = ~w & STOP_BITS  # bit 7 of each byte that ends a varint
        if stops == STOP_BITS and run == 0:
            # eight one-byte varints after a varint's end (text or small ints read as
            # varints): any 0x00 is a zero; ``run`` stays 0 and ``all80`` True (both
            # hold whenever ``run`` is 0)
            count += 8
            if not zero and _zero_bytes(w):
                zero = True
            i += 8
            continue
        # bit 7 of each continuation byte with low bits set (one that is not 0x80)
        odd = ((w & LOW7) + LOW7) & STOP_BITS & ~stops
        if stops == 0:
            run += 8
            if run >= 10:
                long_run = True
            all80 = all80 and odd == 0
            i += 8
            continue
        # the stop bits (bit 7 of bytes) summed into the top byte by one multiply: built
        # without -mpopcnt, __builtin_popcountll was a libgcc call, a quarter of a scan
        count += <Py_ssize_t>(((stops >> 7) * 0x0101010101010101ULL) >> 56)
        first = onnxdata_ctz64(stops) >> 3
        if run + first >= 10:
            long_run = True
        elif run + first == 9:  # the first varint is 10 bytes: its last byte's bit 0 is bit 63
            if p[i + first] & 1:
                negative = True
            elif all80 and (odd & ((1ULL << (8 * first)) - 1)) == 0:
                zero = True  # nine 0x80, then bits past 64 only (dropped, as protobuf does)
        zeros = _zero_bytes(w)
        if zeros and not zero:
            # a 0x00 ending a varint whose other bytes are all 0x80
            for k in range(8):
                if (zeros >> (8 * k + 7)) & 1:
                    # the varint's bytes before k: back to the previous end
                    below = stops & ((1ULL << (8 * k)) - 1)
                    if below:
                        prev = (63 - __builtin_clzll(below)) >> 3
                        if (odd >> (8 * (prev + 1))) & ((1ULL << (8 * (k - prev - 1))) - 1) == 0:
                            zero = True
                    elif all80 and (odd & ((1ULL << (8 * k)) - 1)) == 0:
                        zero = True
        last_end = (63 - __builtin_clzll(stops)) >> 3
        run = 7 - last_end
        all80 = last_end == 7 or (odd >> (8 * (last_end + 1))) == 0
        i += 8
    while i < n:  # the last bytes, one at a time
        b = p[i]
        if b < 0x80:
            count += 1
            if run == 9 and (b & 1):
                negative = True
            if all80 and (b == 0 or (run == 9 and not (b & 1))):
                zero = True
            run = 0
            all80 = True
        else:
            run += 1
            if run >= 10:
                long_run = True
            if b != 0x80:
                all80 = False
        i += 1
    f.count += count
    f.long_run = f.long_run or long_run
    f.negative = f.negative or negative
    f.zero = zero


def scan(const uint8_t[::1] data):
    """Facts of a run of whole varints in one pass, without decoding it: ``(count, long,
    negative, zero)`` -- how many varints end in it, whether ten continuation bytes come
    in a row (a varint over 10 bytes), whether a 10-byte varint's last byte has bit 0 set
    (bit 63: a negative int64) and whether a varint is zero (a 0x00 after nothing but
    0x80 bytes of its own, or nine 0x80 then an even byte: its bits past 64 dropped, as
    protobuf's decoders and ours drop them).

    Eight bytes at a time, with no branch on the bytes' values but for zero bytes (a
    bogus reading of float data as packed varints is random bytes, which would defeat a
    branch predictor per byte): the varints ending in a word are its bytes below 0x80
    (a popcount); a run of continuation bytes long enough to matter (9 or 10) must reach
    the word's first varint end from the words before, since a word holds at most 8.
    """
    cdef Facts f
    f.count = 0
    f.long_run = f.negative = f.zero = False
    if data.shape[0] == 0:
        return 0, False, False, False
    with nogil:
        _scan(&data[0], data.shape[0], &f)
    return f.count, bool(f.long_run), bool(f.negative), bool(f.zero)


def scan_runs(const uint8_t[::1] window, long long base, const long long[::1] starts,
              const long long[::1] ends):
    """``scan`` of the runs ``[starts[k], ends[k])`` (offsets from ``window``'s first byte
    at ``base``; in order, inside the window) as if ``join`` had joined them, each scanned
    in place (no copy): ``(count, long, negative, zero, bad)``, where ``bad`` is -1 or the
    first run whose last byte continues a varint (the facts are of the runs before it).
    Each run ends on a varint's last byte, so no varint spans two and scanning them one
    by one finds what one scan of their join finds. Short runs are joined SCAN_BUFFER
    bytes at a time on the stack and scanned together (a bogus reading's runs of a few
    bytes each: a scan call per run was slower than the old join of them all); longer
    ones are scanned in place."""
    cdef Py_ssize_t k, n = starts.shape[0], bad = -1, held = 0, size
    cdef long long a, b
    cdef Facts f
    cdef uint8_t buf[SCAN_BUFFER]
    f.count = 0
    f.long_run = f.negative = f.zero = False
    if ends.shape[0] != n:
        raise ValueError("scan_runs needs as many ends as starts")
    for k in range(n):
        if starts[k] - base < 0 or ends[k] - base > window.shape[0]:
            raise ValueError("scan_runs: a run lies outside the window")
    with nogil:
        for k in range(n):
            a = starts[k] - base
            b = ends[k] - base
            if b <= a:
                continue
            if window[b - 1] & 0x80:
                bad = k
                break
            size = <Py_ssize_t>(b - a)
            if held + size > SCAN_BUFFER or size > SCAN_BUFFER // 8:
                if held:
                    _scan(buf, held, &f)
                    held = 0
                if size > SCAN_BUFFER // 8:
                    _scan(&window[a], size, &f)
                    continue
            memcpy(&buf[held], &window[a], size)
            held += size
        if held:
            _scan(buf, held, &f)
    return f.count, bool(f.long_run), bool(f.negative), bool(f.zero), bad


def join(const uint8_t[::1] window, long long base, const long long[::1] starts,
         const long long[::1] ends, uint8_t[::1] out):
    """The runs ``[starts[k], ends[k])`` (offsets from ``window``'s first byte at
    ``base``; in order, inside the window) one after another in ``out`` (as long as the
    window): the bytes written, or ``-(k + 1)`` for the first run ``k`` whose last byte
    continues a varint (``field_values._part``)."""
    cdef Py_ssize_t k, n = starts.shape[0], at = 0, size
    cdef long long a, b
    if ends.shape[0] != n or out.shape[0] < window.shape[0]:
        raise ValueError("join needs as many ends as starts, and an output as long as the "
                         "window")
    with nogil:
        for k in range(n):
            a = starts[k] - base
            b = ends[k] - base
            size = <Py_ssize_t>(b - a)
            if size <= 0:
                continue
            if a < 0 or b > window.shape[0] or at + size > out.shape[0]:
                at = -(n + 1)  # (never from _part) a run outside the window
                break
            if window[b - 1] & 0x80:
                at = -(k + 1)
                break
            memcpy(&out[at], &window[a], size)
            at += size
    if at < -n:
        raise ValueError("join: a run lies outside the window, or runs overlap")
    return at


def split(const uint8_t[::1] data, Py_ssize_t pos, Py_ssize_t end, int tag,
          Py_ssize_t[::1] starts, Py_ssize_t[::1] ends, Py_ssize_t offset=0):
    """``decode.split_strings`` in one pass: the values of the run of length-delimited
    fields with the one-byte ``tag`` at ``pos`` (up to ``end``), the bounds of the first
    ``len(starts)`` written to ``starts`` and ``ends`` (none: a count), ``offset`` added:
    ``(count, stop, cut)``, where ``stop`` is where the run stops and ``cut`` says a
    value's length is cut off, over 10 bytes, longer than it needs past 5 bytes
    (``format.overlong_length``), or runs past ``end`` (the run stops at that value's
    tag)."""
    cdef Py_ssize_t count = 0, i, at
    cdef Py_ssize_t room = starts.shape[0]
    cdef uint64_t length
    cdef int shift, cut = 0
    cdef uint8_t b
    if end > data.shape[0] or pos < 0 or ends.shape[0] < room:
        raise ValueError("split: the run lies outside the data")
    with nogil:
        while pos < end and data[pos] == tag:
            i = pos + 1
            if i < end and data[i] < 0x80:  # a one-byte length: the common case
                length = data[i]
                i += 1
                cut = 0
            else:
                length = 0
                shift = 0
                cut = 1
                while i < end and shift < 70:
                    b = data[i]
                    if shift == 63 and b > 1:
                        break  # a length of 2**64 or more: past any end (cut)
                    length |= (<uint64_t>(b & 0x7F)) << shift
                    i += 1
                    if b < 0x80:
                        # (over 5 bytes where fewer hold it: upb refuses it, the walk says so)
                        cut = shift >= 35 and length < (<uint64_t>1) << shift
                        break
                    shift += 7
            if cut or length > <uint64_t>(end - i):
                cut = 1
                break
            at = i + <Py_ssize_t>length
            if count < room:
                starts[count] = i + offset
                ends[count] = at + offset
            count += 1
            pos = at
    return count, pos, bool(cut)


def strings(const uint8_t[::1] data, const long long[::1] starts, const long long[::1] ends,
            object[::1] out):
    """``decode.strings_array`` in C: ``out[i] = bytes(data[starts[i]:ends[i]])``, one bytes
    object made straight from the data each (numpy's way made fixed-width rows first:
    14 ms of a 1 MB tensor of short strings). False, with nothing written, where a span
    is not within ``data``."""
    cdef Py_ssize_t i, n = starts.shape[0], size = data.shape[0]
    cdef const char *p = <const char *>&data[0] if size else NULL
    if ends.shape[0] != n or out.shape[0] != n:
        return False
    for i in range(n):
        if starts[i] < 0 or ends[i] < starts[i] or ends[i] > size:
            return False
    for i in range(n):
        out[i] = PyBytes_FromStringAndSize(p + starts[i], ends[i] - starts[i]) \
            if ends[i] > starts[i] else b""
    return True
