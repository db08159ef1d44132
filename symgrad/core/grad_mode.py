"""Gradient mode: ``sg.no_grad()`` and ``sg.enable_grad()``, like ``torch.no_grad``.

While gradients are disabled, every node built from symbolic Tensors reads its inputs
through ``detach``, so the result is a constant for differentiation (its ``grad_fn`` is
None), as in PyTorch, where results computed under ``no_grad`` do not require grad. The
switch is one thread-local flag read by ``graph.make`` (thread-local like torch's, so
one thread's ``no_grad`` does not detach another thread's trace). On torch tensors the context
also enters ``torch.no_grad()``, so a polymorphic function behaves the same on both.

Function transforms (``grad_fn``, ``sg.vjp``, ``sg.jacobian``, ...) trace with gradients
enabled whatever the outer mode, as ``torch.func`` transforms do.
"""
import functools
import sys
import threading
from typing import Any, Callable, Literal, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])


class _State(threading.local):
    enabled = True


_state = _State()


def is_grad_enabled() -> bool:
    """False inside ``sg.no_grad()``."""
    return _state.enabled


class _GradMode:
    """A context manager and decorator that sets the gradient mode and restores it."""

    mode = True

    def __enter__(self) -> "_GradMode":
        self._prev = _state.enabled
        _state.enabled = self.mode
        torch = sys.modules.get("torch")
        self._torch = torch.set_grad_enabled(self.mode) if torch is not None else None
        if self._torch is not None:
            self._torch.__enter__()
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        _state.enabled = self._prev
        if self._torch is not None:
            self._torch.__exit__(*exc)
        return False

    def __call__(self, fn: _F) -> _F:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]  # functools.wraps keeps the signature


class no_grad(_GradMode):
    """Inside ``with sg.no_grad():`` results built from symbolic Tensors carry no
    gradient (as if every input were ``detach``-ed); also usable as a decorator."""

    mode = False


class enable_grad(_GradMode):
    """Gradients enabled again inside ``no_grad`` (``torch.enable_grad``)."""

    mode = True
