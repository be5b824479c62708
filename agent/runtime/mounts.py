"""What a sandboxed run may see: the system and Python read-only, its folder writable, devices on demand."""

from __future__ import annotations

import glob
import os
import site
import sys
from collections.abc import Iterable
from pathlib import Path

# System trees; on merged-/usr systems most of these are symlinks into /usr and are recreated as such.
SYSTEM_ROOTS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The few files of /etc that the loader, Python, torch, Triton and compilers read; the rest (credentials, service
# configuration) stays out of sight.
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/passwd", "/etc/group",
             "/etc/nsswitch.conf", "/etc/localtime", "/etc/timezone", "/etc/alternatives", "/etc/os-release",
             "/etc/Ascend", "/etc/ascend_install.info")
# Accelerator device nodes, bound only into runs on that accelerator.
DEVICE_NODES = {
    "cuda": ("/dev/nvidia*", "/dev/nvidia-caps", "/dev/dri"),
    "npu": ("/dev/davinci*", "/dev/devmm_svm", "/dev/hisi_hdc", "/dev/svm*"),
}


def python_roots() -> list[Path]:
    """Return the folders this Python needs: its prefixes and site-packages (never the project or its cwd)."""
    candidates = {Path(sys.base_prefix), Path(sys.prefix), Path(sys.exec_prefix), Path(sys.executable).parent}
    candidates.update(Path(p) for p in site.getsitepackages())
    for entry in sys.path:
        if entry.endswith(".zip") or any(part in ("site-packages", "dist-packages") for part in Path(entry).parts):
            candidates.add(Path(entry))
    return _outermost(p.resolve() for p in candidates if p.exists())


def read_only_roots(extra: list[Path]) -> list[Path]:
    """Return every folder bound read-only besides the system: Python's, the device toolkits', the extra ones."""
    return _outermost([*python_roots(), *(p.resolve() for p in extra if p.exists())])


def device_nodes(device: str) -> list[str]:
    """Return the device nodes a run on this device needs (none on the CPU)."""
    return sorted({node for pattern in DEVICE_NODES.get(device, ()) for node in glob.glob(pattern)})


def bind_args(workdir: Path, device: str, extra: list[Path], tmp_bytes: int) -> list[str]:
    """Build the bubblewrap arguments of the file-system: a fresh root with only what a run needs."""
    args = ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", "/tmp",
            "--ro-bind", "/sys", "/sys"]
    made: set[Path] = {Path("/"), Path("/tmp"), Path("/proc"), Path("/dev"), Path("/sys")}
    bound: list[Path] = []
    for system in SYSTEM_ROOTS:
        path = Path(system)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), system]
        elif path.is_dir():
            args += ["--ro-bind", system, system]
            bound.append(path)
        made.add(path)
    args += ["--perms", "0755", "--dir", "/etc"]
    made.add(Path("/etc"))
    for name in ETC_FILES:
        args += ["--ro-bind-try", name, name]
    for root in read_only_roots(extra):
        if not _inside(root, bound):
            args += _parents(root, made) + ["--ro-bind", str(root), str(root)]
            bound.append(root)
    for node in device_nodes(device):
        args += _parents(Path(node), made) + ["--dev-bind", node, node]
    folder = workdir.resolve()
    return args + _parents(folder, made, inside=bound) + ["--bind", str(folder), str(folder)]


def _parents(path: Path, made: set[Path], inside: list[Path] | None = None) -> list[str]:
    """Create the folders above a mount point, world-readable (bubblewrap would make them private)."""
    args: list[str] = []
    for parent in reversed(path.parents):
        if parent in made or (inside and _inside(parent, inside)):
            continue
        args += ["--perms", "0755", "--dir", str(parent)]
        made.add(parent)
    return args


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """Drop paths that lie inside another one of the list."""
    unique = sorted(set(paths))
    kept: list[Path] = []
    for path in unique:
        if not _inside(path, kept):
            kept.append(path)
    return kept
