"""Examples of the elementwise-tail mappings (symgrad/torchfront/special.py, and the special
and rounding ops whose inputs need a domain) for test_torch_frontend's table test:
``call(op, *symbols)``, shapes, input domain, one per torch name."""
import torch

X = {"x": (3, 4)}
XY = {"x": (3, 4), "y": (3, 4)}


def _unary(domain, shift=0.0):
    return (lambda op, x: op(x + shift)), X, domain


def _times_x(call):
    """A result without gradient (an integer-valued one, a mask), times x: the product's
    gradient is checked, so "no gradient" is checked against torch too."""
    return (lambda op, x: call(op, x) * x), X, "real"


EXAMPLES = {
    "torch.acosh": _unary("pos", 1.0),
    "torch.atanh": _unary("unit"),
    "torch.erfinv": _unary("unit"),
    "torch.lgamma": _unary("pos"),
    "torch.special.erfcx": _unary("real"),
    "torch.special.log_ndtr": _unary("real"),
    "torch.special.ndtr": _unary("real"),
    "torch.special.ndtri": _unary("prob"),
    "torch.special.entr": _unary("pos"),
    "torch.special.i1": _unary("real"),
    "torch.special.i1e": _unary("real"),
    "torch.i0": _unary("real"),
    "torch.special.i0e": _unary("real"),
    "torch.digamma": _unary("pos"),
    "torch.polygamma": ((lambda op, x: (op(0, x), op(1, x), op(3, x))), X, "pos"),
    "torch.Tensor.polygamma": ((lambda op, x: (op(x, 1), op(x, 2))), X, "pos"),
    "torch.mvlgamma": ((lambda op, x: (op(x + 1.0, 1), op(x + 2.0, 3))), X, "pos"),
    "torch.sinc": _unary("real"),
    "torch.special.xlog1py": ((lambda op, x, y: (op(x, y), op(x * 0, y))), XY, "pos"),
    "torch.frac": _unary("real"),
    # a tie goes to x (fmax(x, x * 1) gives x all of it); nans: test_elem
    "torch.fmax": ((lambda op, x, y: (op(x, y), op(x, x * 1))), XY, "real"),
    "torch.fmin": ((lambda op, x, y: (op(x, y), op(x, x * 1))), XY, "real"),
    "torch.copysign": ((lambda op, x, y: (op(x, y), op(x, -2.0), op(x, -0.0))), XY, "real"),
    "torch.ldexp": ((lambda op, x, y: (op(x, y), op(x, torch.tensor(3.0, dtype=torch.float64)))),
                    XY, "real"),
    "torch.frexp": ((lambda op, x: op(x * 7)[0]), X, "real"),
    "torch.deg2rad": _unary("real"),
    "torch.rad2deg": _unary("real"),
    "torch.logaddexp2": ((lambda op, x, y: (op(x, y), op(x, y[0]))), XY, "real"),
    "torch.nan_to_num": ((lambda op, x: (op(x), op(x / 0.0, 1.0, 2.0, -3.0) * x,
                                         op(torch.log(x), posinf=5.0))), X, "real"),
    "torch.nn.functional.threshold": ((lambda op, x: (op(x, 0.1, -2.0), op(x, -0.5, 0.0))),
                                      X, "real"),
    "torch.fill": ((lambda op, x, y: (op(x, 2.5) * x, op(x, y[0, 0]) * x)), XY, "real"),
    "torch.positive": _unary("real"),
    "torch.angle": _times_x(lambda op, x: op(x)),
    "torch.signbit": _times_x(lambda op, x: torch.where(op(x), 2.0, 3.0)),
    "torch.Tensor.__rmod__": ((lambda op, x, y: op(y + 1.0, x * 5)), XY, "pos"),
    "torch.Tensor.half": ((lambda op, x: op(x * 10) * x), X, "real"),
    "torch.Tensor.bfloat16": ((lambda op, x: op(x * 10) * x), X, "real"),
    "torch.floor": _times_x(lambda op, x: op(x * 3)),
    "torch.ceil": _times_x(lambda op, x: op(x * 3)),
    "torch.trunc": _times_x(lambda op, x: op(x * 3)),
    "torch.round": _times_x(lambda op, x: op(x * 30) + op(x * 30, decimals=-1)
                            + op(x, decimals=2)),
}
