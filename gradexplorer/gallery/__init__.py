"""Example functions with hand-derived derivatives (tests, teaching, benchmarks).

They are user code, written with ``autograd.numpy`` as users write theirs.
"""

from .examples import EXAMPLES, Example, get, names

__all__ = ["Example", "EXAMPLES", "get", "names"]
