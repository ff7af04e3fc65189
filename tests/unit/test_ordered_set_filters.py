"""Ansible's set filters (difference, intersect, union, symmetric_difference) return a list built from
a Python set when the items hash: its order follows PYTHONHASHSEED, which differs in every process.
Where that list reaches a file, a loop or a message, two runs of one play disagree. CI's k8s_render
idempotence failed that way: the Kueue quota comment said "cpu, memory" in one run and "memory, cpu"
in the next, so the second converge rewrote resources.yaml.

The rule: a set filter's result is only counted (`| length`) or sorted (`| sort`). Anything that keeps
the order uses `reject('in', x)` / `select('in', x)`, which keep the left list's order.
"""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
SET_FILTER = re.compile(r"\|\s*(?:ansible\.builtin\.)?(difference|intersect|union|symmetric_difference)\s*\(")
# map('difference', x) applies one per item: its results keep no order either
MAPPED = re.compile(r"map\(\s*['\"](?:ansible\.builtin\.)?(difference|intersect|union|symmetric_difference)['\"]")
ORDER_FREE = re.compile(r"\s*\|\s*(length|sort|count)\b")


def _close(text, start):
    """Index just past the bracket that closes the one at text[start]."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def ordered_set_filter_uses(text):
    """(line, filter) for each set filter whose result is neither counted nor sorted."""
    found = []
    for match in SET_FILTER.finditer(text):
        end = _close(text, match.end() - 1)
        if not ORDER_FREE.match(text, end):
            found.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    for match in MAPPED.finditer(text):
        found.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return sorted(found)


def test_the_scanner_flags_an_ordered_use_and_passes_a_counted_or_sorted_one():
    assert ordered_set_filter_uses("{{ a | difference(b) | join(', ') }}") == [(1, "difference")]
    assert ordered_set_filter_uses("x\n{{ (a | intersect(f(b, [c]))) }}") == [(2, "intersect")]
    assert ordered_set_filter_uses("{{ a | union(b | list) | length == 0 }}") == []
    assert ordered_set_filter_uses("{{ a | symmetric_difference(b) | sort }}") == []
    assert ordered_set_filter_uses("{{ a | ansible.builtin.difference(b) }}") == [(1, "difference")]
    assert ordered_set_filter_uses("{{ a | map('intersect', b) | list }}") == [(1, "intersect")]


def test_no_set_filter_result_keeps_its_hash_order():
    bad = []
    for top in ("roles", "playbooks", "molecule", "inventory"):
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in (".yml", ".yaml", ".j2"):
                for line, name in ordered_set_filter_uses(path.read_text(encoding="utf-8")):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: | {name}(...)")
    assert not bad, (
        "a set filter's order changes with PYTHONHASHSEED; use reject('in', x) / select('in', x), or "
        "follow it with | sort or | length:\n" + "\n".join(bad)
    )

