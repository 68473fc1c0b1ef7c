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
    assert 'python3 -m pip install -e ".[test]" && python3 -m pytest' in ci.splitlines()
    assert "torch" in ci                                  # its parity tests still run there
