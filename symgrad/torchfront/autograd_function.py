"""An ``sg.Function`` applied to torch tensors runs as a ``torch.autograd.Function``
calling the same ``forward`` and ``backward``, so a function using it is its own
reference under ``torch.autograd`` (what ``sg.check`` compares with)."""
from ..diff import function

_adapted = {}


@function.torch_adapter.provide
def as_torch_function(cls):
    """``cls`` as a ``torch.autograd.Function``. Its backward reads the values forward
    saved; when torch builds a graph of the backward (``create_graph=True``) it reruns
    forward on the inputs first, so saved intermediates are differentiable and double
    backward is right."""
    fn = _adapted.get(cls)
    if fn is not None:
        return fn
    import torch

    def forward(tctx, *args):
        ctx = function.FunctionCtx(tctx.needs_input_grad)
        out = function.call_forward(cls, ctx, args)
        tctx.sg_ctx = ctx
        tctx.sg_args = [None if isinstance(a, torch.Tensor) else a for a in args]
        tctx.save_for_backward(*[a if isinstance(a, torch.Tensor) else None for a in args])
        nondiff = [o for o in ctx.non_differentiable if isinstance(o, torch.Tensor)]
        if nondiff:
            tctx.mark_non_differentiable(*nondiff)
        return out

    def backward(tctx, *grads):
        ctx = tctx.sg_ctx
        if torch.is_grad_enabled():
            args = [t if a is None else a for a, t in zip(tctx.sg_args, tctx.saved_tensors)]
            ctx = function.FunctionCtx(tctx.needs_input_grad)
            function.call_forward(cls, ctx, args)
        ctx.replay(ctx.to_save)
        return cls.backward(ctx, *grads)

    fn = type(f"{cls.__name__}", (torch.autograd.Function,),
              {"forward": staticmethod(forward), "backward": staticmethod(backward),
               "__module__": cls.__module__, "__doc__": cls.__doc__})
    _adapted[cls] = fn
    return fn
