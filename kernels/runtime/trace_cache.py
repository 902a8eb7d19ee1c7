"""The trace cache: recorded CPU traces kept on disk across runs, as Triton keeps compiled kernels.

Without it every process pays each launch signature's first sightings again: interpreted once,
recorded the second time (``runtime/executor.py``). With it, the executor looks a signature up here
on its first sighting in a process: a stored trace replays at once, a signature some earlier run
saw once is recorded now (its second sighting), as is one of a static signature an earlier run
found varying; anything else interprets and is noted as seen. Each recorded trace (or refusal) is
stored, and so is which scalar positions of a static signature vary and which its probe pinned (a
guard reads them: keyed by value; ``runtime/signature.py``), so a later run keys its launches as
the run that recorded them did (without the pinned ones, a loop bound's second value would make it
varying in the new process: a signature no run stored, recorded again). Only first sightings and
recordings touch the disk; replays never do.

Layout: ``<dir>/<environment>/<kernel>-<hash>/``, where the environment hashes the versions of
tgrad, Triton, NumPy and Python and the executor's own source, and the kernel directory its name and
Triton cache key (its source and every jit function it calls). In a kernel's directory
``<signature hash>.trace`` holds one signature's traces (``runtime/trace_codec.py``: JSON plus raw
array bytes, zlib-compressed when large, checked by a SHA-256 of the entry's name, environment and
content), ``<static hash>.vary`` the scalar positions found varying, ``<static hash>.pinned`` those
pinned, ``seen`` one signature hash per line.

Entries are written to a temporary file and renamed over (atomic: a reader sees an old or a new
entry, never half of one; concurrent writers of one entry write the same thing), the seen log is
appended to with one ``write`` per line; nothing locks. An entry that is truncated, edited, from
another environment or signature, not owned by this user or writable by others is ignored (and
replaced when that signature records again): its stored source is compiled, so it is trusted only
when this user wrote it and it is intact. The cache is bounded (``TGRAD_CACHE_SIZE``, bytes, with
an optional K/M/G suffix; default 1G): when a process has written past it, the least recently used
files go first (a load refreshes a file's time).

``TGRAD_CACHE=0`` or ``TGRAD_CACHE_DIR=""`` (or ``set_trace_cache(False)``) turns it off; the
directory defaults to ``$XDG_CACHE_HOME/tgrad`` (``~/.cache/tgrad``). ``python -m tgrad.kernels.cache
info|clear`` shows or empties it.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter

import numpy as np
import triton

from .trace_codec import (Corrupt, NotStorable, decode_entry, decode_positions, encode_entry, encode_positions,
                          pack_entry, signature_text, static_text, unpack_entry)

__all__ = ["set_trace_cache", "trace_cache_dir", "trace_cache_counts", "first_sighting", "store", "learned_varying",
           "clear", "info", "trim", "forget", "SEEN", "default_dir"]

SEEN = "seen"  # first_sighting: an earlier run saw this signature once (record it now)
_HASH = re.compile(r"^[0-9a-f]{32}$")
_ENV = re.compile(r"^[0-9a-f]{16}$")

trace_cache_counts: Counter = Counter()  # loaded / stored / seen / rejected (why) / not stored (why)


def _size(text) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)i?[bB]?\s*", text)
    if m is None:
        raise ValueError(f"TGRAD_CACHE_SIZE: {text!r} is not a size (bytes, or a number with K, M or G)")
    return int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()])


def default_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tgrad")


_config = {"enabled": os.environ.get("TGRAD_CACHE", "1") != "0",
           "dir": os.environ.get("TGRAD_CACHE_DIR", None),
           "size": _size(os.environ.get("TGRAD_CACHE_SIZE", "1G"))}
_written = {"root": None, "bytes": 0}  # what this process wrote since it last measured the cache


def set_trace_cache(enabled: bool | None = None, directory: str | None = None, max_bytes: int | None = None):
    """Turn the trace cache on or off, point it at ``directory`` ("" turns it off), bound its size."""
    if enabled is not None:
        _config["enabled"] = bool(enabled)
    if directory is not None:
        _config["dir"] = os.fspath(directory)
    if max_bytes is not None:
        if max_bytes < 0:
            raise ValueError(f"set_trace_cache: max_bytes must be >= 0, got {max_bytes}")
        _config["size"] = int(max_bytes)


def trace_cache_dir() -> str | None:
    """The cache's directory, or None when the cache is off."""
    if not _config["enabled"] or _config["dir"] == "":
        return None
    return _config["dir"] if _config["dir"] is not None else default_dir()


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()


_env: list = []


def _source_bytes(path) -> bytes:
    with open(path, "rb") as f:  # closed at once: an open file per source leaks descriptors (ResourceWarning)
        return f.read()


def environment() -> str:
    """The versions a trace depends on, and the executor's own source (16 hex digits)."""
    if not _env:
        here = os.path.dirname(os.path.abspath(__file__))
        sources = [_source_bytes(os.path.join(here, f)) for f in sorted(os.listdir(here)) if f.endswith(".py")]
        tgrad = sys.modules.get("tgrad")
        _env.append(_digest(getattr(tgrad, "__version__", "?"), triton.__version__, np.__version__,
                            sys.implementation.cache_tag, sys.version, *sources)[:16])
    return _env[0]


class _KernelFiles:
    """A kernel's directory, and what this process read of it (once): the seen log, the facts."""

    def __init__(self, root, path):
        self.root, self.path = root, path
        self.seen = None  # signature hashes an earlier run saw
        self.varying: dict = {}  # static hash -> positions written or read
        self.learned: set = set()  # static hashes an earlier run found varying
        self.pinned: set = set()  # the kernel's pinned scalar positions stored by this process
        self.texts: dict = {}  # signature or static part -> (its stable text, that text's hash)

    def text(self, state, part, static=False):
        """(stable text, hash) of a signature or of its static part; NotStorable when it has none."""
        known = self.texts.get((static, part))
        if known is None:
            if len(self.texts) > 4 * 4096:
                self.texts.clear()
            text = static_text(state, part) if static else signature_text(state, part)
            known = self.texts[(static, part)] = (text, _digest(text)[:32])
        return known


def _files(kernel, state):
    root = trace_cache_dir()
    if root is None:
        return None
    files = state.__dict__.get("_trace_files")
    if files is not None and files.root == root:
        return files
    fn, key = getattr(kernel, "fn", None), None
    try:
        key = kernel.cache_key
    except Exception as e:  # a kernel Triton cannot hash: memory only
        trace_cache_counts[f"not stored: {type(e).__name__} computing the cache key"] += 1
    if fn is None or not isinstance(key, str):
        files = _KernelFiles(root, None)
    else:
        kernel_id = _digest(fn.__module__, fn.__qualname__, key)[:16]
        files = _KernelFiles(root, os.path.join(root, environment(), f"{fn.__name__}-{kernel_id}"))
    state.__dict__["_trace_files"] = files
    return files


def forget(state):
    """Drop what this process read of a kernel's directory (``clear_replay_cache``): read again."""
    state.__dict__.pop("_trace_files", None)


def _trusted(st) -> bool:
    """Written by this user and writable by no one else (its source will be compiled)."""
    if not hasattr(os, "getuid"):
        return True
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def _read(path):
    """The bytes of a file this user owns, or None (absent, foreign, unreadable)."""
    try:
        with open(path, "rb") as f:
            if not _trusted(os.fstat(f.fileno())):
                trace_cache_counts["rejected: not this user's file"] += 1
                return None
            return f.read()
    except OSError:
        return None


_made: set = set()  # directories this process made or found


def _make_dirs(kernel_dir):
    """The kernel's directory, and the cache's and environment's above it, each this user's only."""
    if kernel_dir in _made and os.path.isdir(kernel_dir):
        return
    env_dir = os.path.dirname(kernel_dir)
    os.makedirs(os.path.dirname(os.path.dirname(env_dir)), exist_ok=True)
    for d in (os.path.dirname(env_dir), env_dir, kernel_dir):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    _made.add(kernel_dir)


def _write(path, data: bytes):
    """Atomically: a temporary file in the same directory, renamed over ``path``."""
    directory = os.path.dirname(path)
    try:
        _make_dirs(directory)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return
    _account(len(data))


def first_sighting(kernel, state, key):
    """A signature's first sighting in this process: (variants, refusal) stored for it, ``SEEN``
    when an earlier run saw it once, else None (it interprets; noted as seen)."""
    files = _files(kernel, state)
    if files is None or files.path is None:
        return None
    try:
        text, name = files.text(state, key)
    except NotStorable as e:
        trace_cache_counts[f"not stored: {e}"] += 1
        return None
    path = os.path.join(files.path, name + ".trace")
    data = _read(path)
    if data is not None:
        try:
            header, blob = unpack_entry(name, environment(), data)
            if header.get("signature") != text:
                raise Corrupt("another signature's entry")
            found = decode_entry(header, blob)
        except Corrupt as e:
            trace_cache_counts[f"rejected: {e}"] += 1
        else:
            trace_cache_counts["loaded"] += 1
            try:
                os.utime(path)  # recently used: the size bound removes it last
            except OSError:
                pass
            return found
    if files.seen is None:
        log = _read(os.path.join(files.path, "seen"))
        files.seen = set(line for line in log.decode("ascii", "replace").split("\n") if _HASH.match(line)) \
            if log else set()
    if name in files.seen or _learned(files, state, key[0]):
        trace_cache_counts["seen"] += 1
        return SEEN
    files.seen.add(name)
    _note_varying(files, state, key)
    try:
        _make_dirs(files.path)
        fd = os.open(os.path.join(files.path, "seen"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (name + "\n").encode())
        finally:
            os.close(fd)
        _account(len(name) + 1)
    except OSError:
        pass
    return None


def store(kernel, state, key, variants, refused):
    """Store a signature's traces (or why it is refused) after a recording."""
    files = _files(kernel, state)
    if files is None or files.path is None:
        return
    try:
        text, name = files.text(state, key)
        header, blob = encode_entry(variants, refused)
    except NotStorable as e:
        trace_cache_counts[f"not stored: {e}"] += 1
        return
    header["signature"] = text
    _write(os.path.join(files.path, name + ".trace"), pack_entry(name, environment(), header, blob))
    trace_cache_counts["stored"] += 1
    _note_varying(files, state, key)
    _note_pinned(files, state, key[0])


def _varying_of(state, static):
    """The scalar positions of a static signature that vary (``KernelState.contexts``' shape)."""
    context = state.contexts.get(static)
    return frozenset(context[1]) if context is not None else frozenset()


def _note_varying(files, state, key):
    varying = _varying_of(state, key[0])
    if not varying:
        return
    try:
        text, name = files.text(state, key[0], static=True)
    except NotStorable:
        return
    known = files.varying.get(name, frozenset())
    if varying <= known:
        return
    varying = varying | known | _read_varying(files, name, text)
    files.varying[name] = varying
    _write(os.path.join(files.path, name + ".vary"), encode_positions(varying, text))


def _note_pinned(files, state, static):
    """Store the positions a recording's probe pinned (``settle`` ran just before) under its static
    part: a later run keys them by value there, from that part's first sighting. Not kernel-wide
    from its first launch, as they are in memory once pinned: parts launched before the probe had
    them varying, and their stored signatures say so."""
    new = state.pinned - files.pinned
    if not new:
        return
    try:
        text, name = files.text(state, static, static=True)
    except NotStorable:
        return
    files.pinned |= new
    path = os.path.join(files.path, name + ".pinned")
    data = _read(path)
    _write(path, encode_positions(new | (decode_positions(data, text) if data is not None else frozenset()), text))


def _read_varying(files, name, text, ext=".vary"):
    data = _read(os.path.join(files.path, name + ext))
    return decode_positions(data, text) if data is not None else frozenset()


def learned_varying(kernel, state, static):
    """(varying, pinned): the scalar positions an earlier run found varying under this static
    signature (its first sighting in this process keys them as replay inputs at once), and those
    its probe pinned (keyed by value, never varying: as in the run that stored its traces)."""
    files = _files(kernel, state)
    if files is None or files.path is None:
        return (), ()
    try:
        text, name = files.text(state, static, static=True)
    except NotStorable:
        return (), ()
    varying = _read_varying(files, name, text)
    if varying:
        files.varying[name] = varying | files.varying.get(name, frozenset())
        files.learned.add(name)
    return varying, _read_varying(files, name, text, ".pinned")


def _learned(files, state, static) -> bool:
    """An earlier run found scalars of this static signature varying: a call site launched again
    and again, so a signature of it not seen yet (a varying scalar of another width) records now."""
    if not files.learned:
        return False
    try:
        return files.text(state, static, static=True)[1] in files.learned
    except NotStorable:
        return False


# -- the whole cache: size, trimming, clearing

def _account(nbytes):
    root = trace_cache_dir()
    if root is None:
        return
    if _written["root"] != root:  # first write of this process here: measure once
        _written["root"], _written["bytes"] = root, sum(size for _, size, _ in _walk(root))
    _written["bytes"] += nbytes
    if _written["bytes"] > _config["size"]:
        _written["bytes"] = trim(root, int(_config["size"] * 0.8))


def _walk(root):
    """(path, bytes, last use) of every file of the cache under ``root``."""
    try:
        envs = [e for e in os.scandir(root) if e.is_dir(follow_symlinks=False) and _ENV.match(e.name)]
    except OSError:
        return
    for env in envs:
        for kernel in _scandir(env.path):
            if not kernel.is_dir(follow_symlinks=False):
                continue
            for f in _scandir(kernel.path):
                try:
                    st = f.stat(follow_symlinks=False)
                except OSError:
                    continue
                yield f.path, st.st_size, st.st_mtime


def _scandir(path):
    try:
        return list(os.scandir(path))
    except OSError:
        return []


def trim(root, max_bytes) -> int:
    """Remove the least recently used files until the cache holds at most ``max_bytes``; temporary
    files of writers that died go too. Returns the bytes left."""
    files = sorted(_walk(root), key=lambda f: f[2])
    total = sum(size for _, size, _ in files)
    stale = time.time() - 3600
    for path, size, used in files:
        if total <= max_bytes and not (os.path.basename(path).startswith(".tmp-") and used < stale):
            continue
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass
    return total


def info(root=None) -> dict:
    """What the cache holds: its directory, and per environment its kernels, entries and bytes."""
    root = root if root is not None else (trace_cache_dir() or _config["dir"] or default_dir())
    envs: dict = {}
    for path, size, _ in _walk(root):
        kernel_dir = os.path.dirname(path)
        env = envs.setdefault(os.path.basename(os.path.dirname(kernel_dir)),
                              {"kernels": set(), "traces": 0, "bytes": 0})
        env["kernels"].add(os.path.basename(kernel_dir))
        env["traces"] += path.endswith(".trace")
        env["bytes"] += size
    return {"dir": root, "enabled": trace_cache_dir() is not None, "current": environment(),
            "max_bytes": _config["size"],
            "environments": {k: dict(v, kernels=len(v["kernels"])) for k, v in sorted(envs.items())}}


def clear(root=None) -> int:
    """Remove every environment's entries under the cache directory (only what the cache wrote:
    directories named as its environments are); returns the bytes freed."""
    root = root if root is not None else (trace_cache_dir() or _config["dir"] or default_dir())
    freed = sum(size for _, size, _ in _walk(root))
    for env in _scandir(root):
        if env.is_dir(follow_symlinks=False) and _ENV.match(env.name):
            shutil.rmtree(env.path, ignore_errors=True)
    _written["root"] = None
    return freed
