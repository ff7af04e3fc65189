"""gres.conf and Gres= generation (module_utils/gres.py, filter slurm_gres_conf)."""

import pytest
from ansible.module_utils.gres import (
    check_gpu_count,
    check_gpu_types,
    gres_conf,
    gres_conf_cluster,
    gres_conf_lines,
    gres_gpu_count,
    gres_node_string,
    links_value,
)


def gpu(index, minor, gtype="h100", cores="", nvlinks=()):
    return {
        "index": index,
        "minor": minor,
        "type": gtype,
        "file": f"/dev/nvidia{minor}",
        "cores": cores,
        "nvlinks": [{"link": n, "peer_index": p} for n, p in enumerate(nvlinks)],
    }


def test_one_line_per_gpu_sorted_by_minor_with_type_file_and_cores():
    gpus = [gpu(0, 1, cores="0-47"), gpu(1, 0, cores="48-95")]
    assert gres_conf_lines(gpus) == [
        "Name=gpu Type=h100 File=/dev/nvidia0 Cores=48-95",
        "Name=gpu Type=h100 File=/dev/nvidia1 Cores=0-47",
    ]


def test_cores_are_left_out_when_unknown_or_disabled():
    assert gres_conf_lines([gpu(0, 0)]) == ["Name=gpu Type=h100 File=/dev/nvidia0"]
    assert gres_conf_lines([gpu(0, 0, cores="0-3")], cores=False) == ["Name=gpu Type=h100 File=/dev/nvidia0"]


def test_links_count_nvlinks_per_peer_with_minus_one_for_self():
    # 0<->1 with 2 links, 0<->2 with 1 link, 1 and 2 not linked.
    gpus = [gpu(0, 0, nvlinks=(1, 1, 2)), gpu(1, 1, nvlinks=(0, 0)), gpu(2, 2, nvlinks=(0,))]
    assert links_value(gpus[0], gpus) == "-1,2,1"
    assert links_value(gpus[1], gpus) == "2,-1,0"
    assert gres_conf_lines(gpus)[2] == "Name=gpu Type=h100 File=/dev/nvidia2 Links=1,0,-1"


def test_links_follow_file_order_when_minor_differs_from_index():
    gpus = [gpu(0, 1, nvlinks=(1,)), gpu(1, 0, nvlinks=(0,))]
    # device 0 in the file is /dev/nvidia0, which is NVML index 1.
    assert links_value(gpus[0], gpus) == "1,-1"


def test_links_are_left_out_for_nvswitch_links_with_unknown_peers():
    gpus = [gpu(0, 0, nvlinks=(None,) * 18), gpu(1, 1, nvlinks=(None,) * 18)]
    assert gres_conf_lines(gpus) == [
        "Name=gpu Type=h100 File=/dev/nvidia0",
        "Name=gpu Type=h100 File=/dev/nvidia1",
    ]


def test_autodetect_gives_single_nvml_line():
    assert gres_conf([gpu(0, 0)], autodetect=True) == "AutoDetect=nvml\n"
    assert gres_conf_lines([], autodetect=True, node_name="gpu01") == ["NodeName=gpu01 AutoDetect=nvml"]


def test_gres_conf_is_empty_without_gpus():
    assert gres_conf([]) == ""


def test_node_name_prefix():
    assert (
        gres_conf([gpu(0, 0)], node_name="gpu01") == "NodeName=gpu01 Name=gpu Type=h100 File=/dev/nvidia0\n"
    )


def test_cluster_file_folds_identical_nodes_into_one_hostlist():
    eight = [gpu(i, i) for i in range(2)]
    text = gres_conf_cluster({"gpu01": eight, "gpu02": eight, "gpu03": [gpu(0, 0, "a100")], "cpu01": []})
    assert text.splitlines() == [
        "NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia0",
        "NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia1",
        "NodeName=gpu03 Name=gpu Type=a100 File=/dev/nvidia0",
    ]


def test_gres_node_string_counts_by_type():
    assert gres_node_string([gpu(i, i) for i in range(8)]) == "gpu:h100:8"
    assert (
        gres_node_string([gpu(0, 0, "h100"), gpu(1, 1, "a100"), gpu(2, 2, None)])
        == "gpu:1,gpu:a100:1,gpu:h100:1"
    )
    assert gres_node_string([]) == ""


def test_gres_gpu_count_reads_gres_strings():
    assert gres_gpu_count("gpu:h100:8") == 8
    assert gres_gpu_count("gpu:a100:4,gpu:2,shard:8") == 6
    assert gres_gpu_count("gpu:h100:4(S:0-1)") == 4
    assert gres_gpu_count("") == 0


def test_check_gpu_count_names_host_variable_and_slurm_drain_reason():
    message = check_gpu_count("slinky-0", "gpu:4", [], variable="slurm_compute_gres")
    assert "slinky-0" in message and "slurm_compute_gres" in message
    assert "gres/gpu count reported lower than configured" in message
    assert "4 GPU(s) but 0 were detected" in message


def test_check_gpu_count_is_fine_when_enough_gpus():
    assert check_gpu_count("gpu01", 8, 8) is None
    assert check_gpu_count("gpu01", "gpu:h100:2", [gpu(0, 0), gpu(1, 1), gpu(2, 2)]) is None


def test_check_gpu_types_flags_unknown_and_unexpected_types():
    errors = check_gpu_types(
        "gpu01", [gpu(0, 0, None), gpu(1, 1, "a100"), gpu(2, 2, "h100")], allowed={"h100"}
    )
    assert len(errors) == 2
    assert errors[0].startswith("host gpu01: GPU 0") and "no GRES type" in errors[0]
    assert "'a100'" in errors[1] and "slurm_gpu_types" in errors[1]
    assert check_gpu_types("gpu01", [gpu(0, 0)]) == []


def test_gres_filters_are_exposed():
    from gres import FilterModule

    filters = FilterModule().filters()
    assert filters["slurm_gres_node"]([gpu(0, 0)]) == "gpu:h100:1"
    assert filters["slurm_gres_conf"]([gpu(0, 0)], autodetect=True) == "AutoDetect=nvml\n"
    assert (
        filters["slurm_gres_conf_cluster"]({"n1": [gpu(0, 0)]})
        == "NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia0\n"
    )


BAD_FIELDS = [
    ("file", "/dev/nvidia0\nNodeName=ALL Name=gpu File=/dev/null"),
    ("file", "/dev/nvidia0 # gpu01"),
    ("type", 'h100"'),
    ("type", "h100 Count=64"),
    ("cores", "0-31#"),
    ("minor", "0\nNodeName=ALL"),
]


@pytest.mark.parametrize(("field", "value"), BAD_FIELDS)
def test_a_node_reported_gpu_field_that_could_add_or_cut_a_line_is_refused_naming_host_and_field(field, value):
    bad = gpu(0, 0, cores="0-31")
    bad[field] = value
    good = {"gpu01": [gpu(0, 0, cores="0-31")], "gpu02": [bad]}
    with pytest.raises(ValueError, match=rf"host gpu02: GPU 0 field {field} "):
        gres_conf_cluster(good)


def test_a_gres_type_that_slurm_conf_cannot_hold_is_refused_before_it_becomes_gres():
    with pytest.raises(ValueError, match="field type"):
        gres_node_string([gpu(0, 0, gtype='h100" Weight=1')])


def test_well_formed_records_render_the_same_cluster_file():
    gpus = {"gpu01": [gpu(0, 0, cores="0-31", nvlinks=(1,)), gpu(1, 1, cores="32-63", nvlinks=(0,))],
            "gpu02": [gpu(0, 0, cores="0-31", nvlinks=(1,)), gpu(1, 1, cores="32-63", nvlinks=(0,))]}
    assert gres_conf_cluster(gpus) == (
        "NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia0 Cores=0-31 Links=-1,1\n"
        "NodeName=gpu[01-02] Name=gpu Type=h100 File=/dev/nvidia1 Cores=32-63 Links=1,-1\n")
