from pathlib import Path

import pytest
from logmine.parsers.launch_config import (
    config_from_unit_or_command,
    parse_launch_command,
    parse_server_args_repr,
    parse_unit_file,
)

JOURNAL = Path(__file__).resolve().parents[1].parent / "shared" / "samples" / "kimi-k25" / "journal.txt"

UNIT = """\
# /etc/systemd/system/sglang.service
[Unit]
Description=SGLang server
After=network.target

[Service]
User=llm
WorkingDirectory=/opt/sglang
Environment=CUDA_HOME=/usr/local/cuda HF_HOME=/data/hf
Environment="NCCL_DEBUG=INFO" "EXTRA=a b"
Environment=QUOTED_VALUE="x y"
ExecStart=-/opt/sglang/venv/bin/python3 -m sglang.launch_server \\
    --model-path /data/models/Qwen3-8B \\
    # a comment inside a continuation is skipped
    --tp 2 \\
    --mem-fraction-static 0.85 \\
    --enable-hierarchical-cache \\
    --hicache-ratio 3
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""


# --- unit files -----------------------------------------------------------------------------------------


def test_unit_file_sections_and_settings():
    unit = parse_unit_file(UNIT)
    assert list(unit.sections) == ["Unit", "Service", "Install"]
    assert unit.get("Unit", "After") == "network.target"
    assert unit.get("Install", "WantedBy") == "multi-user.target"
    assert (unit.user, unit.working_directory, unit.description) == ("llm", "/opt/sglang", "SGLang server")


def test_unit_file_environment_lines_with_quotes_and_several_pairs():
    assert parse_unit_file(UNIT).environment == {
        "CUDA_HOME": "/usr/local/cuda",
        "HF_HOME": "/data/hf",
        "NCCL_DEBUG": "INFO",
        "EXTRA": "a b",
        "QUOTED_VALUE": "x y",
    }


def test_unit_file_exec_start_is_joined_and_prefix_stripped():
    exec_start = parse_unit_file(UNIT).exec_start
    assert exec_start.startswith("/opt/sglang/venv/bin/python3 -m sglang.launch_server --model-path")
    assert exec_start.endswith("--hicache-ratio 3")
    assert "\\" not in exec_start and "comment" not in exec_start


def test_drop_in_empty_exec_start_resets_it():
    text = "[Service]\nExecStart=/usr/bin/old\n# drop-in\n[Service]\nExecStart=\nExecStart=/usr/bin/new --x\n"
    assert parse_unit_file(text).exec_start == "/usr/bin/new --x"


def test_unit_without_exec_start():
    assert parse_unit_file("[Unit]\nDescription=x\n").exec_start == ""
    assert config_from_unit_or_command("[Unit]\nDescription=x\n") is None


# --- launch commands ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prefix",
    [
        "python -m sglang.launch_server",
        "python3 -m sglang.launch_server",
        "/opt/venv/bin/python3.12 -m sglang.launch_server",
        "sglang serve",
        "CUDA_VISIBLE_DEVICES=0,1 NCCL_P2P_DISABLE=1 python -m sglang.launch_server",
        "sudo -E env HF_HOME=/x nohup python3 -m sglang.launch_server",
        "exec /usr/bin/env python3 -m sglang.launch_server",
    ],
)
def test_launch_command_shapes(prefix):
    assert parse_launch_command(f"{prefix} --model-path m --tp 8") == {"model_path": "m", "tp_size": 8}


def test_launch_inside_bash_c_ssh_and_chains():
    inner = "cd /opt && source venv/bin/activate && python -m sglang.launch_server --model m --dp 2"
    expected = {"model_path": "m", "dp_size": 2}
    assert parse_launch_command(f"bash -lc '{inner}'") == expected
    assert parse_launch_command(f"ssh root@node \"bash -c '{inner}'\"") == expected
    assert parse_launch_command(f"{inner} > /var/log/sglang.log 2>&1 &") == expected


def test_launch_flag_typing():
    config = parse_launch_command(
        "python -m sglang.launch_server --model-path /m --tp-size 4 --mem-fraction-static 0.88 "
        "--enable-hierarchical-cache --hicache-ratio=4.0 --cuda-graph-bs 1 2 4 8 --host 0.0.0.0 "
        "--disable-radix-cache false --chunked-prefill-size -1 --json-model-override-args '{\"a\": 1}' "
        "--revision None --served-model-name kimi-k2.5"
    )
    assert config == {
        "model_path": "/m",
        "tp_size": 4,
        "mem_fraction_static": 0.88,
        "enable_hierarchical_cache": True,
        "hicache_ratio": 4.0,
        "cuda_graph_bs": [1, 2, 4, 8],
        "host": "0.0.0.0",
        "disable_radix_cache": False,
        "chunked_prefill_size": -1,
        "json_model_override_args": '{"a": 1}',
        "revision": None,
        "served_model_name": "kimi-k2.5",
    }


@pytest.mark.parametrize(
    ("flag", "key"),
    [
        ("--tp", "tp_size"),
        ("--tensor-parallel-size", "tp_size"),
        ("--dp-size", "dp_size"),
        ("--data-parallel-size", "dp_size"),
        ("--ep", "ep_size"),
        ("--expert-parallel-size", "ep_size"),
        ("--pp-size", "pp_size"),
        ("--pipeline-parallel-size", "pp_size"),
    ],
)
def test_documented_aliases(flag, key):
    assert parse_launch_command(f"python -m sglang.launch_server {flag} 2") == {key: 2}


def test_list_flag_with_one_value_stays_a_list():
    assert parse_launch_command("sglang serve --cuda-graph-bs 8")["cuda_graph_bs"] == [8]


def test_sglang_serve_positional_model():
    assert parse_launch_command("sglang serve Qwen/Qwen3-8B --port 30001") == {
        "model_path": "Qwen/Qwen3-8B",
        "port": 30001,
    }


@pytest.mark.parametrize(
    "command",
    [
        "python -m vllm.entrypoints.openai.api_server --model m",
        "systemctl restart sglang",
        "pip install sglang",
        "grep -n sglang.launch_server x.py",
        "python3 -m sglang.bench_serving --port 30000",
        "",
        "python -m 'sglang.launch_server",  # malformed quoting: still no exception
    ],
)
def test_not_an_sglang_launch(command):
    result = parse_launch_command(command)
    assert result is None or isinstance(result, dict)
    if "launch_server" not in command:
        assert result is None


def test_config_from_unit_or_command():
    assert config_from_unit_or_command(UNIT) == {
        "model_path": "/data/models/Qwen3-8B",
        "tp_size": 2,
        "mem_fraction_static": 0.85,
        "enable_hierarchical_cache": True,
        "hicache_ratio": 3,
    }
    assert config_from_unit_or_command("python -m sglang.launch_server --port 1") == {"port": 1}
    assert config_from_unit_or_command("ls -la") is None


# --- ServerArgs dumps -----------------------------------------------------------------------------------

DUMP = (
    "[2026-03-01 23:45:58] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, "
    "mem_fraction_static=0.836, cuda_graph_bs=[1, 2, 4], json_model_override_args='{}', "
    "mm_process_config={}, chat_template=None, enable_x=True, note='a, b (c) [d]', "
    "quote=\"it's\", esc='x\\'y', nested={'k': [1, {'z': (2, 3)}]}, "
    "cuda_graph_config=CudaGraphConfig(decode=PhaseConfig(backend='full', bs=[1, 2])), "
    "watchdog=inf, decode_log_interval=40)"
)


def test_server_args_repr_values():
    args = parse_server_args_repr(DUMP)
    assert args == {
        "model_path": "Qwen/Qwen3-8B",
        "tp_size": 2,
        "mem_fraction_static": 0.836,
        "cuda_graph_bs": [1, 2, 4],
        "json_model_override_args": "{}",
        "mm_process_config": {},
        "chat_template": None,
        "enable_x": True,
        "note": "a, b (c) [d]",
        "quote": "it's",
        "esc": "x'y",
        "nested": {"k": [1, {"z": (2, 3)}]},
        "cuda_graph_config": "CudaGraphConfig(decode=PhaseConfig(backend='full', bs=[1, 2]))",
        "watchdog": float("inf"),
        "decode_log_interval": 40,
    }


def test_server_args_repr_without_prefix_and_empty():
    assert parse_server_args_repr("ServerArgs(tp_size=8)") == {"tp_size": 8}
    # log_lines passes only the text after `ServerArgs(`.
    assert parse_server_args_repr("model_path='x', cuda_graph_bs=[1, 2])") == {
        "model_path": "x",
        "cuda_graph_bs": [1, 2],
    }
    assert parse_server_args_repr("model_path='x', tp_si") == {"model_path": "x"}
    assert parse_server_args_repr("ServerArgs()") == {}
    assert parse_server_args_repr("") == {}


@pytest.mark.parametrize("cut", [40, 120, 200, 333, 371, len(DUMP) - 1])
def test_truncated_dump_keeps_only_complete_fields(cut):
    full = parse_server_args_repr(DUMP)
    partial = parse_server_args_repr(DUMP[:cut])
    assert partial == {k: full[k] for k in partial}
    assert len(partial) < len(full)
    if cut == len(DUMP) - 1:
        assert "decode_log_interval" not in partial  # `40` without `)` could have been `400`


def test_every_prefix_of_a_dump_parses():
    full = parse_server_args_repr(DUMP)
    for cut in range(len(DUMP)):
        partial = parse_server_args_repr(DUMP[:cut])
        assert partial == {k: full[k] for k in partial}


def test_only_the_dump_line_is_read():
    text = DUMP[:150] + "\nMar 01 23:45:59 node python3[1]: [2026-03-01 23:45:59] other=1, x=2)\n"
    assert "other" not in parse_server_args_repr(text)


def journal_dumps() -> list[str]:
    if not JOURNAL.exists():
        pytest.skip(f"{JOURNAL} not present")
    return [line for line in JOURNAL.read_text().splitlines() if "server_args=" in line]


def test_kimi_journal_first_dump():
    args = parse_server_args_repr(journal_dumps()[0])
    assert len(args) == 328
    assert args["tp_size"] == 8
    assert args["mem_fraction_static"] == 0.88
    assert args["enable_hierarchical_cache"] is False
    assert args["hicache_ratio"] == 2.0  # the default, printed even while HiCache is off
    assert args["cuda_graph_bs"][:3] == [1, 2, 3]
    assert args["mm_process_config"] == {}
    assert args["json_model_override_args"] == "{}"
    assert args["random_seed"] == 795897943
    assert args["moe_dense_tp_size"] is None  # a key that merely ends in tp_size must not clash


def test_kimi_journal_dumps_of_the_three_runs():
    runs = [parse_server_args_repr(line) for line in journal_dumps()]
    assert [r["enable_hierarchical_cache"] for r in runs] == [False, True, True]
    assert [r["hicache_ratio"] for r in runs] == [2.0, 2.0, 4.0]


def test_kimi_dump_survives_journald_cut():
    line = journal_dumps()[0]
    full = parse_server_args_repr(line)
    cut = parse_server_args_repr(line[: len(line) // 2])
    assert 0 < len(cut) < len(full)
    assert cut == {k: full[k] for k in cut}
