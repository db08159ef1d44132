"""Small nn.Modules for the command line's module mode:

    symgrad examples.cli_net:Net --shape x=B,3 --loss mse
    symgrad examples.cli_net:Classifier --shape x=B,4 --loss cross_entropy --check
    symgrad examples.cli_net:Net --shape x=3 --jacobian --wrt x
    symgrad examples.cli_net:make_probabilities --shape input=B,2 --loss bce --check
"""
import torch
from torch import nn


class Net(nn.Module):
    """A two-layer perceptron, 3 -> 4 -> 2."""

    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(3, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, x):
        return self.out(torch.tanh(self.hidden(x)))


class Classifier(nn.Module):
    """Scores for 3 classes from 4 features."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))

    def forward(self, x):
        return self.layers(x)


def make_probabilities():
    """A module factory: the CLI calls a function of no arguments to get the module."""
    return nn.Sequential(nn.Linear(2, 1), nn.Sigmoid(), nn.Flatten(0))


if __name__ == "__main__":
    # the command line on this file: formulas, then a check against torch.autograd
    import os
    import sys

    from symgrad.cli import main
    for name, *options in (["Net", "--shape", "x=B,3", "--loss", "mse"],
                           ["Classifier", "--shape", "x=B,4", "--loss", "cross_entropy",
                            "--check"]):
        print("$ symgrad", f"{os.path.basename(__file__)}:{name}", *options)
        status = main([f"{__file__}:{name}", *options])
        if status:
            sys.exit(status)
