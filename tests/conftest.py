"""One torch thread per test process: pytest-xdist runs one process per core, and torch's
OpenMP pool of one thread per core in each of them oversubscribes the machine; its threads
then spin waiting for each other (torch's max pooling ran 13x slower that way on 2 cores).
Tests of thread settings run their own subprocesses with their own environment."""
import importlib.util

if importlib.util.find_spec("torch") is not None:
    import torch

    torch.set_num_threads(1)
