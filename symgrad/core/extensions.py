"""Services core calls but the layers built on it provide.

Core never imports those layers (ARCHITECTURE.md), yet a symbolic Tensor must print
itself, answer ``x.grad_fn``, trace the torch functions it meets, and an sg op called on
numbers must compute. Each such service is a slot here that the providing layer fills
when it is imported (``import symgrad`` imports them all); core calls the slot and
never learns who filled it. An empty slot raises a ``SymgradError`` naming its layer.
"""
from ..errors import SymgradError


class Slot:
    """One service: ``provide(fn)`` fills it, calling it calls ``fn``."""

    __slots__ = ("name", "layer", "fn")

    def __init__(self, name, layer):
        self.name = name
        self.layer = layer
        self.fn = None

    def provide(self, fn):
        self.fn = fn
        return fn

    def __call__(self, *args, **kwargs):
        fn = self.fn
        if fn is None:
            raise SymgradError(f"{self.name} is provided by {self.layer}, which is not "
                               f"loaded; import symgrad (not only symgrad.core)")
        return fn(*args, **kwargs)

    def __repr__(self):
        return f"<slot {self.name} from {self.layer}: {'filled' if self.fn else 'empty'}>"


evaluate = Slot("computing an op on numbers, arrays and tensors", "symgrad.codegen")
format_tensor = Slot("printing a Tensor", "symgrad.views")
grad_fn = Slot("the backward function of a node (x.grad_fn)", "symgrad.diff")
requires_grad = Slot("whether a node carries a gradient (x.requires_grad)", "symgrad.diff")
torch_function = Slot("tracing torch functions (__torch_function__)", "symgrad.torchfront")
torch_attribute = Slot("torch.Tensor methods of symbolic Tensors", "symgrad.torchfront")
