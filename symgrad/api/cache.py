"""The traced and compiled programs of ``sg.hessian(f, x)`` and the other transforms,
kept per input signature so that calling a transform again costs about a compiled call.

Tracing and compiling take a millisecond or more; a compiled call on small arrays takes
microseconds. ``jax.jit`` answers this by caching per function and argument signature, and
so does this module. An entry's key is:

* the function object (a plain Python function; other callables, such as nn.Modules whose
  parameters an optimiser updates in place, are traced every call);
* the transform and its options (argnums, mode);
* per primal: Python number type, or shape and dtype (and device for torch);
* guards on what the trace read besides the primals: the values in the function's closure
  cells, its default arguments and the module globals its code names. Numbers (by their
  repr: -0.0 is not 0.0), strings and small arrays and CPU tensors are compared by value,
  short tuples, lists and dicts item by item, torch tensors also by identity and in-place
  version counter, modules, functions, classes and builtins by identity (of a living
  object: a new array at a freed one's address is a different array). A function that
  reads any other object (an nn.Module, whose parameters an optimiser updates in place; a
  config object whose attributes change) is traced every call. A large array captured by
  ``f`` and changed in place without a version bump (NumPy, ``tensor.data``) is not
  noticed (as with ``jax.jit``); rebinding the name is. Globals read by other functions
  ``f`` calls are not guarded.

The cache is a bounded LRU (``MAX_ENTRIES`` plans over all functions), and a function's
entries go when the function is garbage collected (a weak reference with a callback), so
lambdas made in a loop do not pile up.
"""
import collections
import functools
import threading
import types
import weakref
from typing import Any, Callable

import numpy

from ..core.build import torch_module

MAX_ENTRIES = 128
SMALL_ARRAY = 256          # captured arrays up to this many elements are guarded by value

_plans: collections.OrderedDict[Any, Any] = collections.OrderedDict()  # key -> (ref to f, plan)
_keys_of: dict[int, set[Any]] = {}   # id(f) -> set of keys
_lock = threading.RLock()


def clear():
    """Forget every cached plan."""
    with _lock:
        _plans.clear()
        _keys_of.clear()


def size():
    """The number of cached plans."""
    return len(_plans)


def signature(values):
    """A hashable description of the primals, or None when one is not a number, a NumPy
    array or a torch tensor (symbolic Tensors are substituted, not compiled)."""
    torch = torch_module()
    out: list[Any] = []
    for v in values:
        t = type(v)
        if t is float or t is int or t is bool:
            out.append(t)
        elif t is numpy.ndarray or isinstance(v, numpy.generic):
            out.append((t, v.shape, v.dtype))
        elif torch is not None and isinstance(v, torch.Tensor):
            out.append((t, tuple(v.shape), v.dtype, v.device))
        else:
            return None
    return tuple(out)


@functools.lru_cache(maxsize=1024)
def _global_names(code):
    """The names ``code`` (and the functions, lambdas and comprehensions nested in it) may
    read as globals."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names.update(_global_names(c))
    return tuple(sorted(names))


class _Same:
    """A guard on an object's identity that an object created later at the same address
    (the same ``id``) does not pass: equal only while the object lives. Objects without
    weak references (lists, dicts) are held."""

    __slots__ = ("ref", "key")
    ref: Callable[[], Any]

    def __init__(self, v):
        self.key = id(v)
        try:
            self.ref = weakref.ref(v)
        except TypeError:
            self.ref = functools.partial(_held, v)

    def __hash__(self):
        return self.key

    def __eq__(self, other):
        if type(other) is not _Same or other.key != self.key:
            return False
        v = self.ref()
        return v is not None and v is other.ref()


def _held(v):
    return v


class Uncached(Exception):
    """What ``f`` read cannot be guarded (see ``IDENTITY_SAFE``): trace every call."""


# Objects whose identity stands for what a trace reads of them: modules, functions, classes
# and builtins. Any other object (an nn.Module an optimiser updates in place, a config
# whose attributes are reassigned) can change under the same identity.
IDENTITY_SAFE = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type,
                 numpy.ufunc, numpy.dtype, type(Ellipsis), slice, range)


def _guard(v, depth=0):
    t = type(v)
    if v is None or t in (bool, int, str, bytes):
        return (t, v)
    if t is float or t is complex:
        return (t, repr(v))           # -0.0 is not 0.0, and nan is nan
    if isinstance(v, numpy.generic):
        return (t, v.tobytes())
    if t is numpy.ndarray:
        small = v.size <= SMALL_ARRAY
        return (t, _Same(v), v.shape, v.dtype, v.tobytes() if small else None)
    if t in (tuple, list) and depth < 2 and len(v) <= 16:
        return (t,) + tuple(_guard(x, depth + 1) for x in v)
    if t is dict and depth < 2 and len(v) <= 16:
        return (t,) + tuple((_guard(k, depth + 1), _guard(x, depth + 1)) for k, x in v.items())
    torch = torch_module()
    if torch is not None:
        if isinstance(v, torch.Tensor):
            small = v.device.type == "cpu" and v.numel() <= SMALL_ARRAY and not v.is_sparse
            value = v.detach().contiguous().numpy().tobytes() if small else None
            return (t, _Same(v), v._version, tuple(v.shape), v.dtype, v.device, value)
        if isinstance(v, (torch.dtype, torch.device)):
            return (t, v)
    if isinstance(v, IDENTITY_SAFE):
        return (object, _Same(v))
    raise Uncached(t.__name__)


def guards(f):
    """What the trace of ``f`` read besides its arguments (see the module docstring)."""
    cells = f.__closure__ or ()
    out = []
    for c in cells:
        try:
            out.append(_guard(c.cell_contents))
        except ValueError:        # an empty cell (a name assigned later)
            out.append(None)
    g = f.__globals__
    for name in _global_names(f.__code__):
        if name in g:
            out.append((name, _guard(g[name])))
    out.append(_guard(f.__defaults__))
    if f.__kwdefaults__:
        out.append(tuple((k, _guard(v)) for k, v in sorted(f.__kwdefaults__.items())))
    return tuple(out)


def key(f, options, values):
    """The cache key of transform ``options`` applied to ``f`` at ``values``, or None
    when that call is not cached."""
    if type(f) is not types.FunctionType:
        return None
    sig = signature(values)
    if sig is None:
        return None
    try:
        return (id(f), f.__code__, options, sig, guards(f))
    except Uncached:
        return None


def get(k, f):
    with _lock:
        entry = _plans.get(k)
        if entry is None or entry[0]() is not f:
            return None
        _plans.move_to_end(k)
        return entry[1]


def _forget(fid):
    def drop(_ref):
        with _lock:
            for k in _keys_of.pop(fid, ()):
                _plans.pop(k, None)
    return drop


def put(k, f, plan):
    with _lock:
        fid = id(f)
        keys = _keys_of.get(fid)
        if keys is None:
            keys = _keys_of[fid] = set()
        ref = weakref.ref(f, _forget(fid))
        keys.add(k)
        _plans[k] = (ref, plan)
        while len(_plans) > MAX_ENTRIES:
            old, (_, _) = _plans.popitem(last=False)
            owner = _keys_of.get(old[0])
            if owner is not None:
                owner.discard(old)
                if not owner:
                    del _keys_of[old[0]]
