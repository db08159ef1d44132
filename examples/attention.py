"""Scaled dot-product attention softmax(Q Kᵀ / √d) V with a scalar loss.

    python examples/attention.py
"""
import math

import numpy as np

import symgrad as sg
from _verify import compare, finish

D = 4


def attention_loss(Q, K, V, W):
    A = sg.softmax(Q @ K.T / math.sqrt(D), axis=-1)
    return sg.sum((A @ V) * W)


shapes = {"Q": ("s", D), "K": ("s", D), "V": ("s", "e"), "W": ("s", "e")}
g = sg.grad_fn(attention_loss, shapes=shapes, wrt=["Q", "K", "V"])
print("loss = sum(softmax(Q Kᵀ/√d) V ∘ W)\n")
print(g)

rng = np.random.default_rng(2)
args = [rng.standard_normal(s) for s in [(6, D), (6, D), (6, 3), (6, 3)]]
ok = compare(g, attention_loss, args)
report = sg.check(attention_loss, shapes=shapes, wrt=["Q", "K", "V"], dims={"s": 5, "e": 2})
print("\n" + str(report))
finish(ok and report.ok, "attention gradients match torch.autograd")
