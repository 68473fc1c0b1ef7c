"""The README's example must run as printed (the front door stays true)."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_readme_fifteen_line_example_runs(capsys):
    text = (ROOT / "README.md").read_text()
    code = re.search(r"## Fifteen lines\n\n```python\n(.*?)```", text, re.S).group(1)
    assert len(code.strip().splitlines()) <= 15
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == "True"          # the gradcheck line


def test_readme_commands_match_ci():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = re.search(r"Install the test tools.*?```bash\n(.*?)\n```", readme, re.S)
    assert test_command.group(1).strip() in ci


def test_readme_installs_editable_so_edits_to_the_source_are_what_runs():
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    installs = re.findall(r"python3 -m pip install (\S+) (\S+)", setup)
    assert installs == [("-e", '".[viz]"'), ("-e", '".[test]"')]
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = re.search(r"Install the test tools.*?```bash\n(.*?)\n```", setup, re.S)
    assert test_command.group(1).strip() in ci.splitlines()          # a line of its own
    assert test_command.group(1).strip().endswith(
        'python3 -m pip install -e ".[test]" && python3 -m pytest')
    assert "torch" in ci                                  # its parity tests still run there


def test_readme_setup_enters_a_venv_before_any_pip_install():
    """A system Python may refuse pip install (Debian's externally-managed-environment):
    each set-up command makes and enters .venv first, and CI installs torch into it."""
    readme = (ROOT / "README.md").read_text()
    setup = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    assert len(commands) == 2
    for command in commands:
        assert command.startswith("python3 -m venv .venv && . .venv/bin/activate && "), command
    assert "externally-managed-environment" in setup
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    enter = ci.index(". .venv/bin/activate")
    torch = next(i for i, line in enumerate(ci) if "pip install -q torch" in line)
    assert enter < torch                             # the oracles land inside the venv


def test_readme_spells_python3_throughout():
    readme = (ROOT / "README.md").read_text()
    bare = re.findall(r"(?:^|[`( ])(python -m|python examples/)|(?<!-m )\b(pip install)",
                      readme, re.M)
    assert not bare, f"use python3 / python3 -m pip: {bare}"
    assert re.findall(r"(?<!-m )\b(pip install)", "`pip install x`")    # the check works
    assert not re.findall(r"(?<!-m )\b(pip install)", "`python3 -m pip install x`")
