"""Per-element forms (``explicit``) of the index ops of ``sorting``: an index is a SymPy
function of its slice's elements (``SortPosition(k, descending, x0, x1, ...)``) that
stays a compact symbol while the elements are symbols and becomes the index torch picks
once they are numbers; ``_imp_`` lets ``lambdify`` evaluate it (NumPy or mpmath scalars).
Ties and NaNs are placed as the ops place them.
"""
import numpy
import sympy


class _SliceIndex(sympy.Function):
    """An integer picked from the slice given as the trailing args."""

    lead = 0                     # args before the slice elements (positions, flags)

    @classmethod
    def eval(cls, *args):
        if all(a.is_number and a.is_real for a in args):
            return sympy.Integer(cls.pick(*[int(a) for a in args[:cls.lead]],
                                          [float(a) for a in args[cls.lead:]]))

    def _eval_is_integer(self):
        return True

    @classmethod
    def _imp_(cls, *args):
        return cls.pick(*[int(a) for a in args[:cls.lead]], list(args[cls.lead:]))


def _nan(v):
    return v != v


def _order(line, descending):
    """The stable order: NaN last, or first when descending."""
    if descending:
        return sorted(range(len(line)), key=lambda i: (not _nan(line[i]),
                                                       0 if _nan(line[i]) else -line[i]))
    return sorted(range(len(line)), key=lambda i: (_nan(line[i]),
                                                   0 if _nan(line[i]) else line[i]))


class SortPosition(_SliceIndex):
    """The position in the slice of the k-th element of its stable order."""

    lead = 2

    @staticmethod
    def pick(k, descending, line):
        return _order(line, descending)[k]


class MedianPosition(_SliceIndex):
    """The lower median's position: the first NaN if any (or, ignoring NaNs, the lower
    median of the rest)."""

    lead = 1

    @staticmethod
    def pick(ignore_nan, line):
        valid = sum(1 for v in line if not _nan(v))
        if ignore_nan:
            k = max(valid - 1, 0) // 2
        else:
            k = valid if valid < len(line) else (len(line) - 1) // 2
        return _order(line, False)[k]


class ModePosition(_SliceIndex):
    """torch.mode: the most frequent value (the smallest such), its last occurrence."""

    @staticmethod
    def pick(line):
        counts = [1 if _nan(v) else sum(1 for u in line if u == v) for v in line]
        return max(range(len(line)), key=lambda i: (
            counts[i], not _nan(line[i]), 0 if _nan(line[i]) else -line[i],
            -i if _nan(line[i]) else i))


class RunningPosition(_SliceIndex):
    """The last j <= k where the running maximum (minimum) up to k is reached."""

    lead = 2

    @staticmethod
    def pick(k, largest, line):
        best, at = None, 0
        for j, v in enumerate(line[:k + 1]):
            if _nan(v) or best is None or (not _nan(best) and (v >= best if largest
                                                                else v <= best)):
                best, at = v, j
        return at


def _fill(ctx, x, pick):
    shape = tuple(int(d) for d in ctx.shape)
    out = numpy.empty(shape, dtype=object)
    a = ctx.attrs["axis"]
    for p in numpy.ndindex(*shape):
        out[p] = pick(list(x[p[:a] + (slice(None),) + p[a + 1:]]), p[a])
    return out


def _flag(value):
    return sympy.Integer(int(bool(value)))


def argsort(ctx, x):
    start, down = int(ctx.attrs["start"]), _flag(ctx.attrs["descending"])
    return _fill(ctx, x, lambda line, k: SortPosition(start + k, down, *line))


def arg_extreme(ctx, x):
    down = _flag(ctx.attrs["largest"])
    return _fill(ctx, x, lambda line, k: SortPosition(0, down, *line))


def median_index(ctx, x):
    ignore = _flag(ctx.attrs["ignore_nan"])
    return _fill(ctx, x, lambda line, k: MedianPosition(ignore, *line))


def mode_index(ctx, x):
    return _fill(ctx, x, lambda line, k: ModePosition(*line))


def running_index(ctx, x):
    up = _flag(ctx.attrs["largest"])
    return _fill(ctx, x, lambda line, k: RunningPosition(k, up, *line))


def _round_half_even(r):
    lo = sympy.floor(r)
    frac = r - lo
    return sympy.Piecewise((lo + 1, frac > sympy.S.Half), (lo, frac < sympy.S.Half),
                           (lo + sympy.Mod(lo, 2), True))


def quantile_index(ctx, x, q):
    """The sorted position torch.quantile reads: q·(n - 1), rounded as asked."""
    q = numpy.asarray(q, dtype=object)[()]
    a = ctx.attrs

    def pick(line, k):
        rank = q * (len(line) - 1)
        rank = {"lower": sympy.floor, "higher": sympy.ceiling,
                "nearest": _round_half_even}.get(a["interpolation"], lambda r: r)(rank)
        return sympy.ceiling(rank) if a["above"] else sympy.floor(rank)
    return _fill(ctx, x, pick)
