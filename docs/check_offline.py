"""Fail when the built site would load anything from the network when viewed.

    python docs/check_offline.py docs/_build/html

Lists every script, stylesheet, image, frame, media source or CSS ``url()`` / ``@import``
that points at an ``http(s):`` or protocol-relative (``//host``) address, and any address
on a CDN's host written anywhere in a page, stylesheet or script. Links a reader clicks
(``<a href>``) are not loads and are allowed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

#: The tags a browser fetches on its own, and the attributes holding what it fetches.
_TAG = re.compile(r"<(script|img|iframe|source|video|audio|embed|object|link)\b[^>]*>", re.I)
_ATTR = re.compile(r"\b(src|href|data|srcset)\s*=\s*[\"']?([^\"'\s>]+)", re.I)
_FETCHED_LINK = re.compile(
    r"\brel\s*=\s*[\"']?[^\"'>]*\b(stylesheet|preload|modulepreload|icon)", re.I
)
#: Script code can fetch too: any address on a CDN's host, wherever it is written.
_CDN = re.compile(
    r"(?<![\w+/])(?:https?:)?//[\w.-]*(?:cdn|unpkg\.com|jsdelivr|googleapis|mathjax)"
    r"[^\s\"'<>)]*",
    re.I,
)
#: Inline data (a picture as base64) is not an address, whatever its letters spell.
_DATA_URI = re.compile(r"data:[\w/+.-]+(?:;[\w=.-]+)*,[^\s\"'<>)]*", re.I)
_CSS = re.compile(r"(?:@import\s+|url\()\s*[\"']?([^\"')\s]+)", re.I)
_REMOTE = re.compile(r"^(?:https?:)?//", re.I)


def _addresses(path: Path) -> list[str]:
    text = path.read_text(errors="replace")
    urls = [m.group(1) for m in _CSS.finditer(text)] if path.suffix in (".css", ".html") else []
    if path.suffix == ".html":
        for tag in _TAG.finditer(text):
            whole = tag.group(0)
            if tag.group(1).lower() == "link" and not _FETCHED_LINK.search(whole):
                continue  # a <link rel="next"> or "canonical" is never fetched
            urls += [m.group(2) for m in _ATTR.finditer(whole)]
    return urls


def external_loads(site: Path) -> list[str]:
    """``"file: address"`` for every address the pages under ``site`` would fetch."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.suffix in (".html", ".css", ".js") and path.is_file():
            rel = path.relative_to(site)
            urls = [u for u in _addresses(path) if _REMOTE.match(u)]
            text = _DATA_URI.sub("data:", path.read_text(errors="replace"))
            urls += [m.group(0) for m in _CDN.finditer(text)]
            found += [f"{rel}: {u}" for u in dict.fromkeys(urls)]
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python docs/check_offline.py BUILT_HTML_DIR (e.g. docs/_build/html)")
        return 2
    found = external_loads(Path(argv[0]))
    for line in found:
        print(f"loads from the network: {line}")
    print(f"{len(found)} network loads in {argv[0]}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
