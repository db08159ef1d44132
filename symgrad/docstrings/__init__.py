"""Examples for the public functions and classes whose docstrings are written elsewhere.

Most ops are made by small factories (``_unary("sin", ...)`` in ``core/ops/pointwise.py``)
that give every op of a family the same one-line docstring; an example has to show what
one op does, so the examples of the ops, and of the classes and functions defined in the
layers below the package's face, are kept in these tables (as PyTorch keeps its
``_torch_docs.py``) and appended to each object's ``__doc__`` when symgrad is imported.
``tests/test_docs.py`` runs every public object's example as a doctest, these included.
"""
from typing import Any

from . import api, arrays, elementwise

EXAMPLES = {**elementwise.EXAMPLES, **arrays.EXAMPLES, **api.EXAMPLES}


def _attach(obj: Any, example: str) -> None:
    doc = (obj.__doc__ or "").rstrip()
    if ">>>" in doc:
        return
    obj.__doc__ = f"{doc}\n\nExample:\n\n{example.rstrip()}\n"


def attach_examples(namespace: dict[str, Any]) -> None:
    """Append each example to the docstring of the object of that name in ``namespace``
    (the package's globals); ``sg.rules`` is an instance, so its class gets it."""
    for name, example in EXAMPLES.items():
        obj = namespace[name]
        _attach(obj if isinstance(obj, type) or callable(obj) else type(obj), example)
