"""The never-lose-work rule (docs/never-lose-work.md) is kept in code: every decision function says what
it can lose and how it refuses or guards it, and the table of decision functions is complete."""

import ast
import re

from conftest import ROOT

DOC = ROOT / "docs" / "never-lose-work.md"
ROW = re.compile(r"^\| `(?P<path>(?:module_utils|library)/\w+\.py)` \| `(?P<func>\w+)` \|", re.M)
KEPT = re.compile(r"\b(refus|guard)", re.I)
SAME_AS = re.compile(r"^Work at risk: as ``(\w+)``")


def _risk(docstring):
    """The `Work at risk:` paragraph of a docstring, on one line, or None."""
    if not docstring or "Work at risk:" not in docstring:
        return None
    return " ".join(docstring[docstring.index("Work at risk:"):].split("\n\n")[0].split())


def _functions():
    found = {}
    for folder in ("module_utils", "library"):
        for path in sorted((ROOT / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef):
                    found[(f"{folder}/{path.name}", node.name)] = _risk(ast.get_docstring(node))
    return found


def _rows():
    return [(m["path"], m["func"]) for m in ROW.finditer(DOC.read_text())]


def test_the_table_lists_the_decisions_the_rule_covers():
    listed = {path for path, _ in _rows()}
    for path in ("module_utils/pool_plan.py", "module_utils/pool_live.py", "module_utils/slurm_change.py",
                 "module_utils/slurm_accounting.py", "module_utils/maint_plan.py", "module_utils/gate.py",
                 "module_utils/nccl.py", "module_utils/rdma.py", "module_utils/node_stack.py"):
        assert path in listed, f"docs/never-lose-work.md lists no decision of {path}"


def test_every_listed_function_says_what_it_can_lose_and_how_that_is_kept():
    functions = _functions()
    listed = {func for _, func in _rows()}
    for path, func in _rows():
        assert (path, func) in functions, f"docs/never-lose-work.md lists {path} {func}, which does not exist"
        risk = functions[(path, func)]
        assert risk, f"{path} {func} has no 'Work at risk:' paragraph"
        assert not risk.startswith("Work at risk: none"), f"{path} {func} is listed but says it risks nothing"
        same = SAME_AS.match(risk)
        assert KEPT.search(risk) or (same and same.group(1) in listed), (
            f"{path} {func} says what it can lose but not how it refuses or guards it: {risk}")


def test_every_public_function_that_can_lose_work_is_in_the_table():
    listed = set(_rows())
    missing = [f"{path} {func}" for (path, func), risk in _functions().items()
               if risk and not func.startswith("_") and not risk.startswith("Work at risk: none")
               and (path, func) not in listed]
    assert not missing, f"not in docs/never-lose-work.md's table: {missing}"
