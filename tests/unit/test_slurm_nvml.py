"""Slurm's NVML plugin: may a node say AutoDetect=nvml? (module_utils/slurm_nvml.py, slurm_nvml_info,
the per-node gres.conf lines and the one role that installs the plugin)."""

import ctypes
import json

import pytest
import yaml
from ansible.module_utils.gres import gres_conf_cluster
from ansible.module_utils.slurm_change import classify_gres_change, parse_gres_conf
from ansible.module_utils.slurm_nvml import (
    autodetect_verdict,
    find_plugin,
    nvml_library_names,
    probe_nvml,
)
from ansible.module_utils.testing import patch_module_args
from conftest import ROOT
from jinja2.nativetypes import NativeEnvironment


class FakeNvml:
    """What ctypes.CDLL gives for libnvidia-ml: NVML's three calls with chosen return codes."""

    def __init__(self, init_rc=0, count=2, count_rc=0):
        self.init_rc, self.count, self.count_rc, self.shut = init_rc, count, count_rc, 0

    def nvmlInit_v2(self):
        return self.init_rc

    def nvmlDeviceGetCount_v2(self, ref):
        ref._obj.value = self.count
        return self.count_rc

    def nvmlShutdown(self):
        self.shut += 1
        return 0


def loader_for(libraries):
    """A ctypes.CDLL stand-in: names in ``libraries`` open, every other raises OSError as dlopen does."""

    def load(name):
        if name not in libraries:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
        return libraries[name]

    return load


PLUGIN = "/usr/lib/x86_64-linux-gnu/slurm-wlm/gpu_nvml.so"


@pytest.mark.parametrize(
    ("version", "names"),
    [
        ("22.05.8-4+deb12u2", ["libnvidia-ml.so"]),
        ("23.11.10", ["libnvidia-ml.so"]),
        ("24.05.4", ["libnvidia-ml.so"]),
        ("24.05.5", ["libnvidia-ml.so", "libnvidia-ml.so.1"]),
        ("24.11.5-2", ["libnvidia-ml.so", "libnvidia-ml.so.1"]),
        ("not a version", ["libnvidia-ml.so"]),
    ],
)
def test_the_nvml_names_follow_what_each_slurm_dlopens(version, names):
    # 22.05 and up to 24.05.4 dlopen only libnvidia-ml.so; 24.05.5 added the libnvidia-ml.so.1 fallback.
    assert nvml_library_names(version) == names


def test_slurm_22_05_with_only_the_versioned_library_is_refused():
    # Debian's libnvidia-ml1 ships libnvidia-ml.so.1 only: Slurm 22.05 cannot open NVML there.
    probe = probe_nvml(nvml_library_names("22.05.8"), loader_for({"libnvidia-ml.so.1": FakeNvml()}))
    assert probe["library"] == "" and "libnvidia-ml.so: cannot open" in probe["error"]
    autodetect, reason = autodetect_verdict(PLUGIN, probe, "22.05.8")
    assert autodetect is False
    assert reason.startswith("Slurm 22.05.8 opens libnvidia-ml.so and none loads")


def test_slurm_24_11_falls_back_to_the_versioned_library_and_autodetects():
    lib = FakeNvml(count=8)
    probe = probe_nvml(nvml_library_names("24.11.5"), loader_for({"libnvidia-ml.so.1": lib}))
    assert probe == {"library": "libnvidia-ml.so.1", "error": "", "init_rc": 0, "count": 8}
    assert lib.shut == 1
    assert autodetect_verdict(PLUGIN, probe, "24.11.5") == (
        True, f"gpu_nvml.so at {PLUGIN}; NVML through libnvidia-ml.so.1 counts 8 GPUs")


def test_a_driver_without_its_kernel_module_keeps_explicit_lines():
    # The lab: libnvidia-ml1 installed, no kernel module: nvmlInit returns NVML_ERROR_DRIVER_NOT_LOADED (9).
    probe = probe_nvml(nvml_library_names("24.11.5"), loader_for({"libnvidia-ml.so.1": FakeNvml(init_rc=9)}))
    assert probe["init_rc"] == 9 and probe["count"] is None
    autodetect, reason = autodetect_verdict(PLUGIN, probe, "24.11.5")
    assert autodetect is False
    assert "NVML_ERROR_DRIVER_NOT_LOADED" in reason and "libnvidia-ml.so.1" in reason


@pytest.mark.parametrize(
    ("plugin", "probe", "version", "why"),
    [
        ("", {"library": "libnvidia-ml.so", "error": "", "init_rc": 0, "count": 2}, "24.11.5", "not installed"),
        (PLUGIN, {"library": "libnvidia-ml.so", "error": "", "init_rc": 0, "count": 0}, "24.11.5", "counts 0 GPUs"),
        (PLUGIN, {"library": "libnvidia-ml.so", "error": "", "init_rc": 0, "count": None}, "24.11.5", "counts None"),
        (PLUGIN, {"library": "libnvidia-ml.so", "error": "", "init_rc": 0, "count": 2}, "", "not understood"),
        (PLUGIN, {}, "24.11.5", "none loads (not tried)"),
        (PLUGIN, None, "24.11.5", "none loads"),
        (PLUGIN, {"library": "libnvidia-ml.so", "error": "nvmlDeviceGetCount: NVML_ERROR_UNKNOWN", "init_rc": 0,
                  "count": None}, "24.11.5", "does not initialise"),
    ],
)
def test_anything_short_of_a_loaded_plugin_counting_gpus_is_refused(plugin, probe, version, why):
    autodetect, reason = autodetect_verdict(plugin, probe, version)
    assert autodetect is False and why in reason


def test_a_failed_gpu_count_is_reported_and_nvml_shut_down():
    lib = FakeNvml(count_rc=999)
    probe = probe_nvml(["libnvidia-ml.so"], loader_for({"libnvidia-ml.so": lib}))
    assert probe["error"] == "nvmlDeviceGetCount: NVML_ERROR_UNKNOWN" and lib.shut == 1


def test_the_real_loader_on_a_machine_without_nvml_refuses():
    # ctypes.CDLL itself (what the module uses): on this test machine NVML is absent or cannot initialise.
    probe = probe_nvml(nvml_library_names("24.11.5"), ctypes.CDLL)
    assert autodetect_verdict(PLUGIN, probe, "24.11.5")[0] is False


def test_the_plugin_is_found_in_the_first_directory_that_has_it(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "gpu_nvml.so").write_bytes(b"\x7fELF")
    assert find_plugin([str(tmp_path / "a"), str(tmp_path / "b")]) == str(tmp_path / "b" / "gpu_nvml.so")
    assert find_plugin([str(tmp_path / "a")]) == ""


def _run_module(capsys, **args):
    import slurm_nvml_info

    with patch_module_args(args), pytest.raises(SystemExit):
        slurm_nvml_info.main()
    return json.loads(capsys.readouterr().out)


def test_the_module_refuses_without_the_plugin_and_asks_nvml_nothing(capsys, tmp_path, monkeypatch):
    import slurm_nvml_info

    def no_call(name):
        raise AssertionError(f"NVML opened ({name}) on a node without the plugin")

    monkeypatch.setattr(slurm_nvml_info.ctypes, "CDLL", no_call)
    result = _run_module(capsys, slurm_version="24.11.5-2", plugin_dirs=[str(tmp_path)])
    assert (result["changed"], result["autodetect"], result["plugin"], result["nvml"]) == (False, False, "", {})
    assert result["reason"] == "gpu_nvml.so is not installed"
    assert result["libraries"] == ["libnvidia-ml.so", "libnvidia-ml.so.1"]


def test_the_module_autodetects_where_the_plugin_and_nvml_answer(capsys, tmp_path, monkeypatch):
    import slurm_nvml_info

    (tmp_path / "gpu_nvml.so").write_bytes(b"\x7fELF")
    monkeypatch.setattr(slurm_nvml_info.ctypes, "CDLL", loader_for({"libnvidia-ml.so.1": FakeNvml(count=4)}))
    result = _run_module(capsys, slurm_version="24.11.5-2", plugin_dirs=[str(tmp_path)])
    assert result["autodetect"] is True and result["nvml"]["count"] == 4
    assert result["plugin"] == str(tmp_path / "gpu_nvml.so")


def gpus(*types):
    return [{"minor": minor, "index": minor, "type": kind} for minor, kind in enumerate(types)]


def test_gres_conf_says_autodetect_only_for_the_nodes_that_proved_it():
    text = gres_conf_cluster(
        {"gpu01": gpus("h100", "h100"), "gpu02": gpus("h100", "h100"), "gpu03": gpus("h100", "h100"),
         "gpu04": gpus("a100")},
        cores=False, links=False, autodetect_nodes=["gpu01", "gpu03.lab.example"],
    )
    assert text.splitlines() == [
        "NodeName=gpu[01,03] AutoDetect=nvml",
        "NodeName=gpu02 Name=gpu Type=h100 File=/dev/nvidia0",
        "NodeName=gpu02 Name=gpu Type=h100 File=/dev/nvidia1",
        "NodeName=gpu04 Name=gpu Type=a100 File=/dev/nvidia0",
    ]
    # No node proved it: the explicit lines alone, as before.
    assert "AutoDetect" not in gres_conf_cluster({"gpu01": gpus("h100")}, autodetect_nodes=[])


def test_a_node_turning_to_autodetect_goes_through_the_change_classifier():
    before = gres_conf_cluster({"gpu01": gpus("h100", "h100"), "gpu02": gpus("h100", "h100")}, cores=False)
    after = gres_conf_cluster({"gpu01": gpus("h100", "h100"), "gpu02": gpus("h100", "h100")}, cores=False,
                              autodetect_nodes=["gpu01"])
    parsed = parse_gres_conf(after)
    assert parsed[("gpu01", None)] == [{"autodetect": "nvml"}] and ("gpu01", "gpu") not in parsed
    # gpu01's typed lines go away: 22.05 restarts both daemons (Type), 24.11 reconfigures.
    old = classify_gres_change(before, after, "22.05.8")
    assert old["action"] == "restart" and "gpu01:gpu" in " ".join(old["reasons"])
    assert classify_gres_change(before, after, "24.11.5")["action"] == "reconfigure"
    assert classify_gres_change(after, after, "24.11.5")["action"] == "none"


def _default(role, name):
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())[name]


def test_slurm_common_takes_the_nodes_from_slurm_nvml_autodetect():
    from ansible.plugins.filter.core import FilterModule as CoreFilters
    from slurm_conf import FilterModule

    env = NativeEnvironment()
    env.filters.update(CoreFilters().filters())
    env.filters.update(FilterModule().filters())
    hostvars = {"gpu01": {"slurm_nvml_autodetect": True}, "gpu02.lab": {"slurm_nvml_autodetect": False},
                "gpu03": {}}
    expression = _default("slurm_common", "slurm_common_gres_autodetect_nodes")
    result = env.from_string(expression).render(slurm_common_node_hosts=["gpu01", "gpu02.lab", "gpu03"],
                                                hostvars=hostvars)
    assert result == ["gpu01"]
    template = (ROOT / "roles" / "slurm_common" / "templates" / "etc" / "slurm" / "gres.conf.j2").read_text()
    assert "autodetect_nodes=slurm_common_gres_autodetect_nodes" in template


def test_slurm_nvml_declares_autodetect_from_the_load_check():
    tasks = yaml.safe_load((ROOT / "roles" / "slurm_nvml" / "tasks" / "main.yml").read_text())
    check = next(t for t in tasks if "slurm_nvml_info" in t)
    assert check["register"] == "__slurm_nvml_load"
    record = next(t for t in tasks if "slurm_nvml_autodetect" in t.get("ansible.builtin.set_fact", {}))
    assert record["ansible.builtin.set_fact"]["slurm_nvml_autodetect"] == (
        "{{ __slurm_nvml_load.autodetect | default(false) | bool }}")


def test_one_role_installs_the_nvml_plugin():
    # slurm_nvml owns the install and the probe; no other role names the package or a switch for it.
    hits = []
    for path in sorted((ROOT / "roles").rglob("*.yml")):
        role = path.relative_to(ROOT / "roles").parts[0]
        text = path.read_text()
        if role != "slurm_nvml" and ("nvml-plugin" in text or "nvml_plugin" in text):
            hits.append(str(path.relative_to(ROOT)))
    assert hits == []
    assert _default("slurm_nvml", "slurm_nvml_package") == ""  # empty: the OS's, vars/Debian.yml
    assert yaml.safe_load((ROOT / "roles" / "slurm_nvml" / "vars" / "Debian.yml").read_text())[
        "__slurm_nvml_os_package"] == "slurm-wlm-nvml-plugin"
    assert "slurm_compute_nvml_plugin" not in yaml.safe_load(
        (ROOT / "roles" / "slurm_compute" / "defaults" / "main.yml").read_text())
