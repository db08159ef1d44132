"""torch.nn.functional on symbolic Tensors: activations, losses and attention, written
with sg ops and registered in the torch front end's table (normalisations are in
``norm``, pooling and interpolation in ``pool``).

Only a few of these map onto one op with a rule (relu, softmax, log_softmax, the plain
cross_entropy, mse_loss and binary_cross_entropy_with_logits); the rest are compositions
(gelu, silu, attention, ...), so their gradients come from the rules of the
ops they are made of. They follow torch's definitions exactly: thresholds, clamps, label
smoothing, the zero rows of fully masked attention.
"""
import math

import sympy

from ..core import ops as sgo
from ..core.constructors import zeros as sg_zeros
from ..core.graph import Tensor
from ..errors import ParameterError, ShapeError
from .dispatch import (check_float_dtype, constant_array, legacy_reduction, rank_of, reduce_loss,
                       reject, shape_of, torch_op, unsupported)
from .gather import picked_loss, traced_ids, weighted_mean
from .pointwise import clamp, xlogy
from .shape import movedim, swap_axes
from .vector_norm import vector_norm


# ----- layers and activations ----------------------------------------------------------

@torch_op("F.linear")
def linear(input, weight, bias=None):
    out = sgo.matmul(input, sgo.transpose(weight) if rank_of(weight) == 2 else weight)
    return out if bias is None else out + bias


@torch_op("F.bilinear")
def bilinear(input1, input2, weight, bias=None):
    """x1ᵀ A_k x2 for every output k: (…, in1) (out, in1, in2) (…, in2) -> (…, out)."""
    left = sgo.matmul(sgo.unsqueeze(sgo.unsqueeze(input1, -2), -3), weight)
    out = sgo.squeeze(sgo.matmul(left, sgo.unsqueeze(sgo.unsqueeze(input2, -2), -1)), (-2, -1))
    return out if bias is None else out + bias


@torch_op("F.relu6")
def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0)


@torch_op("F.hardtanh")
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val) with torch's gradient: 0 at the bounds themselves (where
    clamp's is 1), and passed on at nan."""
    return sgo.where(sgo.le(input, min_val), min_val,
                     sgo.where(sgo.ge(input, max_val), max_val, input))


@torch_op("F.prelu")
def prelu(input, weight):
    """x where x > 0, else weight x; one weight per channel (dim 1) or one in all."""
    if rank_of(weight) == 1 and shape_of(weight)[0] != 1 and rank_of(input) > 1:
        weight = sgo.reshape(weight, (shape_of(weight)[0],) + (1,) * (rank_of(input) - 2))
    return sgo.where(sgo.gt(input, 0), input, weight * input)


@torch_op("F.leaky_relu")
def leaky_relu(input, negative_slope=0.01, inplace=False):
    return sgo.where(sgo.gt(input, 0), input, negative_slope * input)


def _negative_part(input, fn):
    """x where x > 0 (and at nan), else fn(x), with fn evaluated at 0 where x > 0: the
    unused branch never sees inf, so no 0·inf reaches the gradient (torch's ELU
    backward picks a branch per element)."""
    negative = sgo.le(input, 0)
    return sgo.where(negative, fn(sgo.where(negative, input, 0.0)), input)


@torch_op("F.elu")
def elu(input, alpha=1.0, inplace=False):
    return _negative_part(input, lambda x: alpha * sgo.expm1(x))


@torch_op("F.celu")
def celu(input, alpha=1.0, inplace=False):
    return _negative_part(input, lambda x: alpha * sgo.expm1(x / alpha))


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


@torch_op("F.selu")
def selu(input, inplace=False):
    return _SELU_SCALE * elu(input, _SELU_ALPHA)


@torch_op("F.gelu")
def gelu(input, approximate="none"):
    """x Φ(x) with Φ(x) = (1 + erf(x/√2))/2, or torch's tanh approximation."""
    if approximate == "none":
        return 0.5 * input * (1 + sgo.erf(input * (1 / math.sqrt(2))))
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (input + 0.044715 * sgo.pow(input, 3))
        return 0.5 * input * (1 + sgo.tanh(inner))
    raise ParameterError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


@torch_op("F.silu")
def silu(input, inplace=False):
    return input * sgo.sigmoid(input)


@torch_op("F.mish")
def mish(input, inplace=False):
    return input * sgo.tanh(sgo.softplus(input))


@torch_op("F.softplus")
def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(βx))/β, and x itself where βx > threshold, as torch computes it."""
    scaled = input if beta == 1 else beta * input
    smooth = sgo.softplus(scaled) if beta == 1 else sgo.softplus(scaled) / beta
    return sgo.where(sgo.gt(scaled, threshold), input, smooth)


@torch_op("F.softsign")
def softsign(input):
    return input / (1 + sgo.abs(input))


@torch_op("F.logsigmoid")
def logsigmoid(input):
    return -sgo.softplus(-input)


@torch_op("F.tanhshrink")
def tanhshrink(input):
    return input - sgo.tanh(input)


@torch_op("F.hardsigmoid")
def hardsigmoid(input, inplace=False):
    return clamp(input / 6 + 0.5, 0.0, 1.0)


@torch_op("F.hardswish")
def hardswish(input, inplace=False):
    return input * hardsigmoid(input)


@torch_op("F.softshrink")
def softshrink(input, lambd=0.5):
    if not lambd >= 0:
        raise ParameterError(f"F.softshrink: lambd must be >= 0, got {lambd!r} (as torch)")
    return sgo.where(_inside(input, lambd), 0.0, input - lambd * sgo.sign(input))


@torch_op("F.hardshrink")
def hardshrink(input, lambd=0.5):
    return sgo.where(_inside(input, lambd), 0.0, input)


def _inside(x, lambd):
    """-lambd <= x <= lambd, false at nan: the shrinks keep a nan, as torch's."""
    return sgo.logical_and(sgo.ge(x, -lambd), sgo.le(x, lambd))


def _softmax_dim(dim, rank):
    if dim is None:  # torch's legacy implicit choice (it warns)
        return 0 if rank in (0, 1, 3) else 1
    return int(dim)


@torch_op("torch.softmax", "special.softmax", "Tensor.softmax", "F.softmax")
def softmax(input, dim=None, _stacklevel=3, dtype=None):
    check_float_dtype("softmax", dtype)
    return sgo.softmax(input, _softmax_dim(dim, rank_of(input)))


@torch_op("torch.log_softmax", "special.log_softmax", "Tensor.log_softmax", "F.log_softmax")
def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    check_float_dtype("log_softmax", dtype)
    return sgo.log_softmax(input, _softmax_dim(dim, rank_of(input)))


@torch_op("F.softmin")
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    check_float_dtype("softmin", dtype)
    return sgo.softmax(-input, _softmax_dim(dim, rank_of(input)))


@torch_op("F.normalize")
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    reject("torch.nn.functional.normalize", out=out)
    n = vector_norm(input, p, dim, True, "torch.nn.functional.normalize")
    return input / clamp(n, min=eps)


@torch_op("F.cosine_similarity", "torch.cosine_similarity")
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """torch's form: sum((x1 / n1) * (x2 / n2)) with n = ‖x‖ clamped below at eps in value
    only (torch clamps the norms in place under no_grad, so the gradient is the norm's)."""
    from ..core.shapes import broadcast_shapes
    shape = broadcast_shapes(shape_of(x1), shape_of(x2), op="cosine_similarity")
    x1, x2 = sgo.broadcast_to(x1, shape), sgo.broadcast_to(x2, shape)

    def norm(x):
        n = sgo.norm(x, axis=dim, keepdims=True)
        return n + sgo.detach(sgo.clamp(n, min=eps) - n)
    return sgo.sum((x1 / norm(x1)) * (x2 / norm(x2)), axis=dim)


def _dropout(name):
    """Identity in evaluation mode (and for p = 0); zeros for p = 1 in training mode (torch
    drops everything); any other p in training mode draws a random mask: refused."""
    def handler(input, p=0.5, training=True, inplace=False):
        if not 0 <= p <= 1:
            raise ParameterError(f"{name}: dropout probability has to be between 0 and 1, "
                                 f"but got {p}")
        if training and p == 1:
            return input * 0.0
        if training and p > 0:
            raise unsupported(name, (input,), why="dropout in training mode is random; call "
                              "module.eval() (or pass training=False) before tracing")
        return input
    return handler


for _name in ("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
              "dropout3d"):
    torch_op(f"F.{_name}")(_dropout(f"torch.nn.functional.{_name}"))


def _indices(name, indices):
    return constant_array(name, indices, "indices must be constant integers (a torch "
                          "tensor), not symbolic").astype(int)


def _one_hot_const(name, indices, classes):
    """(indices, one-hot rows) for constant integer ``indices``, as NumPy arrays."""
    import numpy
    idx = _indices(name, indices)
    if not isinstance(classes, int):
        raise ShapeError(f"{name}: the number of classes is symbolic ({classes}); give it a "
                         "concrete size")
    return idx, (idx[..., None] == numpy.arange(classes)).astype(float)


def _class_target(name, input, target, class_dim):
    """(one-hot or probability target, is_index) for a classification loss: a target of
    the logits' shape holds probabilities, any other class indices (as in torch)."""
    if len(shape_of(target)) == len(shape_of(input)):
        return target, False
    _, hot = _one_hot_const(name, target, shape_of(input)[class_dim])
    return hot, True


def _index_mask(name, target, ignore_index):
    return (_indices(name, target) != ignore_index).astype(float)


def _classes_last(name, input, target):
    """Move the class dim (1 for (N, C, d...)) to the end, in probability targets too."""
    if rank_of(input) <= 2:
        return input, target
    if rank_of(target) == rank_of(input):
        target = movedim(target, 1, -1)
    return movedim(input, 1, -1), target


@torch_op("F.cross_entropy")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """torch's cross_entropy: class-index or probability targets, label smoothing,
    ignore_index and class weights, as sums of log_softmax terms."""
    name = "torch.nn.functional.cross_entropy"
    reduction = legacy_reduction(name, reduction, size_average, reduce)
    logits, target = _classes_last(name, input, target)
    classes = shape_of(logits)[-1]
    if traced_ids(logits, target):
        logp = sgo.log_softmax(logits, -1)
        return picked_loss(name, logp, target, weight, ignore_index, reduction,
                            label_smoothing)
    q, is_index = _class_target(name, logits, target, -1)
    simple = weight is None and label_smoothing == 0 and rank_of(logits) <= 2
    if is_index and simple and (_index_mask(name, target, ignore_index) == 1).all():
        indices, hot = _one_hot_const(name, target, classes)
        return sgo.cross_entropy(logits, indices.astype(float) if indices.ndim else hot,
                                reduction=reduction)
    if not is_index and simple:
        return sgo.cross_entropy(logits, target, reduction=reduction)
    if label_smoothing:
        q = q * (1 - label_smoothing) + label_smoothing / classes
    logp = sgo.log_softmax(logits, -1)
    terms = -(q * logp) if weight is None else -(q * logp * weight)
    loss = sgo.sum(terms, axis=-1)
    if not is_index:
        return reduce_loss(loss, reduction, name)
    keep = _index_mask(name, target, ignore_index)
    loss = loss * keep
    if reduction != "mean":
        return reduce_loss(loss, reduction, name)
    if weight is None:
        return weighted_mean(loss, keep.astype(bool), float(keep.sum()))
    hot = _one_hot_const(name, target, classes)[1]
    return weighted_mean(loss, keep.astype(bool),
                         sgo.sum(sgo.matmul(hot * keep[..., None], weight)))


@torch_op("F.nll_loss")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    name = "torch.nn.functional.nll_loss"
    reduction = legacy_reduction(name, reduction, size_average, reduce)
    logp, target = _classes_last(name, input, target)
    if traced_ids(logp, target):
        return picked_loss(name, logp, target, weight, ignore_index, reduction)
    _, hot = _one_hot_const(name, target, shape_of(logp)[-1])
    keep = _index_mask(name, target, ignore_index)
    picked = sgo.sum(-(hot * logp) if weight is None else -(hot * logp * weight), axis=-1)
    loss = picked * keep
    if reduction != "mean":
        return reduce_loss(loss, reduction, name)
    if weight is None:
        return weighted_mean(loss, keep.astype(bool), float(keep.sum()))
    return weighted_mean(loss, keep.astype(bool),
                         sgo.sum(sgo.matmul(hot * keep[..., None], weight)))


@torch_op("F.mse_loss")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    name = "torch.nn.functional.mse_loss"
    reduction = legacy_reduction(name, reduction, size_average, reduce)
    if weight is not None:
        return reduce_loss(weight * sgo.square(input - target), reduction, name)
    return sgo.mse_loss(input, target, reduction=reduction)


@torch_op("F.l1_loss")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    name = "torch.nn.functional.l1_loss"
    loss = sgo.abs(input - target)
    return reduce_loss(loss if weight is None else weight * loss,
                   legacy_reduction(name, reduction, size_average, reduce), name)


@torch_op("F.smooth_l1_loss")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean",
                   beta=1.0):
    name = "torch.nn.functional.smooth_l1_loss"
    loss = _quadratic_near_zero(input - target, beta)
    return reduce_loss(loss, legacy_reduction(name, reduction, size_average, reduce), name)


@torch_op("F.huber_loss")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    name = "torch.nn.functional.huber_loss"
    loss = delta * _quadratic_near_zero(input - target, delta)
    return reduce_loss(loss if weight is None else weight * loss, reduction, name)


def _quadratic_near_zero(d, width):
    """d²/(2 width) where |d| ≤ width, else |d| - width/2 (smooth L1; Huber over delta),
    with torch's gradient at the edges: nan at nan, ±1 at ±inf (the quadratic branch
    is evaluated at 0 beyond the width, so it adds no 0·inf)."""
    if width == 0:
        return sgo.abs(d)
    outside = sgo.gt(sgo.abs(d), width)
    near = sgo.where(outside, 0.0, d)
    return sgo.where(outside, sgo.abs(d) - 0.5 * width, (0.5 / width) * near * near)


@torch_op("F.binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(y log p + (1 - y) log(1 - p)) with each log clamped at -100, as torch does."""
    name = "torch.nn.functional.binary_cross_entropy"
    loss = -(target * clamp(sgo.log(input), min=-100.0)
             + (1 - target) * clamp(sgo.log(1 - input), min=-100.0))
    if weight is not None:
        loss = weight * loss
    return reduce_loss(loss, legacy_reduction(name, reduction, size_average, reduce), name)


@torch_op("F.binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    name = "torch.nn.functional.binary_cross_entropy_with_logits"
    reduction = legacy_reduction(name, reduction, size_average, reduce)
    if weight is None and pos_weight is None:
        return sgo.binary_cross_entropy_with_logits(input, target, reduction=reduction)
    log_sig_neg = sgo.softplus(input)  # -log σ(-x) = log(1 + e^x)
    if pos_weight is None:
        loss = log_sig_neg - target * input
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * (log_sig_neg - input)
    if weight is not None:
        loss = weight * loss
    return reduce_loss(loss, reduction, name)


@torch_op("F.kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean",
           log_target=False):
    name = "torch.nn.functional.kl_div"
    reduction = legacy_reduction(name, reduction, size_average, reduce)
    if log_target:
        loss = sgo.exp(target) * (target - input)
    else:
        loss = xlogy(target, target) - target * input
    if reduction == "batchmean":
        batch = shape_of(input)[0] if rank_of(input) else 1
        return sgo.sum(loss) / batch
    return reduce_loss(loss, reduction, name)


@torch_op("F.gaussian_nll_loss")
def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    name = "torch.nn.functional.gaussian_nll_loss"
    if rank_of(var) == rank_of(input) - 1:
        var = sgo.unsqueeze(var, -1)
    var = clamp(var, min=eps) if isinstance(var, Tensor) else var
    loss = 0.5 * (sgo.log(var) + sgo.square(input - target) / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return reduce_loss(loss, reduction, name)


@torch_op("F.scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q kᵀ · scale + mask) v, scale = 1/sqrt(head dim) by default."""
    name = "torch.nn.functional.scaled_dot_product_attention"
    reject(name, enable_gqa=enable_gqa)
    if dropout_p:
        raise unsupported(name, (query,), why="dropout_p > 0 is random; pass dropout_p=0")
    if scale is None:
        d = shape_of(query)[-1]
        scale = 1 / math.sqrt(d) if isinstance(d, int) else 1 / sympy.sqrt(d)
    scores = sgo.matmul(query, swap_axes(key, -2, -1)) * scale
    if is_causal:
        import numpy
        rows, cols = shape_of(scores)[-2:]
        if not (isinstance(rows, int) and isinstance(cols, int)):
            raise ShapeError(f"{name}: is_causal needs concrete sequence lengths, got "
                             f"{rows} and {cols}; pass an explicit attn_mask")
        attn_mask = numpy.tril(numpy.ones((rows, cols), dtype=bool))
    dead = None
    if attn_mask is not None:
        is_bool = _is_bool(attn_mask)
        scores = sgo.where(attn_mask, scores, -math.inf) if is_bool else scores + attn_mask
        if isinstance(attn_mask, Tensor) and (attn_mask.is_array or attn_mask.is_const):
            allowed = constant_array(name, attn_mask, "")
            allowed = allowed if is_bool else allowed > -math.inf
            dead = ~allowed.any(axis=-1, keepdims=True)
    weights = sgo.softmax(scores, -1)
    if dead is not None and dead.any():  # torch gives fully masked rows zero weight
        weights = sgo.where(dead, 0.0, weights)
    return sgo.matmul(weights, value)


@torch_op("F.multi_head_attention_forward")
def multi_head_attention_forward(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
        bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
        training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
        use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
        v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
        is_causal=False):
    """nn.MultiheadAttention's computation: projections, heads, softmax(q kᵀ/√d + mask) v,
    output projection; boolean masks mark the positions that may *not* attend. With
    ``is_causal`` torch requires the causal ``attn_mask`` too, which is used. ``bias_k``
    and ``bias_v`` append one learned key and value, ``add_zero_attn`` one zero key and
    value (each with a mask column that allows it), ``static_k``/``static_v`` replace the
    projected keys and values (already split into heads)."""
    name = "torch.nn.functional.multi_head_attention_forward"
    if (bias_k is None) != (bias_v is None):
        raise ParameterError(f"{name}: bias_k and bias_v must be given together")
    if training and dropout_p:
        raise unsupported(name, (query,), why="attention dropout in training mode is "
                          "random; call module.eval() before tracing")
    batched = rank_of(query) == 3
    mask = _additive_mask(name, attn_mask)
    padding = _additive_mask(name, key_padding_mask)
    if not batched:
        query, key, value = (sgo.unsqueeze(t, 1) for t in (query, key, value))
    tgt, batch, embed = shape_of(query)
    src = shape_of(key)[0]
    if not isinstance(embed, int) or embed % num_heads:
        raise ShapeError(f"{name}: the embedding dim {embed} must be a concrete multiple of "
                         f"num_heads={num_heads}")
    head = embed // num_heads
    if use_separate_proj_weight:
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
    else:
        weights = tuple(in_proj_weight[i * embed:(i + 1) * embed] for i in range(3))
    biases = (None,) * 3 if in_proj_bias is None else tuple(
        in_proj_bias[i * embed:(i + 1) * embed] for i in range(3))
    q, k, v = (linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))

    def heads(t, length):  # (length, batch, embed) -> (batch * heads, length, head)
        return swap_axes(sgo.reshape(t, (length, batch * num_heads, head)), 0, 1)

    if bias_k is not None:
        k, v = (sgo.concatenate([t, sgo.broadcast_to(sgo.reshape(b, (1, 1, embed)),
                                                     (1, batch, embed))], axis=0)
                for t, b in ((k, bias_k), (v, bias_v)))
        mask, padding, src = _allow_one_more(mask), _allow_one_more(padding), src + 1
    q, k, v = heads(q, tgt), heads(k, src), heads(v, src)
    k = k if static_k is None else static_k
    v = v if static_v is None else static_v
    src = shape_of(k)[1]
    if add_zero_attn:       # sg zeros: the batch may be symbolic
        zero = sg_zeros(batch * num_heads, 1, head)
        k, v = sgo.concatenate([k, zero], axis=1), sgo.concatenate([v, zero], axis=1)
        mask, padding, src = _allow_one_more(mask), _allow_one_more(padding), src + 1
    scores = sgo.matmul(q, swap_axes(k, -2, -1)) * (1 / math.sqrt(head))
    if padding is not None:
        padding = sgo.reshape(sgo.broadcast_to(sgo.reshape(padding, (batch, 1, 1, src)),
                                               (batch, num_heads, 1, src)),
                              (batch * num_heads, 1, src))
        mask = padding if mask is None else mask + padding
    if mask is not None:
        scores = scores + mask
    attn = sgo.softmax(scores, -1)
    out = sgo.reshape(swap_axes(sgo.matmul(attn, v), 0, 1), (tgt * batch, embed))
    out = sgo.reshape(linear(out, out_proj_weight, out_proj_bias), (tgt, batch, embed))
    weights = None
    if need_weights:
        weights = sgo.reshape(attn, (batch, num_heads, tgt, src))
        if average_attn_weights:
            weights = sgo.mean(weights, axis=1)
    if not batched:
        out = sgo.squeeze(out, 1)
        weights = None if weights is None else sgo.squeeze(weights, 0)
    return out, weights


def _allow_one_more(mask):
    """An additive mask with one more key position at the end, which may be attended."""
    if mask is None:
        return None
    if isinstance(mask, Tensor):      # its leading dims may be symbolic (the batch)
        return sgo.concatenate([mask, sg_zeros(tuple(shape_of(mask)[:-1]) + (1,))], axis=-1)
    import numpy
    return numpy.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, 1)])


def _is_bool(mask):
    """A boolean mask: an sg Tensor of kind bool, or a NumPy/torch boolean array."""
    if isinstance(mask, Tensor):
        return mask.kind == "bool"
    return str(getattr(mask, "dtype", "")) in ("bool", "torch.bool")


def _additive_mask(name, mask):
    """A boolean mask (True: may not attend) as 0/-inf; a float mask as it is. (Before
    any reshaping: sg's shape ops turn booleans into 0/1 floats.)"""
    if mask is None:
        return None
    if _is_bool(mask):
        if mask.is_array or mask.is_const:
            import numpy
            return numpy.where(constant_array(name, mask, ""), -math.inf, 0.0)
        return sgo.where(mask, -math.inf, 0.0)
    return mask
