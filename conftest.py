import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _legacy_scalar_repr(doctest_namespace):
    """Doctests show scalars as 2.0, not np.float64(2.0), on every numpy."""
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        np.set_printoptions(legacy="1.25")
    yield
    np.set_printoptions(legacy=False)


def _missing(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is None


# Modules for an optional AD system are not collected (doctests) when it is absent.
collect_ignore = []
if _missing("torch"):
    collect_ignore += ["gradexplorer/backends/torch", "gradexplorer/gallery/for_torch.py"]
if _missing("jax"):
    collect_ignore += ["gradexplorer/backends/jax", "gradexplorer/gallery/for_jax.py"]
