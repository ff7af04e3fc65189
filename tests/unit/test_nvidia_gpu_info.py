"""The nvidia_gpu_info module end to end (arguments, NVML absent/present, lab override)."""

import json
import os
import stat
import types

import nvidia_gpu_info
import pytest
from ansible.module_utils.testing import patch_module_args
from test_nvml import FakeNVML

REAL_STAT = os.stat


def run_module(args, capsys):
    with patch_module_args(args), pytest.raises(SystemExit) as exc:
        nvidia_gpu_info.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


@pytest.fixture
def lab_devices(monkeypatch):
    """Pretend /dev/nvidia0 and /dev/nvidia1 are char devices 195:0 and 195:1."""

    def fake_stat(path, *args, **kwargs):
        for minor in (0, 1):
            if path == f"/dev/nvidia{minor}":
                return types.SimpleNamespace(st_mode=stat.S_IFCHR | 0o666, st_rdev=os.makedev(195, minor))
        if str(path).startswith("/dev/nvidia"):
            raise FileNotFoundError(path)
        return REAL_STAT(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", fake_stat)


def test_without_pynvml_returns_empty_list_and_reason(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(nvidia_gpu_info, "pynvml", None)
    code, out = run_module({"sysfs_cpu_path": str(tmp_path), "_ansible_check_mode": True}, capsys)
    assert code == 0
    assert (out["gpus"], out["count"], out["source"], out["changed"]) == ([], 0, "nvml", False)
    assert "nvidia-ml-py" in out["reason"]


def test_without_driver_returns_reason_not_failure(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(nvidia_gpu_info, "pynvml", FakeNVML(init_error="Driver Not Loaded"))
    code, out = run_module({"sysfs_cpu_path": str(tmp_path)}, capsys)
    assert code == 0 and out["count"] == 0 and "Driver Not Loaded" in out["reason"]


def test_nvml_gpus_are_returned_with_cores_from_sysfs(monkeypatch, capsys, tmp_path):
    for cpu in range(8):
        topo = tmp_path / f"cpu{cpu}" / "topology"
        topo.mkdir(parents=True)
        (topo / "physical_package_id").write_text(str(cpu // 4))
        (topo / "core_id").write_text(str(cpu % 4))
    monkeypatch.setattr(nvidia_gpu_info, "pynvml", FakeNVML())
    code, out = run_module({"sysfs_cpu_path": str(tmp_path)}, capsys)
    assert code == 0
    assert out["count"] == 2 and out["driver_version"] == "550.54.15" and out["reason"] == ""
    assert [g["cores"] for g in out["gpus"]] == ["0-3", "4-7"]
    assert out["gpus"][0]["type"] == "a100"


def test_override_fills_the_same_keys(lab_devices, capsys):
    code, out = run_module(
        {
            "override": [
                {"minor": 0, "name": "NVIDIA H100 80GB HBM3"},
                {"minor": 1, "name": "NVIDIA H100 80GB HBM3"},
            ]
        },
        capsys,
    )
    assert code == 0
    assert out["source"] == "override" and out["count"] == 2 and out["driver_version"] is None
    gpu = out["gpus"][1]
    assert (gpu["index"], gpu["minor"], gpu["file"], gpu["type"]) == (1, 1, "/dev/nvidia1", "h100")
    assert gpu["synthetic"] is True and gpu["uuid"].startswith("GPU-")
    assert gpu["cores"] == "" and gpu["cpu_affinity"] == []


def test_override_count_and_name(lab_devices, capsys):
    code, out = run_module({"override_count": 2, "override_name": "NVIDIA A100-SXM4-80GB"}, capsys)
    assert code == 0 and [g["type"] for g in out["gpus"]] == ["a100", "a100"]


def test_override_without_matching_device_node_fails(lab_devices, capsys):
    code, out = run_module({"override_count": 3, "override_name": "NVIDIA H100 80GB HBM3"}, capsys)
    assert code == 1 and out["failed"] is True
    assert "override" in out["msg"] and "/dev/nvidia2 does not exist" in out["msg"]


def test_override_and_override_count_are_mutually_exclusive(capsys):
    code, out = run_module(
        {"override": [{"minor": 0, "name": "x"}], "override_count": 1, "override_name": "x"}, capsys
    )
    assert code == 1 and "mutually exclusive" in out["msg"]
