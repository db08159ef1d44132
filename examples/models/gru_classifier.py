"""A bidirectional GRU sequence classifier: the last states of both directions, a linear
head and cross-entropy on integer class labels.

    python examples/models/gru_classifier.py
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from _zoo import finish, out_of_range_raises, verify_model

FEATURES, HIDDEN, CLASSES, STEPS = 3, 4, 3, 4


class GRUClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(FEATURES, HIDDEN, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * HIDDEN, CLASSES)

    def forward(self, x):
        _, h = self.gru(x)                          # h: (2, B, HIDDEN)
        return self.head(torch.cat([h[0], h[1]], dim=1))


def classification_loss(logits, labels):
    return F.cross_entropy(logits, labels)


SHAPES = {"x": ("B", STEPS, FEATURES), "labels": sg.TensorSpec(("B",), dtype="int64")}


def batch(seed, size):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((size, STEPS, FEATURES)),
            "labels": rng.integers(0, CLASSES, size)}


def main():
    torch.manual_seed(0)
    model = GRUClassifier().double()
    ok = verify_model("Bidirectional GRU classifier", model, SHAPES, classification_loss,
                      [batch(1, 3), batch(2, 5)], order2=True, dims={"B": 2})
    ok &= out_of_range_raises(model, SHAPES, classification_loss, batch(3, 3), "labels",
                              np.array([0, CLASSES, 1]))
    return ok


if __name__ == "__main__":
    finish(main(), "bidirectional GRU classifier gradients equal torch.autograd")
