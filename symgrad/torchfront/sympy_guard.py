"""A SymPy function applied to a symbolic Tensor (``sympy.gamma(x)``, ``sympy.exp(x)``):
a clear error naming the function and its sg / torch equivalent.

SymPy converts its arguments with ``sympify``, which asks the object for ``_sympy_``; a
Tensor stands for an array of values that SymPy cannot hold, so without this SymPy goes
on to ``float(x)`` and the user sees a ControlFlowError about ``float()``. Binary
operators (``n * x`` with a dim ``n``) also call ``sympify``, in strict mode, and must
keep failing quietly so that Python falls back to the Tensor's own operator; those are
told apart by the SymPy operator wrapper on the stack.
"""
import os
import sys

from ..errors import OperandError

_OPERATOR_WRAPPERS = {"__sympifyit_wrapper", "binary_op_wrapper", "_func"}
_HINTS = {"gamma": "torch.lgamma(x).exp() for x > 0 (or torch.special.gammaln for the log)",
          "loggamma": "torch.lgamma(x)", "Abs": "sg.abs(x) or torch.abs(x)",
          "Max": "sg.maximum(x, y) or torch.maximum(x, y)",
          "Min": "sg.minimum(x, y) or torch.minimum(x, y)",
          "Heaviside": "sg.where(x > 0, 1.0, 0.0)", "Pow": "x ** y or sg.pow(x, y)",
          "sqrt": "sg.sqrt(x) or torch.sqrt(x)", "polygamma": "torch.special.polygamma(n, x)",
          "digamma": "torch.digamma(x)", "erfc": "torch.special.erfc(x)",
          "Piecewise": "sg.where(condition, x, y)", "log": "sg.log(x) or torch.log(x)"}


class SympyOnTensorError(OperandError):
    """A SymPy function was applied to a symbolic Tensor."""


def _sympy_dir():
    sympy = sys.modules.get("sympy")
    return os.path.dirname(sympy.__file__) if sympy is not None else None


def _hint(name):
    if name in _HINTS:
        return _HINTS[name]
    from ..core import ops as sgo
    lower = name.lower()
    options = []
    if hasattr(sgo, lower):
        options.append(f"sg.{lower}(x)")
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, lower):
        options.append(f"torch.{lower}(x)")
    elif torch is not None and hasattr(getattr(torch, "special", None), lower):
        options.append(f"torch.special.{lower}(x)")
    if options:
        return " or ".join(options)
    return "an sg.Function whose forward and backward are written with sg ops"


def sympy_conversion(tensor):
    """What ``tensor._sympy_`` does: raise SymPy's own SympifyError for a strict
    conversion by an operator, and a SympyOnTensorError for a SymPy function."""
    from sympy.core.sympify import SympifyError
    frame = sys._getframe(2)            # 0: this, 1: the _sympy_ closure, 2: sympify
    strict = bool(frame.f_locals.get("strict")) if frame.f_code.co_name == "sympify" else True
    import sympy
    root = _sympy_dir()
    name, outer = None, None
    while frame is not None and root and frame.f_code.co_filename.startswith(root):
        code = frame.f_code.co_name
        if strict and code in _OPERATOR_WRAPPERS:
            raise SympifyError(tensor)
        cls = frame.f_locals.get("cls")
        if name is None and isinstance(cls, type) and issubclass(cls, sympy.Basic):
            name = cls.__name__
        outer = code
        frame = frame.f_back
    if outer and not outer.startswith("_") and outer not in ("wrapper", "sympify"):
        name = outer
    if name is None:
        raise SympifyError(tensor)
    raise SympyOnTensorError(
        f"sympy.{name} was applied to a symbolic Tensor ({tensor.op}, shape "
        f"{tuple(tensor.shape)}); SymPy functions work on SymPy expressions (dims such "
        f"as x.shape[0]), not on traced arrays. Use {_hint(name)}, which trace")
