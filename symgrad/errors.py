"""Exceptions raised by symgrad.

Every error a user can provoke is a ``SymgradError``. Messages name the op, the
offending input and its shape, and say what to do instead.
"""


class SymgradError(Exception):
    """Base class of every error symgrad raises on purpose.

    Example:

    >>> import symgrad as sg
    >>> try:
    ...     sg.grad_fn(lambda x: x, wrt="y")
    ... except sg.SymgradError as e:
    ...     print(e)
    ...
    wrt='y' is not a parameter of f(x)
    """


class ShapeError(SymgradError, ValueError):
    """Operands whose shapes do not fit the op (both shapes are in the message).

    Example:

    >>> import symgrad as sg
    >>> try:
    ...     sg.symbol("a", shape=(2,)) + sg.symbol("b", shape=(3,))
    ... except sg.ShapeError as e:
    ...     print(type(e).__name__, isinstance(e, sg.SymgradError))
    ...
    ShapeError True
    """


ESCAPE_HATCH = """What to do: write it as your own op, an sg.Function whose forward spells it
with ops symgrad knows and whose backward gives its gradient:

    class MyOp(sg.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return ...  # the value, written with sg (or mapped torch) ops
        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return ...  # grad times the derivative

    y = MyOp.apply(x)

symgrad.torchfront.supported() lists the torch functions symgrad maps and sg.rules.names()
the ops with derivative rules."""


class UnsupportedOpError(SymgradError, NotImplementedError):
    """An op or torch function with no derivative rule. The message names the op and,
    unless it already says what to do instead, ends with the ``sg.Function`` escape hatch.

    Example:

    >>> import symgrad as sg
    >>> issubclass(sg.UnsupportedOpError, NotImplementedError)
    True
    >>> str(sg.UnsupportedOpError("no rule for foo")).splitlines()[2]
    'What to do: write it as your own op, an sg.Function whose forward spells it'
    """

    def __init__(self, message: object = "", *args: object) -> None:
        text = str(message)
        if "sg.Function" not in text:
            text = f"{text.rstrip()}\n\n{ESCAPE_HATCH}"
        super().__init__(text, *args)


class NonScalarOutputError(SymgradError, ValueError):
    """``grad_fn``/``grad`` asked for an implicit seed on a non-scalar output.

    Example:

    >>> import symgrad as sg
    >>> try:
    ...     sg.grad_fn(lambda x: x * 2, shapes={"x": (3,)})
    ... except sg.NonScalarOutputError as e:
    ...     print(type(e).__name__, isinstance(e, sg.SymgradError))
    ...
    NonScalarOutputError True
    """


class ControlFlowError(SymgradError, TypeError):
    """Python control flow (``if``, ``bool``, ``float``) on a symbolic value.

    Example:

    >>> import symgrad as sg
    >>> def f(x):
    ...     return x if x > 0 else -x
    ...
    >>> try:
    ...     sg.grad_fn(f)
    ... except sg.ControlFlowError as e:
    ...     print(type(e).__name__, "sg.where" in str(e))
    ...
    ControlFlowError True
    """


class RuleError(SymgradError, SyntaxError):
    """A rule file that is malformed or uses a forbidden construct (file and line given).

    Example:

    >>> import symgrad as sg
    >>> issubclass(sg.RuleError, SyntaxError)
    True
    """


class NotDifferentiableError(SymgradError, ValueError):
    """A gradient was requested through a path that has none.

    Example:

    >>> import symgrad as sg
    >>> issubclass(sg.NotDifferentiableError, ValueError)
    True
    """


class OperandError(SymgradError, TypeError):
    """A value symgrad cannot trace or compute with (None, a string, an object array).

    Example:

    >>> import symgrad as sg
    >>> try:
    ...     sg.sin(sg.symbol("x")) + "text"
    ... except sg.OperandError as e:
    ...     print(type(e).__name__, isinstance(e, sg.SymgradError))
    ...
    OperandError True
    """


class ArgumentError(SymgradError, TypeError):
    """A call with the wrong number, kind or shape of arguments: a compiled gradient, an
    op given too many tensors, an ``sg.Function`` called directly.

    Example:

    >>> import symgrad as sg
    >>> g = sg.grad_fn(lambda x: sg.sin(x))
    >>> try:
    ...     g.compile()(1.0, 2.0)
    ... except sg.ArgumentError as e:
    ...     print(type(e).__name__)
    ...
    ArgumentError
    """


class ParameterError(SymgradError, ValueError, TypeError):
    """An op's parameter outside what it accepts (an axis, ``reduction``, ``ord``, a clamp
    bound, a diagonal offset); a ValueError or TypeError as the same mistake in NumPy.

    Example:

    >>> import symgrad as sg
    >>> try:
    ...     sg.mse_loss(sg.symbol("p"), sg.symbol("y"), reduction="average")
    ... except sg.ParameterError as e:
    ...     print(type(e).__name__, isinstance(e, sg.SymgradError))
    ...
    ParameterError True
    """


class EvaluationError(SymgradError, ValueError):
    """Compiled code that cannot compute at the arguments it was given: the array library
    refused (a max over an empty dim, a division by a zero dim); the original error is
    its ``__cause__``.

    Example:

    >>> import symgrad as sg
    >>> issubclass(sg.EvaluationError, ValueError)
    True
    """


class CheckError(SymgradError, AssertionError):
    """``sg.check`` found a mismatch with torch.autograd.

    Example:

    >>> import symgrad as sg
    >>> issubclass(sg.CheckError, AssertionError)
    True
    """


class RegistryError(SymgradError):
    """An op defined twice, or asked for a spelling or form its OpDef does not give.

    Example:

    >>> import symgrad as sg
    >>> issubclass(sg.RegistryError, sg.SymgradError)
    True
    """
