"""torch's elementwise functions beyond the ops' own torch names: arithmetic with extra
arguments (``alpha``, ``rounding_mode``, ``value``), compositions (``lerp``,
``logit``, ``xlogy``, ``erfc``, ``log2``, ...), ``clamp`` with tensor bounds, ``where``
and ``masked_fill`` with boolean conditions."""
import math

from ..core import ops as sgo
from ..core.graph import Tensor
from .dispatch import reject, torch_op, unsupported
from .special import divide_rounded


def _unary(names, fn):
    def handler(input, *, out=None):
        reject(names[0], out=out)
        return fn(input)
    handler.__name__ = names[0].rsplit(".", 1)[-1]
    torch_op(*names)(handler)


for _name, _fn in {
        "rsqrt": lambda x: 1 / sgo.sqrt(x), "reciprocal": lambda x: 1 / x,
        "log2": lambda x: sgo.log(x) / math.log(2),
        "log10": lambda x: sgo.log(x) / math.log(10),
        "exp2": lambda x: sgo.pow(2.0, x)}.items():
    _aliases = [f"torch.{_name}", f"Tensor.{_name}"]
    if _name == "exp2":
        _aliases.append(f"special.{_name}")
    _unary(_aliases, _fn)


@torch_op("torch.add", "Tensor.add")
def add(input, other, *, alpha=1, out=None):
    reject("torch.add", out=out)
    return input + (other if alpha == 1 else alpha * other)


@torch_op("torch.sub", "torch.subtract", "Tensor.sub", "Tensor.subtract")
def sub(input, other, *, alpha=1, out=None):
    reject("torch.sub", out=out)
    return input - (other if alpha == 1 else alpha * other)


@torch_op("torch.rsub", "Tensor.__rsub__")
def rsub(input, other, *, alpha=1):
    return other - (input if alpha == 1 else alpha * input)


@torch_op("torch.div", "torch.divide", "torch.true_divide", "Tensor.div", "Tensor.divide",
          "Tensor.true_divide")
def div(input, other, *, rounding_mode=None, out=None):
    reject("torch.div", out=out)
    if rounding_mode is not None:
        return divide_rounded(input, other, rounding_mode)
    return input / other


@torch_op("Tensor.__rdiv__", "Tensor.__rtruediv__")
def rdiv(input, other):
    return other / input


@torch_op("Tensor.__rpow__")
def rpow(input, other):
    return sgo.pow(other, input)


@torch_op("torch.lerp", "Tensor.lerp")
def lerp(input, end, weight, *, out=None):
    reject("torch.lerp", out=out)
    return input + weight * (end - input)


@torch_op("torch.addcmul", "Tensor.addcmul")
def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    reject("torch.addcmul", out=out)
    return input + value * tensor1 * tensor2


@torch_op("torch.addcdiv", "Tensor.addcdiv")
def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    reject("torch.addcdiv", out=out)
    return input + value * tensor1 / tensor2


@torch_op("torch.logit", "special.logit", "Tensor.logit")
def logit(input, eps=None, *, out=None):
    """log(x / (1 - x)), as log x - log1p(-x): its gradient 1/x + 1/(1 - x) is torch's
    1 / (x (1 - x)), inf at 0 and 1. Outside [0, 1] torch's gradient is nan (a nan added
    there, a constant, makes it so), or with eps 0 outside [eps, 1 - eps] (nan at nan)."""
    reject("torch.logit", out=out)
    lo, hi = (0, 1) if eps is None else (eps, 1 - eps)
    outside = sgo.logical_or(sgo.lt(input, lo), sgo.gt(input, hi))
    if eps is None:
        input = input + sgo.where(outside, math.nan, 0.0)
    else:
        input = sgo.where(outside, sgo.detach(sgo.clamp(input, lo, hi)), input)
    return sgo.log(input) - sgo.log1p(-input)


@torch_op("torch.xlogy", "special.xlogy", "Tensor.xlogy")
def xlogy(input, other, *, out=None):
    """x log y, 0 where x == 0 (also when y == 0), as torch defines it."""
    reject("torch.xlogy", out=out)
    return sgo.xlogy(input, other)


@torch_op("torch.fmax", "Tensor.fmax")
def fmax(input, other, *, out=None):
    reject("torch.fmax", out=out)
    return sgo.fmax(input, other)


@torch_op("torch.fmin", "Tensor.fmin")
def fmin(input, other, *, out=None):
    reject("torch.fmin", out=out)
    return sgo.fmin(input, other)


@torch_op("torch.clamp", "torch.clip", "Tensor.clamp", "Tensor.clip")
def clamp(input, min=None, max=None, *, out=None):
    reject("torch.clamp", out=out)
    numbers = all(b is None or isinstance(b, (int, float)) for b in (min, max))
    if numbers and isinstance(input, Tensor):
        return sgo.clamp(input, min, max)
    return _clamp_by_tensors(input, min, max)


def _clamp_by_tensors(x, lo, hi):
    """clamp with tensor bounds, its gradient split as torch's clamp_backward_min_max
    splits it: x's where lo <= x <= hi (at a tie too, where maximum would halve it), lo's
    where x < lo < hi, hi's where x > hi or hi < lo, nobody's elsewhere (a nan, or
    lo == hi with x outside). The value is torch's, nan bounds included."""
    value = x
    if lo is not None:
        value = sgo.maximum(value, lo)
    if hi is not None:
        value = sgo.minimum(value, hi)
    out = sgo.detach(value)
    if lo is not None and hi is not None:
        keep = sgo.logical_and(sgo.ge(x, lo), sgo.le(x, hi))
        out = sgo.where(sgo.logical_or(sgo.gt(x, hi), sgo.lt(hi, lo)), hi, out)
        out = sgo.where(sgo.logical_and(sgo.lt(x, lo), sgo.lt(lo, hi)), lo, out)
    elif lo is not None:
        keep = sgo.ge(x, lo)
        out = sgo.where(sgo.lt(x, lo), lo, out)
    else:
        keep = sgo.le(x, hi)
        out = sgo.where(sgo.gt(x, hi), hi, out)
    return sgo.where(keep, x, out)


@torch_op("torch.clamp_min", "Tensor.clamp_min")
def clamp_min(input, min):
    return clamp(input, min=min)


@torch_op("torch.clamp_max", "Tensor.clamp_max")
def clamp_max(input, max):
    return clamp(input, max=max)


@torch_op("torch.where")
def where(condition, input=None, other=None, *, out=None):
    reject("torch.where", out=out)
    if input is None or other is None:
        raise unsupported("torch.where", (condition,), why="torch.where(condition) returns "
                          "indices; use the three-argument form")
    return sgo.where(as_bool(condition), input, other)


@torch_op("Tensor.where")
def where_method(input, condition, other):
    return sgo.where(as_bool(condition), input, other)


def as_bool(c):
    if isinstance(c, Tensor):
        return c if c.kind == "bool" else sgo.ne(c, 0)
    import torch
    if isinstance(c, torch.Tensor):
        return c.bool()
    return c


@torch_op("Tensor.masked_fill", "torch.masked_fill")
def masked_fill(input, mask, value):
    return sgo.where(as_bool(mask), value, input)


@torch_op("torch.logical_xor", "Tensor.logical_xor")
def logical_xor(input, other, *, out=None):
    reject("torch.logical_xor", out=out)
    return sgo.ne(as_bool(input), as_bool(other))


