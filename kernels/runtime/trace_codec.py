"""A compiled trace (``runtime/trace.py``) and a launch signature as data the trace cache
(``runtime/trace_cache.py``) writes, and back.

A trace is its generated source and guard source (text that only ever came from the emitter), the
guard decisions it expects, and its namespace: numpy arrays (raw bytes with dtype, shape and memory
layout, so a loaded array iterates, and numpy sums it, as the recorded one did), numpy dtypes and
ufuncs by name, and the replayed builder calls and numpy steps by the description they carry
(``spec``: a builder method's name, its static operands, Triton types and enums), rebuilt here the
way the emitter and the recorder build them. Anything else makes a trace not storable: it stays in
memory only.

A signature is stored as a stable text: constexpr functions by their Triton cache key (their source
and everything they call), the interpreter's builder by its options, not by ``id()``. Scalar
positions (a static signature's varying ones, a kernel's pinned ones) are stored as JSON.
"""
from __future__ import annotations

import hashlib
import json
import math
import struct
import zlib

import numpy as np
import triton.language as tl
from triton._C.libtriton import ir

from .emitter import BASE_NAMESPACE, builder_call, single_output
from .interpreter import _blas_dot
from .recorder import _Arg, numpy_step
from .trace import CompiledLaunch
from .triton_private import InterpreterBuilder, interpreter_builder

__all__ = ["NotStorable", "Corrupt", "signature_text", "static_text", "encode_entry", "decode_entry", "pack_entry",
           "unpack_entry", "encode_positions", "decode_positions"]

ALIGN = 64  # each stored array starts at a multiple of this in the blob
MAGIC = b"tgrad trace 1\n"
COMPRESS_FROM = 64 << 10  # an entry's arrays this large are stored zlib-compressed (offsets compress ~10x)


class NotStorable(Exception):
    """The trace or signature holds something with no stable description: kept in memory only."""


class Corrupt(Exception):
    """A stored entry that does not decode to a trace: ignored (and rewritten when recorded)."""


# -- signatures

def _stable(part, refs):
    if type(part) is tuple:
        if len(part) == 2 and part[0] == "id" and type(part[1]) is int:  # a constexpr object by identity
            obj = refs.get(part[1])
            fn, key = getattr(obj, "fn", None), getattr(obj, "cache_key", None)
            if fn is None or not isinstance(key, str):
                raise NotStorable(f"a constexpr {type(obj).__name__} with no cache key")
            return ("jit", f"{fn.__module__}.{fn.__qualname__}", key)
        if not any(type(p) is tuple for p in part):  # no constexpr key inside
            return part
        return tuple(_stable(p, refs) for p in part)
    return part


def static_text(state, static) -> str:
    """The static part of a signature (``runtime/signature.py``) as text equal across processes."""
    last = static[-1]
    if type(last) is tuple and last and last[0] == id(interpreter_builder):  # the builder, by its options
        static = static[:-1] + (("builder",) + last[1:],)
    return repr(_stable(static, state.refs))


def signature_text(state, key) -> str:
    static, scalars = key
    return repr((static_text(state, static), scalars))


# -- values

def _enc(v):
    """Static values of the builder calls and numpy steps (numbers, Triton types and enums) as JSON."""
    t = type(v)
    if v is None or t is bool or t is int or t is str:
        return v
    if t is float:
        return {"f": v.hex()}
    if t is tuple or t is list:
        return {"t" if t is tuple else "l": [_enc(x) for x in v]}
    if t is _Arg:
        return {"arg": v.id}
    if t is slice:
        return {"slice": [_enc(v.start), _enc(v.stop), _enc(v.step)]}
    if t is tl.dtype:
        return {"tl": v.name}
    if t is tl.pointer_type:
        return {"ptr": _enc(v.element_ty), "space": v.address_space, "const": bool(v.const)}
    if t is tl.block_type:
        return {"block": _enc(v.element_ty), "shape": [int(getattr(s, "value", s)) for s in v.shape]}
    if isinstance(v, np.dtype) and np.dtype(v.str) == v:
        return {"np": v.str}
    if getattr(ir, t.__name__, None) is t and hasattr(t, "__members__"):
        return {"ir": t.__name__, "name": v.name}
    raise NotStorable(f"a {t.__name__} operand")


def _dec(v):
    if v is None or type(v) in (bool, int, str):
        return v
    if type(v) is not dict:
        raise Corrupt(f"a {type(v).__name__} value")
    if "f" in v:
        return float.fromhex(v["f"])
    if "t" in v:
        return tuple(_dec(x) for x in v["t"])
    if "l" in v:
        return [_dec(x) for x in v["l"]]
    if "arg" in v:
        return _Arg(int(v["arg"]))
    if "slice" in v:
        return slice(*(_dec(x) for x in v["slice"]))
    if "tl" in v:
        return tl.dtype(v["tl"])
    if "ptr" in v:
        return tl.pointer_type(_dec(v["ptr"]), v["space"], bool(v["const"]))
    if "block" in v:
        return tl.block_type(_dec(v["block"]), [int(s) for s in v["shape"]])
    if "np" in v:
        return np.dtype(v["np"])
    if "ir" in v:
        enum = getattr(ir, v["ir"])
        return enum.__members__[v["name"]]
    raise Corrupt(f"a value tagged {sorted(v)}")


def _enc_array(a, blob: bytearray):
    scalar = isinstance(a, np.generic)
    a = np.asarray(a)
    if a.dtype.hasobject or a.dtype.fields is not None or a.dtype.kind == "V" or np.dtype(a.dtype.str) != a.dtype:
        raise NotStorable(f"a {a.dtype} array")
    # the memory layout, kept: broadcast axes stored once, reversed axes flipped, axes by stride
    bcast = [ax for ax in range(a.ndim) if a.strides[ax] == 0 and a.shape[ax] > 1]
    base = a[tuple(slice(0, 1) if ax in bcast else slice(None) for ax in range(a.ndim))]
    flip = [ax for ax in range(a.ndim) if base.strides[ax] < 0 and base.shape[ax] > 1]
    if flip:
        base = np.flip(base, axis=tuple(flip))
    order = sorted(range(a.ndim), key=lambda ax: -abs(base.strides[ax]))
    data = np.ascontiguousarray(base.transpose(order)).tobytes()
    at = len(blob)
    blob += data + bytes(-len(data) % ALIGN)
    return {"dtype": a.dtype.str, "shape": list(a.shape), "order": order, "bcast": bcast, "flip": flip,
            "at": at, "scalar": scalar, "writable": bool(a.flags.writeable)}


def _dec_array(m, blob):
    dtype, shape = np.dtype(m["dtype"]), tuple(int(s) for s in m["shape"])
    order, bcast, flip = [int(x) for x in m["order"]], set(m["bcast"]), tuple(m["flip"])
    if sorted(order) != list(range(len(shape))) or dtype.hasobject or dtype.kind == "V":
        raise Corrupt("an array's layout")
    base_shape = [1 if ax in bcast else shape[ax] for ax in range(len(shape))]
    stored = [base_shape[ax] for ax in order]
    at, count = int(m["at"]), math.prod(stored)
    if at < 0 or at + count * dtype.itemsize > len(blob):
        raise Corrupt("an array past the end of the entry")
    a = np.frombuffer(blob, dtype, count, at).reshape(stored).transpose(np.argsort(order))
    if flip:
        a = np.flip(a, axis=flip)
    if bcast:
        a = np.broadcast_to(a, shape)
    elif not m["writable"]:
        a.flags.writeable = False
    return a[()] if m["scalar"] else a


def _enc_spec(spec):
    kind = spec[0]
    if kind == "builder":
        _, name, fn, template, dtypes, n_out = spec
        if fn is _blas_dot:
            ref = "blas_dot"
        elif getattr(fn, "__self__", None) is interpreter_builder and \
                getattr(fn, "__func__", None) is InterpreterBuilder.__dict__.get(name):
            ref = "builder"
        else:
            raise NotStorable(f"{name} on a patched builder")
        return {"builder": name, "fn": ref, "template": _enc(tuple(template)), "dtypes": _enc(tuple(dtypes)),
                "n_out": n_out}
    if kind == "single":
        inner = getattr(spec[1], "spec", None)
        if inner is None:
            raise NotStorable("a numpy step without a description")
        return {"single": _enc_spec(inner)}
    return {"step": _enc(tuple(spec))}


def _dec_spec(s):
    if "builder" in s:
        name = s["builder"]
        if not isinstance(name, str) or not name.startswith(("create_", "get_")):
            raise Corrupt(f"builder method {name!r}")
        fn = _blas_dot if s["fn"] == "blas_dot" else InterpreterBuilder.__dict__[name].__get__(interpreter_builder)
        return builder_call(fn, _dec(s["template"]), list(_dec(s["dtypes"])), int(s["n_out"]), name)
    if "single" in s:
        return single_output(_dec_spec(s["single"]))
    return numpy_step(_dec(s["step"]))


def _enc_value(v, blob):
    if isinstance(v, (np.ndarray, np.generic)):
        return {"array": _enc_array(v, blob)}
    if isinstance(v, np.ufunc) and getattr(np, v.__name__, None) is v:
        return {"ufunc": v.__name__}
    spec = getattr(v, "spec", None)
    if spec is not None and callable(v):
        return {"call": _enc_spec(spec)}
    return _enc(v)  # dtypes, slices


def _dec_value(v, blob):
    if "array" in v:
        return _dec_array(v["array"], blob)
    if "ufunc" in v:
        uf = getattr(np, v["ufunc"])
        if not isinstance(uf, np.ufunc):
            raise Corrupt(f"ufunc {v['ufunc']!r}")
        return uf
    if "call" in v:
        return _dec_spec(v["call"])
    return _dec(v)


# -- entries

def encode_entry(variants, refused):
    """(header, blob) of a signature's traces (or its refusal): JSON-able header, arrays in blob."""
    blob = bytearray()
    out = []
    for v in variants:
        ns = {name: _enc_value(value, blob) for name, value in v.namespace.items() if name not in BASE_NAMESPACE}
        out.append({"source": v.source, "guard_source": v.guard_source, "expected": _enc(tuple(v.expected)),
                    "nbytes": int(v.nbytes), "ns": ns})
    return {"refused": refused, "variants": out}, bytes(blob)


def decode_entry(header, blob):
    """(variants, refusal) from ``encode_entry``'s output; ``Corrupt`` when it is not one."""
    try:
        refused = header["refused"]
        if refused is not None and not isinstance(refused, str):
            raise Corrupt("a refusal that is not text")
        variants = []
        for v in header["variants"]:
            source, guard_source = v["source"], v["guard_source"]
            if not source.startswith("def _run(A):\n") or \
                    (guard_source and not guard_source.startswith("def _guards(A):\n")):
                raise Corrupt("a trace source the emitter did not write")
            ns = dict(BASE_NAMESPACE)
            for name, value in v["ns"].items():
                if not name.isidentifier() or name.startswith("__") or name in BASE_NAMESPACE:
                    raise Corrupt(f"namespace name {name!r}")
                ns[name] = _dec_value(value, blob)
            expected = _dec(v["expected"])
            if type(expected) is not tuple or any(type(e) not in (bool, int) for e in expected):
                raise Corrupt("guard decisions")
            variants.append(CompiledLaunch(None, source, guard_source, ns, expected, int(v["nbytes"])))
        return variants, refused
    except Corrupt:
        raise
    except Exception as e:  # anything a damaged entry raises while decoding or compiling
        raise Corrupt(f"{type(e).__name__}: {e}") from None


def pack_entry(name, environment, header, blob) -> bytes:
    """A stored entry's bytes: magic, header length, JSON header, SHA-256 of the entry's name,
    environment and content, then the arrays (zlib-compressed when large)."""
    header = dict(header)
    header.pop("zlib", None)
    if len(blob) >= COMPRESS_FROM:
        header["zlib"], blob = len(blob), zlib.compress(blob, 1)
    head = json.dumps(header, separators=(",", ":")).encode()
    check = hashlib.sha256(MAGIC + name.encode() + environment.encode() + head + blob).digest()
    return MAGIC + struct.pack("<Q", len(head)) + head + check + blob


def unpack_entry(name, environment, data):
    """(header, writable blob) of ``pack_entry``'s bytes; ``Corrupt`` unless intact and for this
    name and environment."""
    if data is None or not data.startswith(MAGIC) or len(data) < len(MAGIC) + 8 + 32:
        raise Corrupt("not a trace entry")
    at = len(MAGIC)
    (n,) = struct.unpack_from("<Q", data, at)
    head = data[at + 8:at + 8 + n]
    check = data[at + 8 + n:at + 8 + n + 32]
    blob = bytearray(data[at + 8 + n + 32:])  # writable: the arrays are views of it
    if len(head) != n or hashlib.sha256(MAGIC + name.encode() + environment.encode() + head + blob).digest() != check:
        raise Corrupt("a checksum that does not match")
    try:
        header = json.loads(head)
        if header.get("zlib") is not None:
            blob = bytearray(zlib.decompress(blob))
            if len(blob) != header["zlib"]:
                raise ValueError("a blob of another size")
        return header, blob
    except (ValueError, zlib.error, TypeError, AttributeError) as e:
        raise Corrupt(f"its header: {e}") from None


def encode_positions(positions, static=None) -> bytes:
    """Scalar positions (ints, or (argument, *path) tuples), with the static signature's text they
    belong to (None: the kernel's)."""
    listed = sorted([list(p) if type(p) is tuple else p for p in positions], key=str)
    return json.dumps({"static": static, "positions": listed}).encode()


def decode_positions(data, static=None) -> frozenset:
    """The positions ``encode_positions`` wrote for ``static``; empty for another's, or damaged data
    (what they would have keyed is recorded again)."""
    try:
        facts = json.loads(data)
        if facts["static"] != static:
            return frozenset()
        out = set()
        for p in facts["positions"]:
            if type(p) is int:
                out.add(p)
            elif type(p) is list and len(p) >= 2 and all(type(x) is int for x in p):  # (argument, *path)
                out.add(tuple(p))
        return frozenset(out)
    except (ValueError, KeyError, TypeError):
        return frozenset()
