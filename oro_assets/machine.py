"""What machine ran a training stage or a benchmark, precisely enough to tell two machines apart.

``/proc/cpuinfo``'s model name alone does not: this project's 2-core boxes all read "AMD EPYC", yet some are Zen 3
(family 25, model 1: AVX2) and some Zen 4 (family 25, model 17: AVX-512 with bf16). torch picks its CPU kernels by
that instruction set, and a chain trained on one trains other weights than on the other (float rounding; session 38),
as fast as a training seed moves them, and the same main command took 26 and 18 minutes on the two (sessions 40, 41).
So a checkpoint records the machine that trained it, and a benchmark the machine it measured.
"""

from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any

CPUINFO = Path("/proc/cpuinfo")
#: the instruction-set flags that decide which kernels torch, oneDNN and orjson run (x86)
VECTOR_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16")


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """The first processor's identity in ``/proc/cpuinfo`` text: model name, vendor, family, model, stepping and the
    vector flags of :data:`VECTOR_FLAGS` it has (x86; on other CPUs the keys it lacks are None)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break  # the first processor's block is enough: a machine's cores are alike
            continue
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    flags = set(fields.get("flags", "").split())
    return {
        "cpu": fields.get("model name") or fields.get("Model") or fields.get("Hardware"),
        "vendor": fields.get("vendor_id") or fields.get("CPU implementer"),
        "family": _int(fields.get("cpu family")),
        "model": _int(fields.get("model")),
        "stepping": _int(fields.get("stepping")),
        "vector_flags": [f for f in VECTOR_FLAGS if f in flags],
    }


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def machine_signature(*, with_torch: bool = True, cpuinfo: str | None = None) -> dict[str, Any]:
    """This machine: the CPU (:func:`parse_cpuinfo`), its cores, Python, and with ``with_torch`` the torch build, the
    CPU kernels torch dispatches to (``AVX2``, ``AVX512``, ...), its intra-op threads and the CUDA device, if any.
    ``cpuinfo``: the text to read instead of ``/proc/cpuinfo``."""
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO.read_text()
        except OSError:
            cpuinfo = ""
    out: dict[str, Any] = parse_cpuinfo(cpuinfo)
    if out["cpu"] is None:
        out["cpu"] = platform.processor() or None
    out.update({"cores": os.cpu_count(), "python": platform.python_version()})
    if with_torch:
        out.update(torch_signature())
    out["key"] = machine_key(out)
    return out


def torch_signature() -> dict[str, Any]:
    """torch's version, CPU kernel level, intra-op threads and CUDA device name (None without CUDA); empty when torch
    cannot be imported."""
    try:
        import torch
    except ImportError:
        return {}
    cuda = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {"torch": torch.__version__, "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "torch_threads": torch.get_num_threads(), "cuda_device": cuda}


def machine_key(sig: dict[str, Any]) -> str:
    """A one-line name of :func:`machine_signature`'s machine, equal for machines that run the same kernels: e.g.
    ``AMD EPYC, family 25 model 1, avx2`` (the widest vector flag), ``+ NVIDIA H100`` with a CUDA device."""
    parts = [str(sig.get("cpu") or "unknown CPU")]
    if sig.get("family") is not None:
        parts.append(f"family {sig['family']} model {sig.get('model')}")
    flags = sig.get("vector_flags") or []
    widest = [f for f in flags if f.startswith(("avx512", "amx"))] or flags[-1:]
    if widest:
        parts.append(" ".join(widest))
    key = ", ".join(parts)
    return f"{key} + {sig['cuda_device']}" if sig.get("cuda_device") else key


def main() -> int:
    """``python -m oro_assets.machine``: print this machine's signature as JSON."""
    from oro_assets import jsonio

    sys.stdout.write(jsonio.dumps_pretty(machine_signature()) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
