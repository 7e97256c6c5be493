"""Where is the bug: trace f, check each operation in context, name the culprit.

Also the traced graph of a small f swept by forward and reverse mode, step by
step (``ad_sweeps``, for teaching).
"""

from .localize import Localization, OpNode, locate
from .result import CutInput
from .sweeps import ADSweeps, ad_sweeps

__all__ = ["locate", "Localization", "OpNode", "CutInput", "ad_sweeps", "ADSweeps"]
