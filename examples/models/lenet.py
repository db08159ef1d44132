"""LeNet on 28×28 images: convolutions, relu, max and average pooling, linear layers and
cross-entropy on integer labels.

    python examples/models/lenet.py
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import symgrad as sg
from _zoo import finish, out_of_range_raises, verify_model

CLASSES = 10


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, CLASSES)

    def forward(self, images):
        h = F.max_pool2d(F.relu(self.conv1(images)), 2)
        h = F.avg_pool2d(F.relu(self.conv2(h)), 2)
        h = h.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(h)))))


def classification_loss(logits, labels):
    return F.cross_entropy(logits, labels)


SHAPES = {"images": ("B", 1, 28, 28), "labels": sg.TensorSpec(("B",), dtype="int64")}


def batch(seed, size):
    rng = np.random.default_rng(seed)
    return {"images": rng.standard_normal((size, 1, 28, 28)),
            "labels": rng.integers(0, CLASSES, size)}


def main():
    torch.manual_seed(0)
    model = LeNet().double()
    ok = verify_model("LeNet (conv, relu, max/avg pool, linear) on integer labels", model,
                      SHAPES, classification_loss, [batch(1, 4), batch(2, 3)], dims={"B": 2})
    ok &= out_of_range_raises(model, SHAPES, classification_loss, batch(3, 2), "labels",
                              np.array([1, CLASSES]))
    return ok


if __name__ == "__main__":
    finish(main(), "LeNet gradients equal torch.autograd")
