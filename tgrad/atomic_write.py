"""Writing a file as a careful program does: all or nothing, and what ``open(path, "wb")`` gives.

The payload goes to a temporary file in the target's directory (``os.write``), which is fsynced,
renamed over the target (``os.replace``), and the directory fsynced, so a crash leaves either the
old file or the new one, never half of one. A replaced file's mode is kept, a new file gets 0666
less the umask, and through a symlink the link's target is replaced (the link stays). A missing
directory raises PyTorch's RuntimeError (``torch.save``'s message)."""
from __future__ import annotations

import os
import secrets
import stat

__all__ = ["write_file"]


def _write_all(fd: int, payload: bytes) -> None:
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view):]


def _create_temporary(directory: str, name: str, mode):
    """A new file beside the target, opened for writing: with the mode of the file it replaces,
    else with 0666 less the umask (the kernel applies it), as ``open(path, "wb")`` would give."""
    while True:
        tmp = os.path.join(directory, f".tmp-{name}-{secrets.token_hex(4)}")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            continue
        if mode is not None:
            os.fchmod(fd, mode)
        return fd, tmp


def write_file(payload: bytes, path: str) -> None:
    """Replace the file at ``path`` with ``payload`` atomically. A symlink stays a link: its target
    is the file replaced. Errors are PyTorch's (RuntimeError for a missing parent directory)."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise RuntimeError(f"Parent directory {os.path.dirname(target) or directory} does not exist.")
    if os.path.isdir(target):
        raise RuntimeError(f"cannot save to {path}: it is a directory")
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = _create_temporary(directory, os.path.basename(target), mode)
    try:
        try:
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
