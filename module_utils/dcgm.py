"""Parser for the ``dcgmi diag -r N`` result table (pure function)."""

from __future__ import annotations

import re

from ansible.module_utils.gate import ParseError

_SECTION_RE = re.compile(r"^[|+]-+\s+(\w[\w ]*?)\s+-+\+")
_ROW_RE = re.compile(r"^\|\s(.*?)\s*\|\s(.*?)\s*\|$")
_BORDER_RE = re.compile(r"^\+[-=]+\+[-=]+\+$")


def parse_dcgmi_diag(text: str) -> dict:
    """Parse the text table of ``dcgmi diag``.

    Returns ``{"metadata": {"DCGM Version": ...}, "tests": [{"section", "name", "result", "detail",
    "notes": [...]}], "failed": [names], "warned": [names], "skipped": [names]}``. ``result`` is the
    first word of the cell (``Pass``, ``Fail``, ``Warn``, ``Skip``); ``detail`` is what follows the
    dash (``All``, ``GPU: 0``); ``notes`` collect the continuation rows (empty first column) that
    dcgmi prints under a failing or warning test. The table must be closed by its bottom border;
    anything else is truncated or foreign and raises ParseError.
    """
    if not text or not text.strip():
        raise ParseError("dcgmi diag: empty output")
    lines = [line.rstrip() for line in text.splitlines()]
    header = re.compile(r"^\|\s*Diagnostic\s*\|\s*Result\s*\|")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        errors = [line.strip() for line in lines if re.match(r"^\s*Error", line)]
        hint = f": {errors[0]}" if errors else " (not dcgmi diag output?)"
        raise ParseError(f"dcgmi diag: no 'Diagnostic | Result' table{hint}")
    metadata: dict[str, str] = {}
    tests: list[dict] = []
    section = None
    closed = False
    for line in lines[start + 1:]:
        stripped = line.strip()
        if not stripped:
            continue
        if m := _SECTION_RE.match(stripped):
            section = m.group(1)
            continue
        if _BORDER_RE.match(stripped):
            if section is not None:
                closed = True  # the last border closes the table; a later section reopens it
            continue
        if m := _ROW_RE.match(stripped):
            closed = False
            name, cell = m.group(1).strip(), m.group(2).strip()
            if not name:
                if tests and cell:
                    tests[-1]["notes"].append(cell)
                continue
            if section == "Metadata":
                metadata[name] = cell
                continue
            result, _, detail = cell.partition(" - ")
            tests.append({"section": section, "name": name, "result": result.strip(),
                          "detail": detail.strip(), "notes": []})
            continue
        if section is not None:
            raise ParseError(f"dcgmi diag: unexpected line inside the table: {stripped[:60]!r}")
    if not closed:
        raise ParseError("dcgmi diag: result table not closed by its bottom border (truncated?)")
    if not tests:
        raise ParseError("dcgmi diag: table has no test rows")

    def named(word):
        return [t["name"] for t in tests if t["result"].lower().startswith(word)]

    return {"metadata": metadata, "tests": tests, "failed": named("fail"), "warned": named("warn"),
            "skipped": named("skip")}
