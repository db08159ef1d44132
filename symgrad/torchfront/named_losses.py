"""Losses by name, for the command line's module mode (``symgrad pkg.mod:Net --loss
mse``): ``named_loss(name, target)`` is ``loss(output, <target>)`` written with
torch.nn.functional, so it traces through the torch front end on symbolic Tensors and
runs in torch for ``sg.check``'s reference."""

TARGET_LOSSES = ("mse", "l1", "cross_entropy", "nll", "bce", "bce_logits")
CLASS_LOSSES = ("cross_entropy", "nll")      # integer class indices as the target
REDUCTIONS = ("sum", "mean", "none")
LOSSES = TARGET_LOSSES + REDUCTIONS


def _functional(name):
    import torch.nn.functional as F
    return {"mse": F.mse_loss, "l1": F.l1_loss, "cross_entropy": F.cross_entropy,
            "nll": F.nll_loss, "bce": F.binary_cross_entropy,
            "bce_logits": F.binary_cross_entropy_with_logits}[name]


def named_loss(name, target=None):
    """``loss(output, <target>)`` for a name of TARGET_LOSSES (its second parameter is
    called ``target``, the name of that input), or ``loss(output)`` for "sum", "mean"
    and "none" (the output itself)."""
    import inspect
    if name in TARGET_LOSSES:
        fn = _functional(name)

        def loss(output, *rest):
            return fn(output, *rest)
        loss.__signature__ = inspect.Signature(
            [inspect.Parameter("output", inspect.Parameter.POSITIONAL_OR_KEYWORD),
             inspect.Parameter(target, inspect.Parameter.POSITIONAL_OR_KEYWORD)])
        return loss
    if name == "sum":
        return lambda output: output.sum()
    if name == "mean":
        return lambda output: output.mean()
    if name == "none":
        return lambda output: output
    raise ValueError(f"unknown loss {name!r}; one of {', '.join(LOSSES)}")
