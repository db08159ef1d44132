"""Vector norms: the p-norm over all axes or along some, with torch's zero subgradient
where the norm is 0. Derivatives: rules/linalg.yaml (``norm``)."""
import math

import sympy

from ...errors import ParameterError
from .. import simplify as simp
from ..build import apply
from . import batching, elements
from .reductions import REDUCE_PARAMS, amax, amin, reduce_params, reduce_shape, reduce_text, torch_reduce
from ..opdef import defop
from ..types import Axis, Result, TensorLike


def _norm_params(op, shapes, axis=None, keepdims=False, ord=2):
    if isinstance(ord, bool) or not isinstance(ord, (int, float)) or ord == 0 or not (
            -math.inf < ord < math.inf):
        raise ParameterError(f"{op}: ord must be a nonzero finite number here, got {ord!r}; "
                             "the norms for ord=inf and -inf are sg.amax/sg.amin of sg.abs(x), "
                             "for ord=0 the count of nonzeros")
    return reduce_params(op, shapes, axis=axis, keepdims=keepdims) + (
        ("ord", int(ord) if float(ord).is_integer() else float(ord)),)


def _ord_text(ord):
    return "" if ord.value == 2 else f", ord={ord}"


def _norm_numpy(x, axis, keepdims, full, ord):
    if ord.value == 2:
        inner = f"numpy.square({x})"
        outer = "numpy.sqrt({})"
    else:
        inner = f"numpy.abs({x})**{float(ord.value)!r}"
        outer = "({})**" + repr(1.0 / ord.value)
    if full.value and not keepdims.value:
        return outer.format(f"numpy.sum({inner})")
    return outer.format(f"numpy.sum({inner}, axis={axis}, keepdims={keepdims})")


def _norm_numpy_text(x, axis, keepdims, full, ord):
    """np.linalg.norm where it is this norm (the 2-norm of everything, or along one or
    two axes), else the NumPy spelling."""
    if ord.value != 2 or len(axis.value) > 2 and (keepdims.value or not full.value):
        return _norm_numpy(x, axis, keepdims, full, ord)
    return reduce_text("numpy.linalg.norm")(x, axis, keepdims, full)


def _norm_latex(x, axis, keepdims, full, ord):
    body = rf"\left\lVert {x} \right\rVert"
    subscript = [] if ord.value == 2 else [str(ord.value)]
    if not full.value:
        subscript.append(r"\mathrm{axis}\," + ",".join(map(str, axis.value)))
    return body + ("_{" + r";\,".join(subscript) + "}" if subscript else "")


def _norm_elements(v, ord):
    if ord == 2:
        return sympy.sqrt(sympy.Add(*[e ** 2 for e in v]))
    p = sympy.nsimplify(ord)
    return sympy.Add(*[sympy.Abs(e) ** p for e in v]) ** (1 / p)


def _norm_matrix(m, node, x):
    if node.attrs["full"] and node.attrs["ord"] == 2:
        return m.norm(x)
    return m.call(node, x)


@defop("norm", ("x",), params=_norm_params, shape=reduce_shape,
       sympy_params=REDUCE_PARAMS + ("ord",), simplify=simp.over_no_axes("abs"),
       text=reduce_text("norm", lambda ord: _ord_text(ord)), latex=_norm_latex,
       numpy=_norm_numpy, numpy_text=_norm_numpy_text,
       torch=torch_reduce("torch.linalg.vector_norm", lambda ord: f", ord={ord}"),
       matrix=_norm_matrix,
       elements=lambda ctx, x: elements.reduce(
           lambda v: _norm_elements(v, ctx.attrs["ord"]))(ctx, x),
       batch=batching.along_axes)
def norm(x: TensorLike, axis: Axis = None, keepdims: bool = False,
         ord: float = 2) -> Result:
    """The p-norm (``ord``, 2 by default: the Euclidean norm of a vector, Frobenius of a
    matrix; negative ord too, (Σ|x|^p)^(1/p)) over all axes or along ``axis``;
    ``torch.linalg.vector_norm``. The gradient is 0 where the norm is 0, as torch's."""
    if ord in (math.inf, -math.inf):
        extremum = amax if ord > 0 else amin
        return extremum(abs(x), axis=axis, keepdims=keepdims)
    return apply("norm", x, axis=axis, keepdims=keepdims, ord=ord)

