"""The event model of POST /api/v1/events (server/api/events.schema.json) and the server's rules for it.

An event is a plain dict, as the server reads it. ``validate`` checks one against the same
rules the server applies, so a bad event is caught (and named by its field) before it can
make the server refuse the batch it travels in.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, Mapping, Optional

MAX_TEXT = 1024  # bytes of any name, tag value or label value (kMaxEventText)
MAX_TAGS = 32
MAX_TIME_NS = 2**62  # nanoseconds since the Unix epoch (the year 2116): kMaxTimestampNs
MAX_ALLOCATION_BYTES = 2**50  # 1 PiB: kMaxAllocationBytes
MAX_U32 = 2**32 - 1
# The data types a kernel's FLOPs may be counted in (kDataTypes in the engine's GPU table).
DATA_TYPES = ("fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")

_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
_METRIC = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")

Event = Dict[str, Any]


class EventError(ValueError):
    """An event the server would refuse; ``field`` names the offending member."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _text(event: Mapping[str, Any], field: str, required: bool = False) -> None:
    value = event.get(field)
    if value is None:
        if required:
            raise EventError(field, "is required and must not be empty")
        return
    if not isinstance(value, str):
        raise EventError(field, "must be a string")
    if required and not value:
        raise EventError(field, "is required and must not be empty")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_TEXT:
        raise EventError(field, f"is longer than {MAX_TEXT} bytes")


def _integer(event: Mapping[str, Any], field: str, required: bool = False, minimum: Optional[int] = 0,
             maximum: Optional[int] = None) -> None:
    value = event.get(field)
    if value is None:
        if required:
            raise EventError(field, "is required")
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise EventError(field, "must be an integer")
    if not -(2**63) <= value < 2**63:
        raise EventError(field, "is out of the 64-bit range")
    if minimum is not None and value < minimum:
        raise EventError(field, f"must be >= {minimum}")
    if maximum is not None and value > maximum:
        raise EventError(field, f"must be at most {maximum}")


def _time(event: Mapping[str, Any], field: str, required: bool = False) -> None:
    _integer(event, field, required, 0, MAX_TIME_NS)


def _dims(event: Mapping[str, Any], field: str) -> None:
    dims = event.get(field)
    if dims is None:
        return
    if not isinstance(dims, (list, tuple)) or not 1 <= len(dims) <= 3 or not all(
            isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= MAX_U32 for d in dims):
        raise EventError(field, "must be an array of 1 to 3 positive integers")


def _ms(event: Mapping[str, Any], field: str, required: bool = False) -> None:
    value = event.get(field)
    if value is None:
        if required:
            raise EventError(field, "is required")
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EventError(field, "must be a number")
    if not math.isfinite(value):
        raise EventError(field, "must be a finite number")
    if value < 0:
        raise EventError(field, "must not be negative")


def _string_map(event: Mapping[str, Any], field: str) -> None:
    tags = event.get(field)
    if tags is None:
        return
    if not isinstance(tags, Mapping):
        raise EventError(field, "must be an object of strings")
    if field == "tags" and len(tags) > MAX_TAGS:
        raise EventError(field, f"at most {MAX_TAGS} tags")
    for key, value in tags.items():
        if not isinstance(key, str) or not _LABEL.match(key):
            raise EventError(f"{field}.{key}", f"{field[:-1]} names must match [a-zA-Z_][a-zA-Z0-9_]*")
        if not isinstance(value, str):
            raise EventError(f"{field}.{key}", "must be a string")
        if len(value.encode("utf-8", "surrogatepass")) > MAX_TEXT:
            raise EventError(f"{field}.{key}", f"is longer than {MAX_TEXT} bytes")


def _kernel(e: Mapping[str, Any]) -> None:
    _text(e, "name", True)
    for field in ("device", "variant", "stream"):
        _text(e, field)
    for field in ("start_ns", "end_ns", "launch_start_ns", "launch_end_ns"):
        _time(e, field)
    _dims(e, "grid")
    _dims(e, "block")
    _integer(e, "shared_mem_bytes")
    _integer(e, "registers_per_thread")
    _ms(e, "duration_ms")
    _ms(e, "flops")  # non-negative finite numbers, as durations are
    _ms(e, "bytes")
    if e.get("dtype") is not None and e["dtype"] not in DATA_TYPES:
        raise EventError("dtype", "must be one of " + ", ".join(DATA_TYPES))
    has = [f for f in ("start_ns", "end_ns", "duration_ms") if e.get(f) is not None]
    if "duration_ms" not in has and len(has) < 2:
        raise EventError("end_ns" if "start_ns" in has else "start_ns",
                         "a kernel needs start_ns and end_ns, or duration_ms")
    if "start_ns" in has and "end_ns" in has and e["end_ns"] < e["start_ns"]:
        raise EventError("end_ns", "is before start_ns")
    if e.get("duration_ms") is not None and e["duration_ms"] > 604_800_000:
        raise EventError("duration_ms", "must be at most 604800000 (a week)")
    ls, le = e.get("launch_start_ns"), e.get("launch_end_ns")
    if ls is not None and le is not None and le < ls:
        raise EventError("launch_end_ns", "is before launch_start_ns")
    _string_map(e, "tags")


def _memory(e: Mapping[str, Any]) -> None:
    if e.get("op") not in ("alloc", "free"):
        raise EventError("op", 'must be "alloc" or "free"')
    _text(e, "address", True)
    if e["op"] == "alloc":
        _integer(e, "size_bytes", True)
        if e["size_bytes"] <= 0:
            raise EventError("size_bytes", "an allocation needs a positive size")
        if e["size_bytes"] > MAX_ALLOCATION_BYTES:
            raise EventError("size_bytes", "must be at most 2^50 (1 PiB)")
    if e.get("kind") not in (None, "device", "shared", "host"):
        raise EventError("kind", 'must be "device", "shared" or "host"')
    _text(e, "tag")
    _text(e, "device")
    _time(e, "ts_ns")
    _string_map(e, "tags")


def _command_buffer(e: Mapping[str, Any]) -> None:
    _text(e, "id", True)
    _text(e, "queue", True)
    _text(e, "device")
    order = ("enqueue_ns", "submit_ns", "start_ns", "end_ns")
    for field in order:
        _time(e, field, True)
    for before, after in zip(order, order[1:]):
        if e[after] < e[before]:
            raise EventError(after, f"is before {before}")
    _string_map(e, "tags")


def _inference(e: Mapping[str, Any]) -> None:
    _text(e, "model", True)
    _text(e, "version")
    _time(e, "ts_ns")
    _ms(e, "latency_ms", True)
    for field in ("queue_ms", "compute_ms", "ttft_ms"):
        _ms(e, field)
    if e.get("ttft_ms") is not None and e["ttft_ms"] > e["latency_ms"]:
        raise EventError("ttft_ms", "exceeds latency_ms")
    if e.get("batch_size") is not None:
        _integer(e, "batch_size")
        if not 1 <= e["batch_size"] <= 4294967295:
            raise EventError("batch_size", "must be from 1 to 4294967295")
    if e.get("status") not in (None, "ok", "error"):
        raise EventError("status", 'must be "ok" or "error"')
    _integer(e, "input_tokens", maximum=MAX_U32)
    _integer(e, "output_tokens", maximum=MAX_U32)
    _string_map(e, "tags")


def _operator(e: Mapping[str, Any]) -> None:
    for field in ("op_type", "name", "provider"):
        _text(e, field, True)
    _text(e, "model")
    _ms(e, "duration_ms", True)
    _time(e, "ts_ns")
    shapes = e.get("input_shapes")
    if shapes is not None:
        ok = isinstance(shapes, (list, tuple)) and all(
            isinstance(s, (list, tuple)) and all(isinstance(d, int) and not isinstance(d, bool) for d in s)
            for s in shapes)
        if not ok:
            raise EventError("input_shapes", "must be an array of arrays of integers")
        if any(d < 0 for s in shapes for d in s):
            raise EventError("input_shapes", "dimensions must not be negative")
    _string_map(e, "tags")


def _sample(e: Mapping[str, Any]) -> None:
    metric = e.get("metric")
    if not isinstance(metric, str) or not _METRIC.match(metric):
        raise EventError("metric", "must match [a-zA-Z_:][a-zA-Z0-9_:]*")
    _string_map(e, "labels")
    _time(e, "ts_ns")
    value = e.get("value")
    if value is None:
        raise EventError("value", "is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise EventError("value", "must be a number")
    if not math.isfinite(value):
        raise EventError("value", "must be a finite number")


def _run(e: Mapping[str, Any]) -> None:
    _text(e, "name", True)
    command = e.get("command")
    if command is None:  # null reads as absent, as the server reads it
        command = []
    if not isinstance(command, (list, tuple)) or not all(isinstance(a, str) for a in command):
        raise EventError("command", "must be an array of strings")
    if len(command) > 256:
        raise EventError("command", "at most 256 arguments")
    for arg in command:
        if len(arg.encode("utf-8", "surrogatepass")) > MAX_TEXT:
            raise EventError("command", f"is longer than {MAX_TEXT} bytes")
    _text(e, "host")
    pids = e.get("pids")
    if pids is None:
        pids = []
    if not isinstance(pids, (list, tuple)) or len(pids) > 1024 or not all(
            isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in pids):
        raise EventError("pids", "must be at most 1024 positive process ids")
    _time(e, "start_ns")
    _time(e, "end_ns")
    if e.get("end_ns") is not None and e.get("start_ns") is not None and e["end_ns"] < e["start_ns"]:
        raise EventError("end_ns", "is before start_ns")
    _integer(e, "exit_status", minimum=-(2**31))
    if e.get("exit_status") is not None and e["exit_status"] >= 2**31:
        raise EventError("exit_status", "must be a 32-bit integer")
    _text(e, "kinds")
    _integer(e, "records")
    _integer(e, "dropped")
    gpus = e.get("gpus", [])
    if gpus is None:
        gpus = []
    if not isinstance(gpus, (list, tuple)) or len(gpus) > 64 or not all(isinstance(g, str) and g for g in gpus):
        raise EventError("gpus", "must be at most 64 non-empty device names")
    window, every = e.get("trace_window_ns"), e.get("trace_every_ns")
    if (window is None) != (every is None):
        raise EventError("trace_window_ns" if every is not None else "trace_every_ns",
                         "trace_window_ns and trace_every_ns come together")
    if window is not None:
        _integer(e, "trace_window_ns", minimum=1)
        _integer(e, "trace_every_ns", minimum=1)
        if every < window:
            raise EventError("trace_every_ns", "must be at least trace_window_ns")
    _string_map(e, "tags")


_RULES = {
    "kernel": _kernel,
    "memory": _memory,
    "command_buffer": _command_buffer,
    "inference": _inference,
    "operator": _operator,
    "sample": _sample,
    "run": _run,
}


def validate(event: Mapping[str, Any]) -> None:
    """Raises EventError, naming the field, where the server would refuse ``event``."""
    if not isinstance(event, Mapping):
        raise EventError("type", "an event must be an object")
    rule = _RULES.get(event.get("type"))  # type: ignore[arg-type]
    if rule is None:
        raise EventError("type", "must be one of " + ", ".join(_RULES))
    rule(event)
