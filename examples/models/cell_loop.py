"""An LSTMCell and an RNNCell stepped by a Python loop: tracing unrolls the loop, so the
gradient is one straight-line program over the steps.

    python examples/models/cell_loop.py
"""
import numpy as np
import torch
import torch.nn as nn

from _zoo import finish, verify_model

FEATURES, HIDDEN, STEPS = 3, 4, 4


class CellLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTMCell(FEATURES, HIDDEN)
        self.rnn = nn.RNNCell(HIDDEN, HIDDEN)
        self.out = nn.Linear(HIDDEN, 1)

    def forward(self, x):                           # x: (STEPS, B, FEATURES)
        h = c = g = None
        for t in range(STEPS):
            h, c = self.lstm(x[t]) if h is None else self.lstm(x[t], (h, c))
            g = self.rnn(h) if g is None else self.rnn(h, g)
        return self.out(g)


def squared_error(y, target):
    return ((y - target) ** 2).mean()


SHAPES = {"x": (STEPS, "B", FEATURES), "target": ("B", 1)}


def batch(seed, size):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((STEPS, size, FEATURES)),
            "target": rng.standard_normal((size, 1))}


def main():
    torch.manual_seed(0)
    return verify_model("LSTMCell + RNNCell Python loop", CellLoop().double(), SHAPES,
                        squared_error, [batch(1, 2), batch(2, 3)], order2=True, dims={"B": 2})


if __name__ == "__main__":
    finish(main(), "cell loop gradients equal torch.autograd")
