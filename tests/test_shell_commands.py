import json
from pathlib import Path

import pytest
from logmine.parsers.shell_commands import (
    Edit,
    FileRef,
    FileWrite,
    ShellStep,
    split_command,
)

from logmine.ingest.file_contents import apply_edits

SAMPLE_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "samples" / "kimi-k25"


def only_step(command: str) -> ShellStep:
    steps = split_command(command)
    assert len(steps) == 1, steps
    return steps[0]


# --- ssh ------------------------------------------------------------------------------------------------


def test_ssh_single_quoted_remote_command():
    step = only_step("ssh root@10.1.230.174 'free -h'")
    assert (step.host, step.user, step.command) == ("10.1.230.174", "root", "free -h")


def test_ssh_double_quoted_remote_command_keeps_chain_in_one_step():
    step = only_step('ssh admin@node "systemctl restart x && journalctl -u x -n 5; echo ok"')
    assert step.host == "node"
    assert step.command == "systemctl restart x && journalctl -u x -n 5; echo ok"


def test_ssh_unquoted_remainder_is_joined_like_ssh_does():
    step = only_step("ssh node systemctl restart sglang-kimi")
    assert (step.host, step.user, step.command) == ("node", None, "systemctl restart sglang-kimi")


@pytest.mark.parametrize(
    "options",
    [
        "-p 22",
        "-p22",
        "-i ~/.ssh/key",
        "-o StrictHostKeyChecking=no",
        "-oBatchMode=yes",
        "-t",
        "-tt -A",
        "--",
    ],
)
def test_ssh_options_with_and_without_arguments(options):
    step = only_step(f"ssh {options} root@kimi-node 'uptime'")
    assert (step.host, step.user, step.command) == ("kimi-node", "root", "uptime")


def test_ssh_login_name_option_and_ssh_url():
    assert only_step("ssh -l bob host ls").user == "bob"
    step = only_step("ssh ssh://carol@gpu-1:2222 hostname")
    assert (step.host, step.user, step.command) == ("gpu-1", "carol", "hostname")


def test_local_commands_around_ssh_become_their_own_steps():
    steps = split_command("sleep 20 && ssh root@node 'journalctl -u x -n 3' | grep -v Gloo > tail.txt")
    assert [(s.host, s.command) for s in steps] == [
        (None, "sleep 20"),
        ("node", "journalctl -u x -n 3"),
        (None, "grep -v Gloo > tail.txt"),
    ]
    assert steps[2].writes == [FileWrite("tail.txt", None, "redirect")]


def test_nested_bash_lc_is_unwrapped():
    step = only_step("ssh node 'bash -lc \"cd /opt && ls\"'")
    assert (step.host, step.command) == ("node", "cd /opt && ls")


def test_ssh_hop_inside_ssh_belongs_to_the_inner_host():
    step = only_step("ssh jump 'ssh -p 2200 inner \"echo hi > /tmp/q\"'")
    assert (step.host, step.command) == ("inner", "echo hi > /tmp/q")
    assert step.writes == [FileWrite("/tmp/q", "hi\n", "redirect")]


def test_ssh_reading_its_script_from_a_heredoc():
    step = only_step("ssh node bash -s <<'EOF'\ncat > /etc/z.conf <<X\nzz\nX\nEOF")
    assert step.host == "node"
    assert step.writes == [FileWrite("/etc/z.conf", "zz\n", "heredoc")]


def test_local_command_has_no_host():
    assert only_step("ls -la /tmp") == ShellStep(None, None, "ls -la /tmp", [])


# --- file writes ----------------------------------------------------------------------------------------

UNIT = "[Unit]\nDescription=x\n\n[Service]\nExecStart=/usr/bin/true\n"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (f"cat > /etc/x.service <<EOF\n{UNIT}EOF", FileWrite("/etc/x.service", UNIT, "heredoc")),
        (f"cat > /etc/x.service <<'EOF'\n{UNIT}EOF", FileWrite("/etc/x.service", UNIT, "heredoc")),
        (f'cat > /etc/x.service << "EOF"\n{UNIT}EOF', FileWrite("/etc/x.service", UNIT, "heredoc")),
        (f"cat <<EOF > /etc/x.service\n{UNIT}EOF", FileWrite("/etc/x.service", UNIT, "heredoc")),
        (
            f"cat >> /etc/x.service <<EOF\n{UNIT}EOF",
            FileWrite("/etc/x.service", UNIT, "heredoc", append=True),
        ),
        (f"tee /etc/x.service <<EOF\n{UNIT}EOF", FileWrite("/etc/x.service", UNIT, "tee")),
        (
            f"sudo tee /etc/x.service > /dev/null <<EOF\n{UNIT}EOF",
            FileWrite("/etc/x.service", UNIT, "sudo tee"),
        ),
        (f"sudo tee -a /etc/x.service <<EOF\n{UNIT}EOF", FileWrite("/etc/x.service", UNIT, "sudo tee", True)),
        (f"cat <<'EOF' | sudo tee /etc/x.service\n{UNIT}EOF", FileWrite("/etc/x.service", UNIT, "sudo tee")),
        (
            "echo 'vm.swappiness=1' | sudo tee -a /etc/sysctl.conf",
            FileWrite("/etc/sysctl.conf", "vm.swappiness=1\n", "sudo tee", True),
        ),
        ('echo "A=1" > /etc/default/x', FileWrite("/etc/default/x", "A=1\n", "redirect")),
        ("echo -n hi >> log.txt", FileWrite("log.txt", "hi", "redirect", append=True)),
        ("make all &> build.log", FileWrite("build.log", None, "redirect")),
    ],
)
def test_file_write_shapes(command, expected):
    assert only_step(command).writes == [expected]


def test_heredoc_with_dash_strips_leading_tabs():
    step = only_step("cat > /tmp/a <<-EOF\n\tindented\n\tEOF\necho done")
    assert step.writes == [FileWrite("/tmp/a", "indented\n", "heredoc")]
    assert step.command.endswith("echo done")


def test_unquoted_heredoc_keeps_variables_literal():
    step = only_step("cat > /tmp/env <<EOF\nHOME=$HOME\nEOF")
    assert step.writes[0].content == "HOME=$HOME\n"


def test_heredoc_inside_ssh_quotes_and_command_text_includes_body():
    command = (
        f"ssh root@kimi-node 'cat > /etc/systemd/system/k.service <<EOF\n{UNIT}EOF\nsystemctl daemon-reload'"
    )
    step = only_step(command)
    assert step.writes == [FileWrite("/etc/systemd/system/k.service", UNIT, "heredoc")]
    assert "ExecStart=/usr/bin/true" in step.command
    assert step.command.endswith("systemctl daemon-reload")


def test_sudo_sh_c_writes_are_found():
    step = only_step("sudo sh -c 'echo 1 > /proc/sys/vm/drop_caches_log'")
    assert step.writes == [FileWrite("/proc/sys/vm/drop_caches_log", "1\n", "redirect")]


def test_dev_null_and_fd_redirects_are_not_writes():
    assert only_step("journalctl -u x > /dev/null 2>&1; ls 2>/dev/null >&2").writes == []


def test_tee_to_several_files():
    writes = only_step("python3 bench.py 2>&1 | tee a.log b.log").writes
    assert [(w.path, w.method, w.content) for w in writes] == [("a.log", "tee", None), ("b.log", "tee", None)]


# --- robustness -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "echo 'unterminated > f",
        'ssh host "unterminated',
        "cat <<EOF > /f\nno terminator",
        "ssh",
        "ssh -p",
        "",
        "$(((",
        "echo `unclosed",
        "\\",
        "a && || ; | &",
    ],
)
def test_malformed_input_never_raises(command):
    steps = split_command(command)
    assert all(isinstance(s, ShellStep) for s in steps)


def test_unterminated_heredoc_takes_the_rest_as_content():
    assert only_step("cat <<EOF > /f\na\nb").writes == [FileWrite("/f", "a\nb\n", "heredoc")]


# --- the kimi-k25 sample session ------------------------------------------------------------------------


def bash_commands(session: dict) -> list[str]:
    return [
        part["state"]["input"]["command"]
        for message in session["messages"]
        for part in message["parts"]
        if part.get("type") == "tool" and part.get("tool") == "bash"
    ]


def test_kimi_session_unit_file_writes():
    path = SAMPLE_DIR / "session.opencode.json"
    if not path.exists():
        pytest.skip(f"{path} not present")
    from logmine.parsers.launch_config import config_from_unit_or_command

    commands = bash_commands(json.loads(path.read_text()))
    assert len(commands) == 25
    unit_writes = [
        (step, write)
        for command in commands
        for step in split_command(command)
        for write in step.writes
        if write.path.endswith(".service")
    ]
    assert len(unit_writes) == 2
    assert [(s.host, s.user) for s, _ in unit_writes] == [("10.1.230.174", "root")] * 2
    assert [w.path for _, w in unit_writes] == ["/etc/systemd/system/sglang-kimi.service"] * 2
    assert [w.method for _, w in unit_writes] == ["heredoc", "heredoc"]

    configs = [config_from_unit_or_command(w.content) for _, w in unit_writes]
    assert [c["hicache_ratio"] for c in configs] == [2.0, 4.0]
    assert all(c["enable_hierarchical_cache"] is True for c in configs)
    assert all(c["tp_size"] == 8 and c["mem_fraction_static"] == 0.88 for c in configs)
    assert configs[0]["model_path"] == "/data/models/Kimi-K2.5"


def test_kimi_unit_file_flags_agree_with_the_servers_dump():
    session_path, journal_path = SAMPLE_DIR / "session.opencode.json", SAMPLE_DIR / "journal.txt"
    if not (session_path.exists() and journal_path.exists()):
        pytest.skip(f"{SAMPLE_DIR} not present")
    from logmine.parsers.launch_config import config_from_unit_or_command, parse_server_args_repr

    commands = bash_commands(json.loads(session_path.read_text()))
    units = [
        w.content for c in commands for s in split_command(c) for w in s.writes if w.path.endswith(".service")
    ]
    dumps = [
        parse_server_args_repr(line)
        for line in journal_path.read_text().splitlines()
        if "server_args=" in line
    ]
    # Runs 2 and 3 were started by the two unit files the agent wrote.
    for unit, dump in zip(units, dumps[1:], strict=True):
        config = config_from_unit_or_command(unit)
        assert config == {key: dump[key] for key in config}


# --- what is sent into ssh is the remote command's standard input ---------------------------------------

UNIT_TEXT = "[Service]\nExecStart=/usr/bin/python3 -m sglang.launch_server --hicache-ratio 4\n"


@pytest.mark.parametrize("command, method", [
    (f"ssh kimi-node \"sudo tee /etc/systemd/system/x.service\" <<'EOF'\n{UNIT_TEXT}EOF", "sudo tee"),
    (f"ssh kimi-node 'cat > /etc/systemd/system/x.service' <<EOF\n{UNIT_TEXT}EOF", "redirect"),
    (f"cat <<'EOF' | ssh kimi-node 'sudo tee /etc/systemd/system/x.service > /dev/null'\n{UNIT_TEXT}EOF",
     "sudo tee"),
    (f"ssh kimi-node bash -lc \"'tee /etc/systemd/system/x.service'\" <<'EOF'\n{UNIT_TEXT}EOF", "tee"),
])
def test_a_heredoc_sent_into_ssh_is_the_remote_writers_content(command: str, method: str) -> None:
    writes = [(s.host, w) for s in split_command(command) for w in s.writes]
    assert writes == [("kimi-node", FileWrite("/etc/systemd/system/x.service", UNIT_TEXT, method))]


def test_a_heredoc_into_a_bare_remote_shell_is_its_script_not_its_input() -> None:
    steps = split_command(f"ssh kimi-node bash -s <<'EOF'\ncat > /tmp/u <<'X'\n{UNIT_TEXT}X\nEOF")
    assert [(s.host, w.path, w.content) for s in steps for w in s.writes] == [("kimi-node", "/tmp/u", UNIT_TEXT)]


# --- copies, in-place edits and files read on stdin: what the new content follows from ------------------

UNIT_FILE = "/etc/systemd/system/x.service"


def writes_of(command: str) -> list[tuple[str | None, FileWrite]]:
    return [(s.host, w) for s in split_command(command) for w in s.writes]


@pytest.mark.parametrize("command, host", [
    ("scp /tmp/x.service root@node:/etc/systemd/system/", None),
    ("scp -P 2222 -i ~/.ssh/k /tmp/x.service node:/etc/systemd/system/x.service", None),
    ('rsync -av -e "ssh -p 22" /tmp/x.service node:/etc/systemd/system/x.service', None),
])
def test_a_copy_to_another_host_names_its_source_and_where_it_lands(command: str, host: str | None) -> None:
    assert writes_of(command) == [(host, FileWrite(UNIT_FILE, None, "copy", source=FileRef("/tmp/x.service", None),
                                                    remote_host="node"))]


@pytest.mark.parametrize("command, method", [
    ("ssh node 'sudo tee /etc/systemd/system/x.service' < /tmp/x.service", "sudo tee"),
    ("cat /tmp/x.service | ssh node 'sudo tee /etc/systemd/system/x.service >/dev/null'", "sudo tee"),
    ("ssh node 'cat > /etc/systemd/system/x.service' < /tmp/x.service", "redirect"),
])
def test_a_local_file_sent_into_ssh_is_the_remote_writes_source(command: str, method: str) -> None:
    assert writes_of(command) == [("node", FileWrite(UNIT_FILE, None, method, source=FileRef("/tmp/x.service", None)))]


def test_install_and_cp_copy_on_the_steps_host() -> None:
    assert writes_of("ssh node 'sudo install -m 644 /tmp/x.service /etc/systemd/system/x.service'") == [
        ("node", FileWrite(UNIT_FILE, None, "copy", source=FileRef("/tmp/x.service", "node")))]
    assert writes_of("ssh node 'sudo install -d /etc/x'") == []


@pytest.mark.parametrize("command, edits", [
    ("ssh node \"sudo sed -i 's/--hicache-ratio 2/--hicache-ratio 4/' /etc/systemd/system/x.service\"",
     (Edit("--hicache-ratio 2", "--hicache-ratio 4", True, False),)),
    ("sed -i.bak -E -e 's|(ratio) [0-9.]+|\\1 4|g' /etc/systemd/system/x.service",
     (Edit("(ratio) [0-9.]+", "\\g<1> 4", True, True),)),
    ("sed -i '/hicache/d' /etc/systemd/system/x.service", ()),  # deletes a line: not followed
])
def test_sed_in_place_is_an_edit_with_its_substitutions(command: str, edits: tuple) -> None:
    (_host, write), = writes_of(command)
    assert (write.path, write.method, write.edits) == (UNIT_FILE, "sed", edits)


def test_sed_without_in_place_writes_nothing() -> None:
    assert writes_of("sed -n 's/a/b/p' /etc/systemd/system/x.service") == []


@pytest.mark.parametrize("command, before, after", [
    ("sed -i 's/ratio 2/ratio 4/' f", "a ratio 2 b ratio 2\nratio 2\n", "a ratio 4 b ratio 2\nratio 4\n"),
    ("sed -i 's/ratio 2/ratio 4/g' f", "ratio 2 ratio 2\n", "ratio 4 ratio 4\n"),
    ("sed -i 's/\\(--hicache-ratio\\) [0-9.]*/\\1 4.0/' f", "x --hicache-ratio 2.0 y\n", "x --hicache-ratio 4.0 y\n"),
    ("sed -i 's/f(x)/g(&)/' f", "f(x)\n", "g(f(x))\n"),  # a basic regex's ( is literal; & the match
    ("sed -i -e 's#/old/path#/new/path#' -e 's/ a$/ b/' f", "/old/path a\n", "/new/path b\n"),
])
def test_sed_substitutions_read_as_sed_would(command: str, before: str, after: str) -> None:
    (_host, write), = writes_of(command)
    assert apply_edits(before, write.edits) == after
