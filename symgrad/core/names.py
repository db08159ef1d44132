"""Names in generated code: a user's name (a parameter, a dim) is text from the user, so it
reaches code only in a form that cannot be misread. Compiled code (``codegen``) and the
NumPy text view (``views.numpy_text``) both write names this way.

A name is kept as written when it is a plain identifier that means nothing else in the
generated function: not a keyword, not a builtin, not a module the code uses, not one of
the code's own names (they all start with ``_``, or are ``args``, ``ArgumentError`` and
``EvaluationError``),
and unchanged by NFKC normalisation (which Python applies to identifiers, so ``ｎ`` and
``n`` would be one variable). Any other name is renamed, the same way everywhere and for
every program (cached statement templates stay valid): an identifier that only clashes
gets a leading underscore (``len`` -> ``_len``, ``_t0`` -> ``__t0``); anything else is
spelled by its code points (``ｎ`` -> ``_uff4e``). Views keep the user's spelling; only
the code is renamed, and error messages in the code quote the user's spelling.
"""
import builtins
import keyword
import unicodedata

from sympy.printing.pycode import PythonCodePrinter

GENERATED = {"args", "ArgumentError", "EvaluationError", "math", "numpy", "torch", "scipy",
             "jax", "re"}
BUILTINS = set(dir(builtins))


def is_plain(name):
    """Whether ``name`` may appear in generated code as it is."""
    return (name.isidentifier() and name.isascii() and not keyword.iskeyword(name)
            and not name.startswith(("_", "sgarg")) and name not in BUILTINS
            and name not in GENERATED and unicodedata.normalize("NFKC", name) == name)


def code_name(name):
    """The name generated code uses for the user's ``name`` (see the module docstring)."""
    if is_plain(name):
        return name
    if name.isidentifier() and name.isascii() and not keyword.iskeyword(name):
        return "_" + name
    return "_u" + "".join(f"{ord(c):x}_" for c in name).rstrip("_")


class DimPrinter(PythonCodePrinter):
    """Integer arithmetic on dims: ceiling(n/2) is -(-n // 2), never a float (a shape
    needs ints); symbols by their code names."""

    def _print_Symbol(self, expr):
        return code_name(expr.name)

    def _quotient(self, expr):
        numerator, denominator = expr.as_numer_denom()
        return self._print(numerator), self._print(denominator)

    def _print_floor(self, expr):
        n, d = self._quotient(expr.args[0])
        return f"(({n}) // ({d}))"

    def _print_ceiling(self, expr):
        n, d = self._quotient(expr.args[0])
        return f"(-((-({n})) // ({d})))"

    def _print_Max(self, expr):
        return "max(" + ", ".join(self._print(a) for a in expr.args) + ")"

    def _print_Min(self, expr):
        return "min(" + ", ".join(self._print(a) for a in expr.args) + ")"


_dim_printer = DimPrinter()


def dim_code(d):
    """A dim (an int or an expression of dims) as integer code (``DimPrinter``)."""
    if isinstance(d, int):
        return str(d)
    return _dim_printer.doprint(d)


def shape_code(shape):
    """A shape as a Python tuple in code."""
    return "(" + ", ".join(dim_code(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
