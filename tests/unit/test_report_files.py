"""report_files writes a run's report files in one call, on this machine's file system."""

import json
import os
import stat

import pytest
import report_files as module
from ansible.module_utils.testing import patch_module_args


def run(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit):
        module.main()
    return json.loads(capsys.readouterr().out)


def test_writes_the_missing_and_different_files_and_creates_the_directory(capsys, tmp_path):
    target = tmp_path / "reports"
    files = [{"name": "a.json", "content": "{}\n"}, {"name": "a.html", "content": "<p>x</p>"}]
    out = run(capsys, dir=str(target), files=files)
    assert out["changed"] is False and out["written"] == [str(target / "a.json"), str(target / "a.html")]
    assert (target / "a.html").read_text() == "<p>x</p>"
    assert stat.S_IMODE(os.stat(target / "a.json").st_mode) == 0o644
    assert run(capsys, dir=str(target), files=files)["written"] == []
    files[1]["content"] = "<p>y</p>"
    assert run(capsys, dir=str(target), files=files)["written"] == [str(target / "a.html")]
    assert sorted(os.listdir(target)) == ["a.html", "a.json"]  # no temporary file left


def test_check_mode_writes_nothing(capsys, tmp_path):
    out = run(capsys, dir=str(tmp_path / "r"), files=[{"name": "x", "content": "1"}], _ansible_check_mode=True)
    assert out["written"] == [str(tmp_path / "r" / "x")] and not (tmp_path / "r").exists()


@pytest.mark.parametrize("name", ["../x", "sub/x", "", ".."])
def test_a_name_with_a_path_fails_before_writing(capsys, tmp_path, name):
    out = run(capsys, dir=str(tmp_path), files=[{"name": name, "content": "1"}])
    assert out["failed"] and "plain file names" in out["msg"] and os.listdir(tmp_path) == []
