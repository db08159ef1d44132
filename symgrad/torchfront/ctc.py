"""F.ctc_loss on symbolic log-probabilities: the CTC forward (alpha) recursion over
constant targets and lengths, unrolled into a straight-line program in log space.

Each time step is one vectorised update of all (sample, extended-label state) pairs:
alpha_t = logaddexp(alpha_{t-1}, shift by 1, shift by 2 where a label may be skipped)
+ the log-probabilities of the states' labels (one batched matmul with the constant
one-hot of the extended label sequences gives them for every step at once). Impossible
states hold a large negative number rather than -inf, so no logaddexp meets -inf - -inf
and the gradient stays finite (their weight exp(-1e10) is exactly 0). The loss is
-logaddexp of the two final states at each sample's own input length.

torch's gradient with respect to ``log_probs`` is not the derivative of the loss: its
kernel adds exp(log_probs) at every step inside the input length (the derivative through
a log_softmax, assumed to precede, is the same either way). The formula adds a term with
exactly that gradient and value 0, so the gradients are torch's.
"""
import numpy

from ..core import ops as sgo
from ..core.shapes import fmt_shape
from ..errors import ParameterError, ShapeError
from .dispatch import constant_array, rank_of, shape_of, torch_op, unsupported

NAME = "torch.nn.functional.ctc_loss"
NEG = -1e10   # log of an impossible state: exp(NEG) is 0, differences stay finite


def _lengths(what, value, n):
    out = numpy.asarray(constant_array(NAME, value, f"{what} must be constant integers, not "
                                       "symbolic"), dtype=numpy.int64).reshape(-1)
    if out.shape != (n,):
        raise ShapeError(f"{NAME}: {what} must hold {n} lengths, got shape {out.shape}")
    return out


def _label_rows(targets, target_lengths, batch):
    ids = numpy.asarray(constant_array(NAME, targets, "targets must be constant integers (a "
                                       "torch tensor), not symbolic")).astype(numpy.int64)
    if ids.ndim == 1:   # concatenated (or one unbatched sequence)
        starts = numpy.concatenate([[0], numpy.cumsum(target_lengths)[:-1]])
        return [ids[s:s + k] for s, k in zip(starts, target_lengths)]
    ids = ids.reshape(batch, -1)
    return [row[:k] for row, k in zip(ids, target_lengths)]


def _tables(labels, classes, blank):
    """The constant tables of the recursion: one-hot of the extended label sequences
    (N, S, C), the additive masks of padded states, of allowed starts and of allowed
    skips (N, S), and each sample's number of states."""
    size = max(2 * len(lab) + 1 for lab in labels)
    hot = numpy.zeros((len(labels), size, classes))
    pad = numpy.full((len(labels), size), NEG)
    start = numpy.full((len(labels), size), NEG)
    skip = numpy.full((len(labels), size), NEG)
    for n, lab in enumerate(labels):
        ext = numpy.full(2 * len(lab) + 1, blank)
        ext[1::2] = lab
        hot[n, numpy.arange(len(ext)), ext] = 1
        pad[n, :len(ext)] = 0
        start[n, :min(2, len(ext))] = 0
        for s in range(3, len(ext), 2):
            if ext[s] != ext[s - 2]:
                skip[n, s] = 0
    return hot, pad, start, skip


def _shift(alpha, by):
    batch = shape_of(alpha)[0]
    head = sgo.as_tensor(numpy.full((batch, by), NEG))
    return sgo.concatenate([head, alpha[:, :-by]], axis=1)


def _pick(alphas, steps, states):
    """alphas (N, T, S) read at (n, steps[n], states[n]) (NEG where states[n] < 0)."""
    mask = numpy.zeros(tuple(shape_of(alphas)))
    missing = numpy.zeros(len(steps))
    for n, (t, s) in enumerate(zip(steps, states)):
        if s >= 0:
            mask[n, t, s] = 1
        else:
            missing[n] = NEG
    return sgo.sum(alphas * mask, axis=(1, 2)) + missing


@torch_op("F.ctc_loss")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The negative log-likelihood of the targets over all CTC alignments (torch's
    definition: (T, N, C) or unbatched (T, C) log-probabilities, padded (N, S) or
    concatenated targets, 'mean' divides each loss by its target length)."""
    if reduction not in ("none", "mean", "sum"):
        raise ParameterError(f"{NAME}: reduction must be 'none', 'mean' or 'sum', got "
                             f"{reduction!r}")
    unbatched = rank_of(log_probs) == 2
    if unbatched:
        log_probs = sgo.unsqueeze(log_probs, 1)
    shape = shape_of(log_probs)
    if len(shape) != 3 or not all(isinstance(d, int) for d in shape):
        raise ShapeError(f"{NAME}: needs log_probs of concrete shape (T, N, C) or (T, C), got "
                         f"{fmt_shape(shape)}")
    steps, batch, classes = shape
    in_len = _lengths("input_lengths", input_lengths, batch)
    tgt_len = _lengths("target_lengths", target_lengths, batch)
    labels = _label_rows(targets, tgt_len, batch)
    if (in_len > steps).any() or (in_len < 1).any():
        raise ShapeError(f"{NAME}: input_lengths {in_len.tolist()} must lie in 1..{steps}")
    repeats = numpy.array([int((lab[1:] == lab[:-1]).sum()) for lab in labels])
    feasible = in_len >= tgt_len + repeats
    if not feasible.all() and not zero_infinity:
        raise unsupported(NAME, (log_probs,), why="some target cannot be aligned within its "
                          "input length (the loss is infinite); pass zero_infinity=True")
    hot, pad, start, skip = _tables(labels, classes, blank)
    emit = sgo.matmul(sgo.swapaxes(log_probs, 0, 1), numpy.swapaxes(hot, 1, 2)) + pad[:, None]
    alpha = emit[:, 0] + start
    alphas = [alpha]
    for t in range(1, int(in_len.max())):
        prev = sgo.logaddexp(alpha, _shift(alpha, 1))
        alpha = sgo.logaddexp(prev, _shift(alpha, 2) + skip) + emit[:, t]
        alphas.append(alpha)
    alphas = sgo.stack(alphas, axis=1)
    last = in_len - 1
    ends = [2 * len(lab) for lab in labels]
    nll = -sgo.logaddexp(_pick(alphas, last, ends), _pick(alphas, last, [e - 1 for e in ends]))
    inside = (numpy.arange(steps)[:, None] < in_len[None, :])[..., None] * 1.0
    quirk = sgo.sum(sgo.exp(log_probs) * inside, axis=(0, 2))
    nll = nll + (quirk - sgo.stop_gradient(quirk))
    if not feasible.all():
        nll = sgo.where(feasible, nll, 0.0)
    if reduction == "mean":
        return sgo.mean(nll / numpy.maximum(tgt_len, 1).astype(float))
    if reduction == "sum":
        return sgo.sum(nll)
    return sgo.reshape(nll, ()) if unbatched else nll
