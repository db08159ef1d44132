"""The NumPy kernels of the convolution family, written once and used twice: their source
is the helper code the NumPy backend emits (``conv.py`` reads it with ``inspect``), and
run on object arrays of SymPy scalars they are the per-element forms ``explicit`` shows.

Each kernel is vectorised: ``sliding_window_view`` lays the windows out (im2col) and one
batched ``matmul`` per call contracts them with the weights (BLAS, one matrix product per
group); the transposed convolution scatters its columns back with one strided slice add
per kernel tap (col2im), never a loop over pixels. Padding is per side, ``(lo, hi)`` per
spatial dim; a negative amount crops. An input of rank ``nd + 1`` is unbatched.
"""
import numpy


def _conv_pad(a, pairs):
    """``a`` zero-padded (or, for negative amounts, cropped) on its last len(pairs) dims."""
    nd = len(pairs)
    crop = tuple(slice(max(-lo, 0), a.shape[a.ndim - nd + i] - max(-hi, 0))
                 for i, (lo, hi) in enumerate(pairs))
    a = a[(Ellipsis,) + crop]
    widths = [(max(lo, 0), max(hi, 0)) for lo, hi in pairs]
    if any(lo or hi for lo, hi in widths):
        a = numpy.pad(a, [(0, 0)] * (a.ndim - nd) + widths)
    return a


def _conv_sizes(sizes, kernel, stride, dilation):
    """Output sizes of a convolution of the padded sizes (0 where nothing fits)."""
    return tuple(max((L - d * (k - 1) - 1) // s + 1, 0)
                 for L, k, s, d in zip(sizes, kernel, stride, dilation))


def _conv_windows(x, kernel, stride, dilation):
    """The windows of the padded batched input x (N, C, *L): (N, C, *O, *kernel)."""
    nd = len(kernel)
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    win = numpy.lib.stride_tricks.sliding_window_view(x, span, axis=tuple(range(2, 2 + nd)))
    return win[(slice(None), slice(None)) + tuple(slice(None, None, s) for s in stride)
               + tuple(slice(None, None, d) for d in dilation)]


def _conv(x, w, stride, padding, dilation, groups):
    """Cross-correlation as torch's conv{1,2,3}d: x (N, C, *L) or (C, *L), w (F, C/groups,
    *k) -> (N, F, *O)."""
    nd = w.ndim - 2
    batched = x.ndim == nd + 2
    if not batched:
        x = x[None]
    kernel = w.shape[2:]
    x = _conv_pad(x, padding)
    n, out = x.shape[0], _conv_sizes(x.shape[2:], kernel, stride, dilation)
    if not n * int(numpy.prod(out)):      # nothing to compute (torch's empty result)
        y = numpy.zeros((n, w.shape[0]) + out, dtype=numpy.result_type(x, w))
        return y if batched else y[0]
    win = _conv_windows(x, kernel, stride, dilation)
    cg, fg = w.shape[1], w.shape[0] // groups
    rows = win.reshape((n, groups, cg) + out + kernel)
    rows = numpy.moveaxis(rows, 1, 0)
    positions = n * int(numpy.prod(out))
    rows = numpy.moveaxis(rows, 2, 2 + nd).reshape(groups, positions,
                                                   cg * int(numpy.prod(kernel)))
    cols = w.reshape(groups, fg, -1).transpose(0, 2, 1)
    y = numpy.matmul(rows, cols).reshape((groups, n) + out + (fg,))
    y = numpy.moveaxis(numpy.moveaxis(y, -1, 2), 0, 1).reshape((n, groups * fg) + out)
    return y if batched else y[0]


def _conv_transpose(x, w, stride, padding, dilation, groups):
    """The transposed convolution (torch's conv_transpose{1,2,3}d, the adjoint of _conv):
    x (N, C, *O) or (C, *O), w (C, F/groups, *k) -> (N, F, *L), with ``padding`` the
    (lo, hi) amounts cropped from the full result (negative: zeros appended)."""
    nd = w.ndim - 2
    batched = x.ndim == nd + 2
    if not batched:
        x = x[None]
    n, c, out = x.shape[0], x.shape[1], x.shape[2:]
    kernel, fg = w.shape[2:], w.shape[1]
    cg = c // groups
    positions = int(numpy.prod(out))
    xs = x.reshape((n, groups, cg, positions)).transpose(1, 2, 0, 3)
    xs = xs.reshape(groups, cg, n * positions)
    ws = w.reshape((groups, cg, -1)).transpose(0, 2, 1)
    cols = numpy.matmul(ws, xs).reshape((groups, fg) + kernel + (n,) + out)
    cols = numpy.moveaxis(cols, 2 + nd, 0).reshape((n, groups * fg) + kernel + out)
    full = tuple((o - 1) * s + d * (k - 1) + 1
                 for o, s, d, k in zip(out, stride, dilation, kernel))
    y = numpy.zeros((n, groups * fg) + full, dtype=cols.dtype)
    for tap in numpy.ndindex(*kernel):
        at = tuple(slice(d * j, d * j + s * (o - 1) + 1, s)
                   for j, d, s, o in zip(tap, dilation, stride, out))
        y[(slice(None), slice(None)) + at] += cols[(slice(None), slice(None)) + tap]
    y = _conv_pad(y, [(-lo, -hi) for lo, hi in padding])
    return y if batched else y[0]


def _conv_weight(x, g, kernel, stride, padding, dilation, groups):
    """The gradient of _conv with respect to its weight: x (N, C, *L) or (C, *L) and the
    output gradient g (N, F, *O) -> (F, C/groups, *kernel)."""
    nd = len(kernel)
    if x.ndim == nd + 1:
        x, g = x[None], g[None]
    n, c, f, out = x.shape[0], x.shape[1], g.shape[1], g.shape[2:]
    if not g.size:
        return numpy.zeros((f, c // groups) + tuple(kernel), dtype=numpy.result_type(x, g))
    win = _conv_windows(_conv_pad(x, padding), kernel, stride, dilation)
    win = win[(slice(None), slice(None)) + tuple(slice(0, o) for o in out)]
    cg, fg = c // groups, f // groups
    rows = win.reshape((n, groups, cg) + tuple(out) + tuple(kernel))
    rows = numpy.moveaxis(numpy.moveaxis(rows, 1, 0), 2, 2 + nd)
    positions = int(numpy.prod(out))
    rows = rows.reshape(groups, n * positions, cg * int(numpy.prod(kernel)))
    gs = g.reshape((n, groups, fg, positions)).transpose(1, 2, 0, 3)
    gs = gs.reshape(groups, fg, n * positions)
    return numpy.matmul(gs, rows).reshape((f, cg) + tuple(kernel))


def _unfold(x, kernel, stride, padding, dilation):
    """torch's F.unfold (im2col): x (N, C, *L) or (C, *L) -> (N, C*prod(kernel), prod(O))."""
    nd = len(kernel)
    batched = x.ndim == nd + 2
    if not batched:
        x = x[None]
    x = _conv_pad(x, padding)
    n, c = x.shape[:2]
    out = _conv_sizes(x.shape[2:], kernel, stride, dilation)
    if not n * c * int(numpy.prod(out)):
        y = numpy.zeros((n, c * int(numpy.prod(kernel)), int(numpy.prod(out))), dtype=x.dtype)
        return y if batched else y[0]
    win = _conv_windows(x, kernel, stride, dilation)
    positions = int(numpy.prod(win.shape[2:2 + nd]))
    win = numpy.moveaxis(win.reshape((n, c, positions) + tuple(kernel)), 2, -1)
    y = win.reshape(n, c * int(numpy.prod(kernel)), positions)
    return y if batched else y[0]


def _fold(x, size, kernel, stride, padding, dilation):
    """torch's F.fold (col2im), the adjoint of _unfold: x (N, C*prod(kernel), prod(O)) or
    unbatched -> (N, C, *size), overlapping values summed."""
    nd = len(kernel)
    batched = x.ndim == 3
    if not batched:
        x = x[None]
    span = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
    padded = tuple(sz + lo + hi for sz, (lo, hi) in zip(size, padding))
    out = tuple((p - e) // s + 1 for p, e, s in zip(padded, span, stride))
    n = x.shape[0]
    c = x.shape[1] // int(numpy.prod(kernel))
    cols = x.reshape((n, c) + tuple(kernel) + out)
    y = numpy.zeros((n, c) + padded, dtype=x.dtype)
    for tap in numpy.ndindex(*kernel):
        at = tuple(slice(d * j, d * j + s * (o - 1) + 1, s)
                   for j, d, s, o in zip(tap, dilation, stride, out))
        y[(slice(None), slice(None)) + at] += cols[(slice(None), slice(None)) + tap]
    y = _conv_pad(y, [(-lo, -hi) for lo, hi in padding])
    return y if batched else y[0]


# which kernels each kernel calls (emitted together as helpers)
USES = {"_conv": ("_conv_pad", "_conv_sizes", "_conv_windows"),
        "_conv_transpose": ("_conv_pad",), "_conv_weight": ("_conv_pad", "_conv_windows"),
        "_unfold": ("_conv_pad", "_conv_sizes", "_conv_windows"),
        "_fold": ("_conv_pad",)}
