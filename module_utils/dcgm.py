"""Parsers for ``dcgmi diag -r N`` results, text table and ``-j`` JSON (pure functions).

Both return the same shape::

    {"format": "text"|"json", "metadata": {"DCGM Version": ...},
     "tests": [{"section", "name", "result", "detail", "notes": [...],
                "entities": [{"entity": "GPU0", "result": "Fail"}]}],
     "errors": [...], "sections": [...], "failed": [names], "warned": [names], "skipped": [names],
     "unknown": ["name: word"], "failed_detail": ["GPU Memory (GPU0)"]}

The table layouts read (dcgmi/Diag.cpp in NVIDIA/DCGM prints both):

* DCGM 3.x: a test row ``| PCIe | Pass - GPUs: 1, 2, 3 |`` and continuation rows with an empty
  first column, ``|  | Fail - GPU: 0 |``: one more result for the same test, on other GPUs.
* DCGM 4.x: a test row ``| memory | Fail |`` and one continuation row per entity,
  ``|  | GPU0: Pass |``; messages come as rows named ``Warning: GPU0`` / ``Info: GPU0`` (or ``Warning``).

A test's ``result`` is its worst word over the test row and every per-entity row (Fail > Warn > Pass
> Skip), except that a test whose every GPU result is Skip is Skip whatever its row says: DCGM's
overall word is Pass when any entity passed, and no GPU did. A result word that is not one of Pass,
Fail, Warn, Skip (``Not Run``, an empty cell, any other word) is listed in ``unknown``; a row named
``Error`` in ``errors``. The verdict (``gate.dcgm_verdict``) judges both; the parser only refuses what
it cannot read at all.
"""

from __future__ import annotations

import json
import re

from ansible.module_utils.gate import ParseError

RESULT_WORDS = ("Pass", "Fail", "Warn", "Skip")
_RANK = {"Skip": 0, "Pass": 1, "Warn": 2, "Fail": 3}
_SECTION_RE = re.compile(r"^[|+]-+\s+(\w[\w ]*?)\s+-+\+")
_ROW_RE = re.compile(r"^\|\s(.*?)\s*\|\s(.*?)\s*\|$")
_BORDER_RE = re.compile(r"^\+[-=]+\+[-=]+\+$")
# DCGM 3.x: "Fail - GPU: 0", "Pass - GPUs: 1, 2, 3"
_GPUS_RE = re.compile(r"^GPUs?:\s*(\d+(?:\s*,\s*\d+)*)$")
# DCGM 4.x: "GPU0: Fail", "CPU1: Pass"
_ENTITY_RE = re.compile(r"^([A-Za-z]+)\s?(\d+):\s*(.*)$")
_MESSAGE_RE = re.compile(r"^(Warning|Info)\b")


def _word(text: str) -> str | None:
    """The known result word spelled as DCGM does, or None."""
    for word in RESULT_WORDS:
        if text == word:
            return word
    return None


def _worst(words):
    known = [w for w in words if w in _RANK]
    return max(known, key=_RANK.__getitem__) if known else None


def _finish(fmt: str, metadata: dict, tests: list[dict], errors: list[str]) -> dict:
    """The parse result from the tests read: each test's result word, and the lists the verdict judges.

    Work at risk: a test read as Pass lets the verdict admit the node to jobs. A test is Pass only on a
    known word with no worse one below it, and only when a GPU it lists passed: a Pass row over GPUs
    that all skipped is Skip; an unknown word is kept in ``unknown`` for the verdict to refuse.
    """
    unknown, failed_detail = [], []
    for t in tests:
        text_row = t.pop("text_row", False)
        head = [t["head"]] if t["head"] or not t["entities"] or text_row else []
        words = head + [e["result"] for e in t["entities"]]
        bad = [w for w in words if _word(w) is None]
        for w in bad:
            unknown.append(f"{t['name']}: {w!r}" if w else f"{t['name']}: empty result")
        t["result"] = _worst(words) if not bad else (bad[0] or "")
        gpu_words = [e["result"] for e in t["entities"] if e["entity"].startswith("GPU")]
        if t["result"] == "Pass" and gpu_words and not any(w in ("Pass", "Warn") for w in gpu_words):
            t["result"] = "Skip"
        if t["result"] == "Fail":
            gpus = [e["entity"] for e in t["entities"] if e["result"] == "Fail"]
            if not gpus and t["detail"]:
                gpus = [t["detail"]]
            failed_detail.append(t["name"] + (f" ({', '.join(gpus)})" if gpus else ""))
        del t["head"]

    def named(word):
        return [t["name"] for t in tests if t["result"] == word]

    sections = list(dict.fromkeys(t["section"] for t in tests))
    return {"format": fmt, "metadata": metadata, "tests": tests, "errors": errors, "sections": sections,
            "failed": named("Fail"), "warned": named("Warn"), "skipped": named("Skip"), "unknown": unknown,
            "failed_detail": failed_detail}


def _entity_label(group: str, ident) -> str:
    return f"{group.upper()}{ident}"


def parse_dcgmi_diag(text: str) -> dict:
    """Parse ``dcgmi diag`` output: the text table (DCGM 3.x or 4.x) or, when the output is a JSON
    object, ``dcgmi diag -j`` (see :func:`parse_dcgmi_diag_json`).

    The table must be closed by its bottom border; anything else is truncated or foreign and raises
    ParseError. A continuation row is read as a result (``Fail - GPU: 0``, ``GPU0: Fail``) or kept as
    a note (wrapped message text); never dropped.
    """
    if not text or not text.strip():
        raise ParseError("dcgmi diag: empty output")
    if text.lstrip().startswith("{"):
        return parse_dcgmi_diag_json(text)
    lines = [line.rstrip() for line in text.splitlines()]
    header = re.compile(r"^\|\s*Diagnostic\s*\|\s*Result\s*\|")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        errors = [line.strip() for line in lines if re.match(r"^\s*Error", line)]
        hint = f": {errors[0]}" if errors else " (not dcgmi diag output?)"
        raise ParseError(f"dcgmi diag: no 'Diagnostic | Result' table{hint}")
    metadata: dict[str, str] = {}
    tests: list[dict] = []
    errors: list[str] = []
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
        m = _ROW_RE.match(stripped)
        if not m:
            if section is not None:
                raise ParseError(f"dcgmi diag: unexpected line inside the table: {stripped[:60]!r}")
            continue
        closed = False
        name, cell = m.group(1).strip(), m.group(2).strip()
        if section == "Metadata" and name:
            if name in metadata:
                raise ParseError(f"dcgmi diag: metadata {name!r} printed twice")
            metadata[name] = cell
            continue
        if re.match(r"^Error\b", name):
            errors.append(f"{name}: {cell}".rstrip(": "))
            continue
        if not name or _MESSAGE_RE.match(name):
            if section is None:
                raise ParseError(f"dcgmi diag: row before any section: {stripped[:60]!r}")
            if not tests or tests[-1]["section"] != section:
                if name or cell:
                    raise ParseError(f"dcgmi diag: continuation row without a test: {stripped[:60]!r}")
                continue
            test = tests[-1]
            word, sep, detail = cell.partition(" - ")
            gpus = _GPUS_RE.match(detail.strip()) if sep else None
            entity = _ENTITY_RE.match(cell)
            if not name and gpus and _word(word.strip()):
                for gpu in re.findall(r"\d+", gpus.group(1)):
                    test["entities"].append({"entity": f"GPU{gpu}", "result": word.strip()})
            elif not name and entity and entity.group(1).upper() in ("GPU", "CPU", "SWITCH", "NVSWITCH",
                                                                    "CX", "LINK"):
                test["entities"].append({"entity": _entity_label(entity.group(1), entity.group(2)),
                                         "result": entity.group(3).strip()})
            elif cell or name:
                test["notes"].append(f"{name}: {cell}" if name else cell)
            continue
        if section is None:
            raise ParseError(f"dcgmi diag: row before any section: {stripped[:60]!r}")
        if any(t["section"] == section and t["name"] == name for t in tests):
            raise ParseError(f"dcgmi diag: {section} test {name!r} printed twice")
        word, _, detail = cell.partition(" - ")
        tests.append({"section": section, "name": name, "head": word.strip(), "detail": detail.strip(),
                      "notes": [], "entities": [], "text_row": True})
        if detail.strip() and (gpus := _GPUS_RE.match(detail.strip())) and _word(word.strip()):
            tests[-1]["entities"] = [{"entity": f"GPU{g}", "result": word.strip()}
                                     for g in re.findall(r"\d+", gpus.group(1))]
    if not closed:
        raise ParseError("dcgmi diag: result table not closed by its bottom border (truncated?)")
    if not tests and not errors:
        raise ParseError("dcgmi diag: table has no test rows")
    return _finish("text", metadata, tests, errors)


def parse_dcgmi_diag_json(text: str) -> dict:
    """Parse ``dcgmi diag -j``: ``{"DCGM GPU Diagnostic" (3.x) | "DCGM Diagnostic" (4.x):
    {"test_categories": [{"category", "tests": [{"name", "results": [{"status", "gpu_id"|"gpu_ids"|
    "entity_group"+"entity_id", "warnings": [{"warning"}]}], "test_summary": {"status"}}]}]}}``,
    with ``metadata`` / ``version`` and ``runtime_error`` where DCGM gives them."""
    try:
        data = json.loads(text[text.index("{"):])
    except ValueError as exc:
        raise ParseError(f"dcgmi diag -j: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ParseError("dcgmi diag -j: not a JSON object")
    root = data.get("DCGM Diagnostic", data.get("DCGM GPU Diagnostic"))
    errors = [str(data[k]) for k in ("runtime_error", "error") if data.get(k)]
    if isinstance(root, dict):
        errors += [str(root[k]) for k in ("runtime_error", "error") if root.get(k)]
    if not isinstance(root, dict):
        if errors:
            return _finish("json", {}, [], [f"Error: {e}" for e in errors])
        raise ParseError("dcgmi diag -j: no 'DCGM Diagnostic' object (not dcgmi diag JSON?)")
    meta_src = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    metadata = {str(k): str(v) for k, v in meta_src.items()}
    version = metadata.get("version") or root.get("version") or data.get("version")
    if version:
        metadata["DCGM Version"] = str(version)
    categories = root.get("test_categories")
    if not isinstance(categories, list):
        raise ParseError("dcgmi diag -j: no test_categories list")
    tests = []
    for category in categories:
        if not isinstance(category, dict) or not isinstance(category.get("tests"), list):
            raise ParseError("dcgmi diag -j: a test category without a tests list")
        for test in category["tests"]:
            if not isinstance(test, dict) or not test.get("name"):
                raise ParseError("dcgmi diag -j: a test without a name")
            summary = test.get("test_summary") if isinstance(test.get("test_summary"), dict) else {}
            entities, notes = [], []
            for res in test.get("results") or []:
                if not isinstance(res, dict):
                    raise ParseError(f"dcgmi diag -j: {test['name']}: a result that is not an object")
                status = str(res.get("status", ""))
                if "entity_id" in res:
                    ids = [_entity_label(str(res.get("entity_group", "GPU")), res["entity_id"])]
                elif "gpu_id" in res or "gpu_ids" in res:
                    raw = res.get("gpu_id", res.get("gpu_ids"))
                    ids = [f"GPU{g}" for g in re.findall(r"\d+", str(raw))]
                else:
                    ids = []
                if ids:
                    entities += [{"entity": i, "result": status} for i in ids]
                elif not summary:
                    summary = {"status": status}
                for warning in res.get("warnings") or []:
                    msg = warning.get("warning") if isinstance(warning, dict) else warning
                    notes.append(f"Warning{': ' + ids[0] if ids else ''}: {msg}")
            if not summary and not entities:
                raise ParseError(f"dcgmi diag -j: {test['name']}: no result")
            head = str(summary.get("status", "")) if summary else ""
            tests.append({"section": str(category.get("category", "")), "name": str(test["name"]),
                          "head": head, "detail": "", "notes": notes, "entities": entities})
    if not tests and not errors:
        raise ParseError("dcgmi diag -j: no tests")
    return _finish("json", metadata, tests, [f"Error: {e}" for e in errors])
