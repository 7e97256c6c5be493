"""What a test run leaves behind about its failed derivative checks: each
check's report as JSON and its heatmaps as PNG, one HTML page linking them
all, and the lines a terminal summary prints (the pytest plugin's writer).

Nothing here knows pytest: a record is plain data (it travels from pytest-xdist's
workers to the controller), and the files are written from records.
"""

from .files import check_record, slug, write_check
from .summary import clear_previous, terminal_lines, write_summary

__all__ = [
    "check_record", "write_check", "slug", "write_summary", "clear_previous", "terminal_lines",
]  # fmt: skip
