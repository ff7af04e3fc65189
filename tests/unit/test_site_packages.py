"""site.yml's base play installs, in one package transaction per host, what the Slurm roles of the later plays
install (docs/performance.md, session 8). Each role with a `packages` entry point that a later play applies must
be read in the base play's pre_tasks for the same host groups; a role left out would still install its own
packages (its probe finds them missing), so the drift would be slower, not wrong, and only this test sees it."""

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
SITE = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())
BASE_PLAY = next(play for play in SITE if any(
    (r.get("role") if isinstance(r, dict) else r) == "base" for r in play.get("roles", [])))


def groups_of(pattern):
    """The groups a play's host pattern adds (those after ! are removed, and every play here leaves out the
    settled hosts the same way as the base play)."""
    return {part for part in pattern.split(":") if part and not part.startswith("!")}


def groups_of_when(condition):
    listed = re.search(r"intersect\(\[([^\]]*)\]\)", condition)
    if listed:
        return set(re.findall(r"'([^']+)'", listed.group(1)))
    single = re.fullmatch(r"'([^']+)' in group_names", condition.strip())
    assert single, f"site.yml base play: a condition this test does not read: {condition}"
    return {single.group(1)}


def packages_reads():
    reads = {}
    for task in BASE_PLAY.get("pre_tasks", []):
        imported = task.get("ansible.builtin.import_role", {})
        if imported.get("tasks_from") == "packages":
            reads[imported["name"]] = groups_of_when(task["when"])
    return reads


def later_role_plays():
    index = SITE.index(BASE_PLAY)
    for play in SITE[index + 1:]:
        for role in play.get("roles", []):
            name = role.get("role") if isinstance(role, dict) else role
            yield name, groups_of(play["hosts"])


def test_the_base_play_reads_every_later_role_that_has_a_packages_entry_point():
    reads = packages_reads()
    for name, groups in later_role_plays():
        if (ROOT / "roles" / name / "tasks" / "packages.yml").exists():
            assert name in reads, f"site.yml: the base play does not read {name}'s packages (tasks_from: packages)"
            assert reads[name] == groups, (
                f"site.yml: the base play reads {name}'s packages for {sorted(reads[name])}, "
                f"its play runs on {sorted(groups)}")


def test_the_base_play_reads_only_roles_that_have_a_packages_entry_point():
    for name in packages_reads():
        assert (ROOT / "roles" / name / "tasks" / "packages.yml").exists(), name


def test_every_packages_read_reaches_the_base_role():
    extra = next(r for r in BASE_PLAY["roles"] if isinstance(r, dict) and r.get("role") == "base")[
        "base_packages_extra"]
    for name in packages_reads():
        assert f"{name}_host_packages" in extra, f"site.yml: base_packages_extra leaves out {name}_host_packages"
