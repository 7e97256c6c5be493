import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _legacy_scalar_repr(doctest_namespace):
    """Doctests show scalars as 2.0, not np.float64(2.0), on every numpy."""
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        np.set_printoptions(legacy="1.25")
    yield
    np.set_printoptions(legacy=False)
