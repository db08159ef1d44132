"""torch.masked's reductions and normalisations on symbolic Tensors. They are Python
functions that probe the input's layout and dtype, fill the masked-out elements with
the reduction's identity (``torch.where`` against the constant mask) and call the
ordinary torch functions, which dispatch here. A symbolic Tensor is a dense (strided)
tensor, so it answers ``layout`` as torch.strided.
"""
from .dispatch import tensor_property


@tensor_property("layout")
def layout(x):
    import torch
    return torch.strided
