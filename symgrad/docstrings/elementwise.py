"""Examples of the elementwise ops (``core/ops/pointwise.py``), whose factories give every
op of a kind the same one-line docstring: each example shows the op on a symbol and its
derivative, or on numbers."""

EXAMPLES = {
    'abs': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.abs(x)
    Tensor(Abs(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.abs(x)))
    df/dx = sign(x)
""",
    'acos': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.acos(x)
    Tensor(acos(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.acos(x)))
    df/dx = -1/sqrt(1 - x**2)
""",
    'asin': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.asin(x)
    Tensor(asin(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.asin(x)))
    df/dx = 1/sqrt(1 - x**2)
""",
    'atan': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.atan(x)
    Tensor(atan(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.atan(x)))
    df/dx = 1/(x**2 + 1)
""",
    'cos': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.cos(x)
    Tensor(cos(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.cos(x)))
    df/dx = -sin(x)
""",
    'cosh': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.cosh(x)
    Tensor(cosh(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.cosh(x)))
    df/dx = sinh(x)
""",
    'erf': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.erf(x)
    Tensor(erf(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.erf(x)))
    df/dx = 2*exp(-x**2)/sqrt(pi)
""",
    'exp': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.exp(x)
    Tensor(exp(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.exp(x)))
    df/dx = exp(x)
""",
    'expm1': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.expm1(x)
    Tensor(expm1(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.expm1(x)))
    df/dx = expm1(x) + 1
""",
    'log': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.log(x)
    Tensor(log(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.log(x)))
    df/dx = 1/x
""",
    'log1p': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.log1p(x)
    Tensor(log1p(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.log1p(x)))
    df/dx = 1/(x + 1)
""",
    'neg': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.neg(x)
    Tensor(-x, shape=())
    >>> print(sg.grad_fn(lambda x: sg.neg(x)))
    df/dx = -1
""",
    'relu': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.relu(x)
    Tensor(relu(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.relu(x)))
    df/dx = float(x > 0)
""",
    'sigmoid': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sigmoid(x)
    Tensor(sigmoid(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sigmoid(x)))
    df/dx = (1 - sigmoid(x))*sigmoid(x)
""",
    'sign': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sign(x)
    Tensor(sign(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sign(x)))
    df/dx = 0
""",
    'sin': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sin(x)
    Tensor(sin(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sin(x)))
    df/dx = cos(x)
""",
    'sinh': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sinh(x)
    Tensor(sinh(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sinh(x)))
    df/dx = cosh(x)
""",
    'softplus': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.softplus(x)
    Tensor(softplus(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.softplus(x)))
    df/dx = sigmoid(x)
""",
    'sqrt': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.sqrt(x)
    Tensor(sqrt(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.sqrt(x)))
    df/dx = 1/(2*sqrt(x))
""",
    'square': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.square(x)
    Tensor(x**2, shape=())
    >>> print(sg.grad_fn(lambda x: sg.square(x)))
    df/dx = 2*x
""",
    'tan': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.tan(x)
    Tensor(tan(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.tan(x)))
    df/dx = tan(x)**2 + 1
""",
    'tanh': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.tanh(x)
    Tensor(tanh(x), shape=())
    >>> print(sg.grad_fn(lambda x: sg.tanh(x)))
    df/dx = 1 - tanh(x)**2
""",
    'add': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.add(x, y)
    Tensor(x + y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.add(x, y)))
    df/dx = 1
    df/dy = 1
""",
    'sub': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.sub(x, y)
    Tensor(x - y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.sub(x, y)))
    df/dx = 1
    df/dy = -1
""",
    'mul': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.mul(x, y)
    Tensor(x*y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.mul(x, y)))
    df/dx = y
    df/dy = x
""",
    'div': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.div(x, y)
    Tensor(x/y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.div(x, y)))
    df/dx = 1/y
    df/dy = -x/y**2
""",
    'pow': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.pow(x, y)
    Tensor(x**y, shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.pow(x, y)))
    df/dx = (0 if y == 0 else x**(y - 1)*y)
    df/dy = (0 if x == 0 and y >= 0 else x**y*log(x))
""",
    'atan2': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.atan2(x, y)
    Tensor(atan2(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.atan2(x, y)))
    df/dx = (0 if t1 == 0 else y/t1)
    df/dy = (0 if t1 == 0 else -x/t1)
      where
        t1 = x**2 + y**2
""",
    'hypot': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.hypot(x, y)
    Tensor(hypot(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.hypot(x, y)))
    df/dx = x/hypot(x, y)
    df/dy = y/hypot(x, y)
""",
    'logaddexp': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.logaddexp(x, y)
    Tensor(logaddexp(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.logaddexp(x, y)))
    df/dx = sigmoid(x - y)
    df/dy = sigmoid(-x + y)
""",
    'maximum': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.maximum(x, y)
    Tensor(Max(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.maximum(x, y)))
    df/dx = (0 if x < y else t1)
    df/dy = (0 if x > y else t1)
      where
        t1 = (1/2 if x == y else 1)
""",
    'minimum': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.minimum(x, y)
    Tensor(Min(x, y), shape=())
    >>> print(sg.grad_fn(lambda x, y: sg.minimum(x, y)))
    df/dx = (0 if x > y else t1)
    df/dy = (0 if x < y else t1)
      where
        t1 = (1/2 if x == y else 1)
""",
    'eq': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.eq(x, y)
    Tensor(Eq(x, y), shape=())
    >>> bool(sg.eq(2.0, 1.0))
    False
""",
    'ne': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.ne(x, y)
    Tensor(Ne(x, y), shape=())
    >>> bool(sg.ne(2.0, 1.0))
    True
""",
    'gt': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.gt(x, y)
    Tensor(x > y, shape=())
    >>> bool(sg.gt(2.0, 1.0))
    True
""",
    'ge': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.ge(x, y)
    Tensor(x >= y, shape=())
    >>> bool(sg.ge(2.0, 1.0))
    True
""",
    'lt': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.lt(x, y)
    Tensor(x < y, shape=())
    >>> bool(sg.lt(2.0, 1.0))
    False
""",
    'le': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.le(x, y)
    Tensor(x <= y, shape=())
    >>> bool(sg.le(2.0, 1.0))
    False
""",
    'isnan': """
    >>> import symgrad as sg
    >>> import numpy as np
    >>> sg.isnan(np.array([1.0, np.nan]))
    array([False,  True])
    >>> print(sg.grad_fn(lambda x: sg.where(sg.isnan(x), 0.0, x)))
    df/dx = float(~(isnan(x)))
""",
    'logical_and': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.logical_and(x > 0, y > 0)
    Tensor((x > 0) & (y > 0), shape=())
""",
    'logical_or': """
    >>> import symgrad as sg
    >>> x, y = sg.symbol("x"), sg.symbol("y")
    >>> sg.logical_or(x > 0, y > 0)
    Tensor((x > 0) | (y > 0), shape=())
""",
    'logical_not': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.logical_not(x > 0)
    Tensor(x <= 0, shape=())
""",
    'cast': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.cast(x > 0)
    Tensor(float(x > 0), shape=())
    >>> print(sg.grad_fn(lambda x: x * sg.cast(x > 0)))
    df/dx = float(x > 0)
""",
    'where': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> print(sg.grad_fn(lambda x: sg.where(x > 0, x, 0.1 * x)))
    df/dx = 0.1*float(x <= 0) + float(x > 0)
""",
    'clamp': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> sg.clamp(x, 0, 1)
    Tensor(clamp(x, min=0.0, max=1.0), shape=())
    >>> float(sg.clamp(1.5, 0, 1))
    1.0
""",
    'detach': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> print(sg.grad_fn(lambda x: x * sg.detach(x)))
    df/dx = detach(x)
""",
    'stop_gradient': """
    >>> import symgrad as sg
    >>> x = sg.symbol("x")
    >>> print(sg.grad_fn(lambda x: x * sg.stop_gradient(x)))
    df/dx = detach(x)
""",
}
