"""`python -m mcp_nb COMMAND`: one dispatcher, each command in a module of its own, mistakes in one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def mcp_nb_command(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "mcp_nb", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_the_help_lists_every_command(tmp_path):
    from mcp_nb.__main__ import COMMANDS

    shown = mcp_nb_command("--help", cwd=tmp_path)
    assert shown.returncode == 0
    for name, (_, summary) in COMMANDS.items():
        assert name in shown.stdout and summary.split()[0] in shown.stdout
    assert {"nbval-sanitize", "init-course"} <= set(COMMANDS)


def test_mistakes_are_one_line_and_exit_2(tmp_path):
    for args in ([], ["serve-the-moon"], ["init-course"], ["nbval-sanitize", "--nope"]):
        done = mcp_nb_command(*args, cwd=tmp_path)
        assert done.returncode == 2, args
        assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1].startswith("python -m mcp_nb"), done.stderr


def test_only_the_chosen_command_is_imported(tmp_path):
    code = (
        "import sys\n"
        "from mcp_nb.__main__ import main\n"
        f"assert main(['nbval-sanitize', '-o', {str(tmp_path / 'sanitize.cfg')!r}]) == 0\n"
        "print('mcp_nb.notebook.nbval' in sys.modules, 'mcp_nb.commands.course' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
    assert (tmp_path / "sanitize.cfg").read_text().startswith("# nbval sanitizer")


def test_the_commands_that_need_no_mcp_do_not_import_the_sdk(tmp_path):
    """`import mcp_nb` names the API without importing it: writing the sanitizer, a student version
    or a diff of two snapshots costs no import of the MCP SDK (a second of CPU each time)."""
    code = (
        "import sys\n"
        "from mcp_nb.__main__ import main\n"
        f"assert main(['nbval-sanitize', '-o', {str(tmp_path / 'sanitize.cfg')!r}]) == 0\n"
        "for args in (['student-version', 'missing.ipynb', '-o', 'out.ipynb'], ['diff', 'old.json', 'new.json']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as stopped:\n"
        "        assert stopped.code == 2, args  # no such files: one line, exit 2, after the command's module was imported\n"
        "print(sorted(m for m in ('mcp', 'pandas', 'mcp_nb.api') if m in sys.modules), 'mcp_nb.commands.diff' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "True"], done.stdout
