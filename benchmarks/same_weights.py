"""Whether two checkpoints' model weights are bit-identical: their ``model/*.safetensors`` compared tensor by tensor.

    .venv/bin/python benchmarks/same_weights.py CHECKPOINT_A CHECKPOINT_B

Exit status 0 when every tensor is equal (same names, shapes and values), 1 otherwise.
"""

from __future__ import annotations

import sys
from pathlib import Path


def differing(a: Path, b: Path) -> tuple[int, list[str]]:
    """(tensors in ``a``, names of those missing from ``b`` or differing in shape or value; extra names of ``b``)."""
    from safetensors.numpy import load_file

    ta, tb = (load_file(str(next(Path(p, "model").glob("*.safetensors")))) for p in (a, b))
    diff = [k for k in ta if k not in tb or ta[k].shape != tb[k].shape or (ta[k] != tb[k]).any()]
    return len(ta), diff + sorted(set(tb) - set(ta))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    n, diff = differing(Path(args[0]), Path(args[1]))
    print(f"{n} tensors, {len(diff)} differ" + (f": {', '.join(diff[:5])}" if diff else ""))
    return 1 if diff else 0


if __name__ == "__main__":
    raise SystemExit(main())
