"""Versions of code: what an asset's ``code_version`` and a training checkpoint's version hash.

A version covers the source of an object's module and of every module of the same top-level package
it imports (transitively), so editing a helper, however indirectly called, changes it.
"""

import ast
import functools
import hashlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any

# Dagster wiring: an asset's version follows the domain code it runs, not the wiring modules around it
# (except the module of an object passed to code_version itself).
_WIRING_PACKAGE = "defs"


def code_version(*objs: Any) -> str:
    """Version of the code an asset runs: changing it marks the asset stale.

    It hashes, for each function (or class, module) given, the whole source of its module and of every
    module of the same top-level package (``oro_assets``) that module imports, transitively - also the
    imports inside functions, and the packages' ``__init__`` files - so an edit to a helper the function
    calls, however indirectly, changes the version. Modules of ``oro_assets.defs`` (Dagster wiring) are
    only followed when an object given lives there. Other values (SQL text, constants) are hashed by
    ``repr``. The version depends on the sources' bytes and module names only, not on paths or the clock.
    """
    digest = hashlib.sha256()
    roots: set[str] = set()
    for obj in objs:
        target, module = _code_module(obj)
        if module is not None:
            roots.add(module)
            digest.update(f"obj {module}:{getattr(target, '__qualname__', '')}\n".encode())
            continue
        try:
            digest.update(inspect.getsource(target).encode())
        except (OSError, TypeError):
            digest.update(repr(obj).encode())
    for name in sorted(_closure(roots)):
        digest.update(f"module {name} {_source_digest(name)}\n".encode())
    return digest.hexdigest()[:12]


def module_version(*names: str) -> str:
    """Version of modules ``names`` (dotted names of package modules on disk) without importing them: the same
    hash :func:`code_version` gives the module objects. How a training stage is versioned by its module alone."""
    digest = hashlib.sha256()
    for name in names:
        if _module_file(name) is None:
            raise ValueError(f"{name!r} is not a module of an importable package")
        digest.update(f"obj {name}:\n".encode())
    for module in sorted(_closure(set(names))):
        digest.update(f"module {module} {_source_digest(module)}\n".encode())
    return digest.hexdigest()[:12]


def code_modules(*objs: Any) -> list[str]:
    """The modules :func:`code_version` hashes for ``objs`` (to see why a version changed)."""
    return sorted(_closure({module for obj in objs if (module := _code_module(obj)[1]) is not None}))


def _code_module(obj: Any) -> tuple[Any, str | None]:
    """(the code object behind ``obj``, the name of its module when that is a package module on disk).

    Only code (functions, methods, classes, modules) is versioned by module; a value is versioned by itself."""
    target = _unwrap(obj)
    if not (inspect.isroutine(target) or inspect.isclass(target) or inspect.ismodule(target)):
        return target, None
    module = target if inspect.ismodule(target) else inspect.getmodule(target)
    if module is None or _module_file(module.__name__) is None:
        return target, None
    return target, module.__name__


def _unwrap(obj: Any) -> Any:
    while isinstance(obj, functools.partial):
        obj = obj.func
    try:
        return inspect.unwrap(obj)
    except (ValueError, TypeError):
        return obj


def _closure(roots: set[str]) -> set[str]:
    """``roots``, the package modules they import (transitively) and the packages above each of them."""
    seen: set[str] = set()
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # importing a.b.c runs a and a.b first
        for imported in _imports(name):
            if imported not in roots and imported.split(".")[1:2] == [_WIRING_PACKAGE]:
                continue
            todo.append(imported)
    return {name for name in seen if _module_file(name) is not None}


def _source_digest(name: str) -> str:
    path = _module_file(name)
    return hashlib.sha256(path.read_bytes()).hexdigest() if path is not None else "-"


def _imports(name: str) -> list[str]:
    """Modules of ``name``'s own top-level package that ``name`` imports, anywhere in its source."""
    path = _module_file(name)
    if path is None:
        return []
    return list(_parse_imports(name, path.name == "__init__.py", path.read_bytes()))


# An import statement at any indentation: ``import a.b, c`` or ``from .x import (y, z)`` (parenthesised lists
# may span lines). Only these snippets are parsed, not the whole module: ~30x cheaper than walking its AST.
_IMPORT_STATEMENT = re.compile(
    rb"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*(?:\([^)]*\)|(?:[^\n\\]|\\\n)*)|import[ \t]+(?:[^\n\\]|\\\n)*)",
    re.M,
)


def _import_nodes(source: bytes) -> list[ast.AST]:
    nodes: list[ast.AST] = []
    for match in _IMPORT_STATEMENT.finditer(source):
        try:
            nodes += ast.parse(match.group(0).strip()).body
        except (SyntaxError, ValueError):  # an "import" line inside a string, say
            continue
    return nodes


@functools.lru_cache(maxsize=4096)
def _parse_imports(name: str, is_package: bool, source: bytes) -> tuple[str, ...]:
    """Cached per module and source: a module is parsed again only after its file changed."""
    top = name.split(".")[0]
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _import_nodes(source):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)] if node.level > 1 else base_parts
                base = ".".join(p for p in [*base_parts, node.module or ""] if p)
            else:
                base = node.module or ""
            candidates = [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
        else:
            continue
        for candidate in candidates:
            if candidate.split(".")[0] == top and _module_file(candidate) is not None:
                found.add(candidate)
    return tuple(sorted(found))


def _module_file(name: str) -> Path | None:
    """The source file of module ``name`` when it belongs to an importable top-level package (else None),
    found on disk from the package's location: nothing is imported."""
    top, _, rest = name.partition(".")
    root = _package_root(top)
    if root is None:
        return None
    base = root.joinpath(*rest.split(".")) if rest else root
    for path in (base / "__init__.py", base.with_suffix(".py")) if rest else (base / "__init__.py",):
        if path.is_file():
            return path
    return None


def _package_root(top: str) -> Path | None:
    module = sys.modules.get(top)
    locations = list(getattr(module, "__path__", None) or [])
    if not locations:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return None
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
    return Path(locations[0]) if locations else None
