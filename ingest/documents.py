"""A document's code blocks, read as the log they hold: a README or a docs page that pastes a training log.

Markdown fences (a line of three or more backticks or tildes, to the next such line) and reStructuredText literal
blocks (`.. code-block:: text`, `.. code:: text`, `.. sourcecode::`, or a paragraph ending in `::`, then the
lines indented under it) are kept, each de-indented by its own indentation; every other line (the prose) is left
blank, so the view has the document's line numbers and a line named in a message is the document's own line.
"""

from __future__ import annotations

import re

MAX_DOCUMENT_BYTES = 4 * 1024 * 1024  # a page of prose, not a log: a larger file is never read as a document

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})")
_RST_BLOCK = re.compile(r"^(\s*)(?:\.\. (?:code-block|code|sourcecode)::.*|(?!\.\. )\S.*::)\s*$")
_RST_OPTION = re.compile(r"^\s+:[\w-]+:")


def code_view(text: str) -> str | None:
    """The document with its prose blanked and its code blocks de-indented, line for line; None when it holds no
    code block (not a document, or one with nothing to read)."""
    lines = text.split("\n")
    out = [""] * len(lines)
    found = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if (fence := _FENCE.match(line)) is not None and _opens(fence.group(2), lines[i - 1] if i else ""):
            end = _fence_end(lines, i + 1, fence.group(2))
            _keep(lines, out, i + 1, end)
            found = found or end > i + 1
            i = end + 1
        elif (block := _RST_BLOCK.match(line)) is not None:
            body = _options_end(lines, i + 1, len(block.group(1)))
            end = _indented_end(lines, body, len(block.group(1)))
            _keep(lines, out, body, end)
            found = found or any(lines[j].strip() for j in range(body, end))
            i = max(end, i + 1)
        else:
            i += 1
    return "\n".join(out) if found else None


def _opens(fence: str, before: str) -> bool:
    """Whether a fence line opens a block: backticks do; tildes only after a blank line (under a title they are a
    reStructuredText section's underline)."""
    return fence[0] == "`" or not before.strip()


def _fence_end(lines: list[str], start: int, fence: str) -> int:
    """The index of the line closing a fence opened by `fence` (the end of the document when none does)."""
    closing = re.compile(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$")
    return next((j for j in range(start, len(lines)) if closing.match(lines[j])), len(lines))


def _options_end(lines: list[str], start: int, outer: int) -> int:
    """The index after an rST directive's options (`:linenos:`), indented under a line indented by `outer`."""
    j = start
    while j < len(lines) and _RST_OPTION.match(lines[j]) and _indent(lines[j]) > outer:
        j += 1
    return j


def _indented_end(lines: list[str], start: int, outer: int) -> int:
    """The index after an rST literal block under a line indented by `outer`: blank lines, then the lines indented
    deeper, to the first non-blank line that is not."""
    j = start
    while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > outer):
        j += 1
    return j


def _keep(lines: list[str], out: list[str], start: int, end: int) -> None:
    """Lines start..end-1 into `out`, less their common indentation."""
    body = [j for j in range(start, end) if lines[j].strip()]
    if not body:
        return
    common = min(_indent(lines[j]) for j in body)
    for j in body:
        out[j] = lines[j][common:]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())
