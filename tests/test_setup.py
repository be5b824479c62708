"""The README's set-up on a bare machine: two commands, the system packages named, and a run without them that
ends with its skips counted and explained rather than with failures or silent skips."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.system import CHECKS

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {need.package for need in CHECKS}


def set_up_section() -> str:
    text = (ROOT / "README.md").read_text()
    return text[text.index("## Set up"):text.index("\n## ", text.index("## Set up") + 1)]


def test_the_readme_sets_up_with_two_commands_and_names_every_package_the_full_set_needs() -> None:
    section = set_up_section()
    commands = re.findall(r"```bash\n(.*?)\n```", section, re.S)
    assert len(commands) == 2 and all("\n" not in command for command in commands), commands
    assert "kernelgen run" in commands[0] and "pytest" in commands[1]
    named = re.search(r"`apt-get install ([a-z0-9 -]+)`", section)
    assert named and set(named.group(1).split()) == PACKAGES
    for package in PACKAGES:  # the table says what skips without each
        assert re.search(rf"^\| `{package}` \| .+ \|$", section, re.M), package


def test_ci_installs_every_package_the_full_set_needs() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    for package in PACKAGES - {"postgresql"}:
        assert re.search(rf"\b{package}\b", script), package
    assert "pg_ctlcluster" in script and "KERNELGEN_TEST_POSTGRES_URL=" in script  # it starts PostgreSQL


def bare_path(folder: Path) -> str:
    """Return a PATH holding every program of this one but bubblewrap and chromium (links in `folder`)."""
    folder.mkdir()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not Path(entry).is_dir() or entry.startswith(str(folder)):
            continue
        for program in Path(entry).iterdir():
            if program.name not in ("bwrap", "chromium", "chromium-browser") and not (folder / program.name).exists():
                (folder / program.name).symlink_to(program)
    return str(folder)


def test_a_run_without_the_packages_names_each_and_counts_what_it_skipped(tmp_path: Path) -> None:
    (tmp_path / "fonts.conf").write_text("<?xml version='1.0'?><fontconfig></fontconfig>")  # no font at all
    env = {key: value for key, value in os.environ.items()
           if key not in ("KERNELGEN_TEST_POSTGRES_URL", "KERNELGEN_CHROMIUM", "PYTEST_XDIST_WORKER")}
    env |= {"PATH": bare_path(tmp_path / "bin"), "FONTCONFIG_FILE": str(tmp_path / "fonts.conf")}
    isolation = "tests/agent/runtime/test_isolation.py::test_"
    selected = [isolation + "without_bubblewrap_model_code_is_refused_and_offline_code_runs",  # holds without it
                isolation + "it_writes_only_its_own_folder_and_a_private_tmp",
                "tests/storage/test_users.py::test_local_is_reserved_for_the_user_of_a_server_without_tokens"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *selected],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert re.search(r"\b2 passed, 2 skipped\b", out.splitlines()[-1]), out
    # -q shows no header: the summary at the end is what names them.
    summary = out[out.index("system packages missing"):]
    assert re.search(r"^bubblewrap: 1 test\(s\) skipped .*apt-get install bubblewrap", summary, re.M), summary
    assert re.search(r"^chromium: 0 test\(s\) skipped .*apt-get install chromium", summary, re.M), summary
    assert re.search(r"^fonts-wqy-zenhei: 0 test\(s\) skipped .*boxes.*apt-get install fonts-wqy-zenhei", summary,
                     re.M), summary
    assert re.search(r"^postgresql: 1 test\(s\) skipped .*KERNELGEN_TEST_POSTGRES_URL=", summary, re.M), summary
