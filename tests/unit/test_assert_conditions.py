"""Every assert's conditions are strings: a plain YAML scalar with ': ' in it (a regex such as 'first\\): none')
parses as a mapping, which ansible-core 2.19 refuses at run time ("Conditional expressions must be strings")."""
import pathlib

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Loader(yaml.SafeLoader):
    """safe_load with Ansible's !unsafe and !vault tags read as plain scalars."""


for _tag in ("!unsafe", "!vault"):
    Loader.add_constructor(_tag, lambda loader, node: loader.construct_scalar(node))


def conditions(node, where):
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("that", "failed_when", "changed_when", "when", "until") and value is not None:
                for item in value if isinstance(value, list) else [value]:
                    yield where, key, item
            yield from conditions(value, where)
    elif isinstance(node, list):
        for item in node:
            yield from conditions(item, where)


def test_every_condition_is_a_string_or_a_bool():
    files = sorted({*ROOT.glob("roles/**/*.yml"), *ROOT.glob("playbooks/**/*.yml"), *ROOT.glob("molecule/**/*.yml")})
    bad = []
    for path in files:
        doc = yaml.load(path.read_text(), Loader=Loader)  # a SafeLoader
        for where, key, item in conditions(doc, path.relative_to(ROOT)):
            if not isinstance(item, (str, bool)):
                bad.append(f"{where}: {key}: {item!r}"[:200])
    assert not bad, bad
