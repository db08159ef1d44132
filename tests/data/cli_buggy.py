"""A function with a bug of its own, for the command line's error tests."""


def f(x):
    return undefined_name * x  # noqa: F821
