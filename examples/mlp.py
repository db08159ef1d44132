"""A two-layer perceptron, biases broadcast over a batch, mean squared error.

    python examples/mlp.py
"""
import numpy as np

import symgrad as sg
from _verify import compare, finish


def loss(W1, b1, W2, b2, X, Y):
    H = sg.tanh(X @ W1.T + b1)
    return sg.mean((H @ W2.T + b2 - Y) ** 2)


shapes = {"W1": ("h", "d"), "b1": ("h",), "W2": ("o", "h"), "b2": ("o",),
          "X": ("B", "d"), "Y": ("B", "o")}
g = sg.grad_fn(loss, shapes=shapes, wrt=["W1", "b1", "W2", "b2"])
print("loss = mean((tanh(X W1ᵀ + b1) W2ᵀ + b2 - Y)²)\n")
print(g)
print("\ngenerated NumPy code:\n" + g.source("numpy"))

rng = np.random.default_rng(1)
sizes = {"d": 4, "h": 5, "o": 3, "B": 8}
args = [rng.standard_normal(tuple(sizes[k] for k in shapes[name])) for name in shapes]
ok = compare(g, loss, args)
report = sg.check(loss, shapes=shapes, wrt=["W1", "b1", "W2", "b2"],
                  dims={"d": 3, "h": 2, "o": 2, "B": 5}, order=2)
print("\n" + str(report))
finish(ok and report.ok, "MLP gradients match torch.autograd")
