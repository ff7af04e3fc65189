# Copyright: gpufleet contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Offline evaluation of the CEL rules (``x-kubernetes-validations``) of CustomResourceDefinitions.

Schema validation (``k8s_schema``) drops these rules; the API server evaluates them on every create.
Here each rule is compiled and run with cel-python (``celpy``, pure Python, maintained by Cloud
Custodian) against the part of the object it is attached to, as the API server does:

* a rule runs only where its field is present (for array items and map values: on each one), with
  ``self`` bound to that value;
* a rule that names ``oldSelf`` is a transition rule, which the API server runs only on updates.
  Offline there is no old object: such rules are *skipped* and counted as ``transition``;
* a rule whose evaluation fails with a missing field or a type error is a violation (the API server
  rejects the object with that error too);
* a rule that cel-python cannot compile, or that calls a function it does not provide (the
  Kubernetes CEL libraries: ``quantity``, ``isSorted``, ``url``, ``ip``, ...), is *unevaluable* and
  reported by name, never passed silently.

Why cel-python: it is the maintained pure-Python CEL implementation, compiles all rules of the
pinned CRDs (gpufleet's ``files/crds``), and lets missing Kubernetes extensions be detected per
rule (an unknown function is a distinct error). The rules of the pinned CRDs use only standard CEL
(``has``, ``size``, ``all``, ``exists``, ``filter``, ``in``, conditionals) plus ``oldSelf``.
"""

import importlib.util
import re

HAS_CEL = importlib.util.find_spec("celpy") is not None
_OLDSELF = re.compile(r"\boldSelf\b")
_UNSUPPORTED = ("unbound function", "no such overload", "no matching overload", "undeclared reference",
                "not supported", "unknown function")


def collect_rules(schema, path=()):
    """Every ``x-kubernetes-validations`` rule under an ``openAPIV3Schema``.

    Returns ``[{"path": steps, "rule", "message", "transition"}]``; ``steps`` is a tuple of
    ``("field", name)``, ``("items",)`` and ``("values",)`` (additionalProperties) from the root.
    """
    rules = []
    if not isinstance(schema, dict):
        return rules
    for entry in schema.get("x-kubernetes-validations") or []:
        rule = entry.get("rule", "")
        rules.append({
            "path": path,
            "rule": rule,
            "message": entry.get("message") or f"failed rule: {rule}",
            "transition": bool(_OLDSELF.search(rule)),
        })
    for name, sub in (schema.get("properties") or {}).items():
        rules.extend(collect_rules(sub, (*path, ("field", name))))
    if isinstance(schema.get("items"), dict):
        rules.extend(collect_rules(schema["items"], (*path, ("items",))))
    if isinstance(schema.get("additionalProperties"), dict):
        rules.extend(collect_rules(schema["additionalProperties"], (*path, ("values",))))
    return rules


def _values_at(value, steps, where=""):
    """``[(where, value)]`` for every value at ``steps`` that is present in ``value``."""
    if not steps:
        return [(where or "<root>", value)]
    step, rest = steps[0], steps[1:]
    out = []
    if step[0] == "field":
        if isinstance(value, dict) and value.get(step[1]) is not None:
            out.extend(_values_at(value[step[1]], rest, f"{where}.{step[1]}".lstrip(".")))
    elif step[0] == "items":
        if isinstance(value, list):
            for index, item in enumerate(value):
                out.extend(_values_at(item, rest, f"{where}[{index}]"))
    elif isinstance(value, dict):
        for key, item in value.items():
            out.extend(_values_at(item, rest, f"{where}[{key}]"))
    return out


class CelRules:
    """Compiled CEL rules, cached by rule text; one instance per validation run."""

    def __init__(self):
        if not HAS_CEL:  # pragma: no cover - cel-python is in requirements.txt
            raise RuntimeError("cel-python (celpy) is required to evaluate x-kubernetes-validations")
        import celpy

        self._celpy = celpy
        self._env = celpy.Environment()
        self._programs = {}

    def program(self, rule):
        """``(program, None)`` or ``(None, reason it cannot be evaluated)``."""
        if rule not in self._programs:
            try:
                self._programs[rule] = (self._env.program(self._env.compile(rule)), None)
            except Exception as exc:  # any compile failure makes the rule unevaluable
                self._programs[rule] = (None, f"cel-python cannot compile it: {str(exc).splitlines()[0][:200]}")
        return self._programs[rule]

    def counts(self, rules):
        """``{"rules", "evaluable", "transition", "unevaluable"}`` for one CRD version's rules."""
        transition = sum(1 for r in rules if r["transition"])
        unevaluable = sum(1 for r in rules if not r["transition"] and self.program(r["rule"])[0] is None)
        return {"rules": len(rules), "evaluable": len(rules) - transition - unevaluable,
                "transition": transition, "unevaluable": unevaluable}

    def evaluate(self, doc, rules):
        """Evaluate ``rules`` on ``doc``: ``{"errors": [...], "unevaluable": [...], "evaluated": n, "skipped": n}``."""
        result = {"errors": [], "unevaluable": [], "evaluated": 0, "skipped": 0}
        for rule in rules:
            targets = _values_at(doc, rule["path"])
            if not targets:
                continue
            if rule["transition"]:
                result["skipped"] += len(targets)
                continue
            program, reason = self.program(rule["rule"])
            if program is None:
                result["unevaluable"].extend(f"{where}: {rule['rule']!r}: {reason}" for where, _v in targets)
                continue
            for where, value in targets:
                outcome = self._run(program, value)
                if outcome is True:
                    result["evaluated"] += 1
                elif isinstance(outcome, str) and outcome.startswith("unsupported:"):
                    result["unevaluable"].append(f"{where}: {rule['rule']!r}: {outcome}")
                else:
                    result["evaluated"] += 1
                    detail = f" ({outcome})" if isinstance(outcome, str) else ""
                    result["errors"].append(f"{where}: {rule['message']} [CEL: {rule['rule']}]{detail}")
        return result

    def _run(self, program, value):
        """True, False, or the text of an evaluation error (``unsupported: ...`` for a missing function)."""
        celpy = self._celpy
        try:
            out = program.evaluate({"self": celpy.json_to_cel(value)})
        except Exception as exc:  # celpy raises several error types
            text = str(exc).splitlines()[0][:200]
            return f"unsupported: {text}" if any(s in text.lower() for s in _UNSUPPORTED) else f"error: {text}"
        if isinstance(out, Exception):
            text = str(out)[:200]
            return f"unsupported: {text}" if any(s in text.lower() for s in _UNSUPPORTED) else f"error: {text}"
        if isinstance(out, bool) or type(out).__name__ == "BoolType":
            return bool(out)
        return f"error: the rule returned {type(out).__name__}, not a bool"
