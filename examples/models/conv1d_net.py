"""A 1-D convolutional classifier: reflect padding, GroupNorm, a strided convolution,
adaptive max pooling, a linear head and cross-entropy on integer labels.

    python examples/models/conv1d_net.py
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from _zoo import finish, out_of_range_raises, verify_model

CLASSES, LENGTH = 3, 12


class Conv1dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(2, 4, 3, padding=1, padding_mode="reflect")
        self.norm = nn.GroupNorm(2, 4)
        self.conv2 = nn.Conv1d(4, 6, 3, stride=2)
        self.pool = nn.AdaptiveMaxPool1d(1)
        self.head = nn.Linear(6, CLASSES)

    def forward(self, x):
        h = F.relu(self.norm(self.conv1(x)))
        return self.head(self.pool(F.relu(self.conv2(h))).flatten(1))


def classification_loss(logits, labels):
    return F.cross_entropy(logits, labels)


SHAPES = {"x": ("B", 2, LENGTH), "labels": sg.TensorSpec(("B",), dtype="int64")}


def batch(seed, size):
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((size, 2, LENGTH)),
            "labels": rng.integers(0, CLASSES, size)}


def main():
    torch.manual_seed(0)
    model = Conv1dNet().double()
    ok = verify_model("1-D conv net (reflect padding, GroupNorm, stride, adaptive max pool)",
                      model, SHAPES, classification_loss, [batch(1, 3), batch(2, 4)],
                      order2=True, dims={"B": 2})
    ok &= out_of_range_raises(model, SHAPES, classification_loss, batch(3, 2), "labels",
                              np.array([-1, 0]))
    return ok


if __name__ == "__main__":
    finish(main(), "1-D conv net gradients equal torch.autograd")
