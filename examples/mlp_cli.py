"""A one-layer network's loss, for the command line:

    symgrad examples/mlp_cli.py:loss --shape W=m,n --shape x=n --shape b=m
    symgrad examples/mlp_cli.py:loss --shape W=m,n --shape x=n --shape b=m --check --dims m=3,n=2
    symgrad examples/mlp_cli.py:annotated --emit numpy
"""
import symgrad as sg


def loss(W, x, b):
    return sg.sum(sg.tanh(W @ x + b))


def annotated(W: sg.Tensor["m", "n"], x: sg.Tensor["n"]):
    return sg.sum(sg.sin(W @ x))


def scalar(x, y):
    return sg.sin(x) * y + x ** 2


def vector_valued(W, x):
    return sg.tanh(W @ x)


if __name__ == "__main__":
    print(sg.grad_fn(loss, shapes={"W": ("m", "n"), "x": ("n",), "b": ("m",)}))
