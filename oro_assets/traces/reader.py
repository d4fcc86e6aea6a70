"""Streaming reader of one firehose partition, with provenance and quarantine.

``<root>/<YYYY-MM-DD>/*.jsonl`` and ``*.jsonl.gz`` (any fsspec URL) are read line by line; nothing
holds more than one line (at most ``max_line_bytes``) in memory. Every physical non-blank line
yields exactly one :class:`RawLine` or :class:`Quarantined`; the unreadable rest of a part yields one
``Quarantined`` (``CORRUPT_FILE``, or ``OVERSIZED_RECORD`` when the decompressed part exceeds
``max_part_bytes``). Blank lines carry no record and are only counted.

``*.parquet`` parts (a day as Hugging Face stores a dataset) are read in batches of
``PARQUET_BATCH_ROWS`` rows (``ParquetFile.iter_batches``, never the whole file); each row is one
record, as a line is. Any other file of the day folder is not read and yields one ``Quarantined``
(``UNSUPPORTED_FILE``), so every file is accounted for; names starting with ``.`` or ``_`` (hidden
files, ``_SUCCESS`` markers) are not part of the day, as in pyarrow's and Spark's dataset discovery.

Provenance: ``line_no`` is 1-based in the decompressed part; ``raw_sha256`` is the sha256 of the
line's exact bytes **without** its terminator (``\\n``, or ``\\r\\n``), i.e.
``hashlib.sha256(line.rstrip(b"\\n").removesuffix(b"\\r")).hexdigest()`` for one line. For a
Parquet row ``line_no`` is the 1-based row number in the file and ``raw_sha256`` the sha256 of the
row's canonical JSON (``jsonio.canonical_bytes``: keys sorted, compact); the record handed on is
that JSON parsed back, so what is hashed is what is normalised.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import os
import posixpath
import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem

from oro_assets import jsonio
from oro_assets.reasons import ReasonCode, Stage
from oro_assets.traces.schema import Provenance, synthetic_trace_id, trace_id_for

MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_PART_BYTES = 2 * 1024 * 1024 * 1024
PARQUET_BATCH_ROWS = 64
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz")
PARQUET_SUFFIX = ".parquet"
_NOT_PART_PREFIXES = (".", "_")
# Without pre-buffering and with a read buffer, a column chunk is read a buffer at a time, not whole
# (a Hugging Face shard is often one row group); pre-buffered chunks would stay alive (storage.py).
_PARQUET_BUFFER = 1 << 20
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_READ_ERRORS = (OSError, EOFError, zlib.error)  # gzip.BadGzipFile is an OSError
_DETAIL_MAX = 500


class PartitionPathError(ValueError):
    """A partition date or file path that is malformed or escapes the firehose root."""


@dataclass(slots=True)
class RawLine:
    provenance: Provenance
    obj: Any
    nbytes: int


@dataclass(slots=True)
class Quarantined:
    """A raw line (or the unreadable rest of a part) set aside, with its ledger reason."""

    trace_id: str
    partition: str
    source_file: str
    line_no: int
    raw_sha256: str | None
    reason: ReasonCode
    detail: str
    stage: Stage = Stage.INGEST
    format: str | None = None

    def to_row(self) -> dict[str, Any]:
        return {"trace_id": self.trace_id, "partition": self.partition, "source_file": self.source_file,
                "line_no": self.line_no, "raw_sha256": self.raw_sha256, "format": self.format,
                "stage": self.stage.value, "reason": self.reason.value, "detail": self.detail[:_DETAIL_MAX]}


def validate_partition(date: str) -> str:
    if not isinstance(date, str) or not _DATE.match(date):
        raise PartitionPathError(f"partition {date!r} is not YYYY-MM-DD")
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        raise PartitionPathError(f"partition {date!r} is not a calendar date") from None
    return date


def iter_partition_files(root: str, date: str) -> list[str]:
    """Every file of the day folder ``<root>/<date>/``, sorted by name, but hidden files and markers
    (names starting with ``.`` or ``_``); sub-folders are not read. ``*.jsonl``, ``*.jsonl.gz`` and
    ``*.parquet`` are read, any other file is refused by the reader (``UNSUPPORTED_FILE``).

    ``date`` must be YYYY-MM-DD; a file (or symlink) resolving outside ``root`` raises
    :class:`PartitionPathError`. A missing day folder gives ``[]``.
    """
    validate_partition(date)
    fs, base = fsspec.core.url_to_fs(root)
    base = base.rstrip("/") or "/"
    day = posixpath.join(base, date)
    if not fs.isdir(day):
        return []
    local = isinstance(fs, LocalFileSystem)
    real_root = os.path.realpath(base) if local else posixpath.normpath(base)
    out: list[str] = []
    for entry in fs.ls(day, detail=True):
        name = entry["name"]
        if entry.get("type") != "file" and not (local and os.path.islink(name)):
            continue
        if posixpath.basename(name).startswith(_NOT_PART_PREFIXES):
            continue
        resolved = os.path.realpath(name) if local else posixpath.normpath(name)
        if not resolved.startswith(real_root.rstrip("/") + "/"):
            raise PartitionPathError(f"{name} resolves outside the firehose root {root}")
        out.append(name if local else fs.unstrip_protocol(name))
    return sorted(out)


def _detail(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:_DETAIL_MAX]


_LINE, _LONG, _ERROR, _PART_TOO_BIG = range(4)
_CHUNK = 1 << 20


def _physical_lines(stream: Any, max_line: int, max_part: int) -> Iterator[tuple]:
    """Split a byte stream into lines without terminators, reading 1 MiB chunks.

    Events: ``(_LINE, bytes)``, ``(_LONG, sha256 hexdigest, size)`` for a line over ``max_line``
    (hashed while skipped, never held whole), ``(_ERROR, exc)`` when the stream fails (the partial
    line is lost with the rest), ``(_PART_TOO_BIG,)`` when ``max_part`` decompressed bytes are exceeded.
    Buffered ``readline`` is several times slower on 10-30 KB lines, hence the manual split.
    """
    pending = bytearray()
    skipping: Any = None  # hashlib object while inside an oversized line
    skipped = 0
    held = b""  # a skipped line's trailing b"\r", hashed only once more of the line follows it
    total = 0
    # read1 returns what one underlying read decoded, so a gzip part that breaks mid-way still
    # delivers every line decoded before the break (read(n) would drop the whole chunk).
    read = getattr(stream, "read1", stream.read)
    while True:
        try:
            chunk = read(_CHUNK)
        except _READ_ERRORS as exc:
            yield (_ERROR, exc)
            return
        if not chunk:
            break
        total += len(chunk)
        if total > max_part:
            yield (_PART_TOO_BIG,)
            return
        start, n = 0, len(chunk)
        while start < n:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                tail = chunk[start:]
                if skipping is None:
                    pending += tail
                    if _content_len(pending) <= max_line:
                        break
                    skipping, skipped, tail, pending = hashlib.sha256(), 0, bytes(pending), bytearray()
                # the line's hash excludes a CRLF's "\r", which may end this chunk
                data = held + tail
                held = b"\r" if data.endswith(b"\r") else b""
                skipping.update(data[:-1] if held else data)
                skipped += len(tail)
                break
            piece = chunk[start:nl]
            start = nl + 1
            if skipping is not None:
                skipping.update((held + piece).removesuffix(b"\r"))
                yield (_LONG, skipping.hexdigest(), skipped + len(piece))
                skipping, held = None, b""
            elif pending:
                pending += piece
                if _content_len(pending) > max_line:
                    yield (_LONG, hashlib.sha256(pending.removesuffix(b"\r")).hexdigest(), len(pending))
                else:
                    yield (_LINE, bytes(pending))
                pending = bytearray()
            elif _content_len(piece) > max_line:
                yield (_LONG, hashlib.sha256(piece.removesuffix(b"\r")).hexdigest(), len(piece))
            else:
                yield (_LINE, piece)
    if skipping is not None:
        yield (_LONG, skipping.hexdigest(), skipped)
    elif pending:
        yield (_LINE, bytes(pending))


def _content_len(line: bytes | bytearray) -> int:
    """A line's size without a CRLF's "\r": the record limit is on the record, not its terminator."""
    return len(line) - 1 if line.endswith(b"\r") else len(line)


def duplicate_entry(partition: str, path: str, line_no: int, sha: str, n: int) -> Quarantined:
    """The ledger entry of the ``n``-th repeat of an earlier line's bytes in the same partition."""
    return Quarantined(trace_id=f"{trace_id_for(sha)}_dup{n}", partition=partition, source_file=path,
                       line_no=line_no, raw_sha256=sha, reason=ReasonCode.DUPLICATE_RECORD,
                       detail=f"byte-identical to an earlier line of this partition ({trace_id_for(sha)})")


class DigestSet:
    """A set of 16-byte keys (digest prefixes) at ~16 bytes a key; a Python ``set[bytes]`` costs ~90.

    New keys go to a small Python set; every ``spill`` keys they move into two numpy arrays (high
    and low 8 bytes) sorted by the high half and searched with ``searchsorted``. Membership is
    exact (both halves compared), so it behaves as a set of the full 16 bytes.
    """

    def __init__(self, spill: int = 1 << 15) -> None:
        self._recent: set[bytes] = set()
        self._hi = np.empty(0, dtype=np.uint64)
        self._lo = np.empty(0, dtype=np.uint64)
        self._spill = spill

    def __len__(self) -> int:
        return len(self._recent) + len(self._hi)

    def __contains__(self, key: bytes) -> bool:
        if key in self._recent:
            return True
        n = len(self._hi)
        if not n:
            return False
        hi = np.uint64(int.from_bytes(key[:8], "big"))
        lo = np.uint64(int.from_bytes(key[8:16], "big"))
        i = int(np.searchsorted(self._hi, hi))
        while i < n and self._hi[i] == hi:  # equal high halves: compare every low half
            if self._lo[i] == lo:
                return True
            i += 1
        return False

    def add(self, key: bytes) -> None:
        """Add a key that is not yet in the set (callers test membership first)."""
        if len(key) != 16:
            raise ValueError("DigestSet keys are 16 bytes")
        self._recent.add(key)
        if len(self._recent) >= self._spill:
            self._merge()

    def _merge(self) -> None:
        pairs = np.frombuffer(b"".join(self._recent), dtype=">u8").reshape(-1, 2).astype(np.uint64)
        hi = np.concatenate([self._hi, pairs[:, 0]])
        lo = np.concatenate([self._lo, pairs[:, 1]])
        order = np.argsort(hi, kind="stable")
        self._hi, self._lo = hi[order], lo[order]
        self._recent = set()


class _PartReader:
    """State of one partition read: duplicate detection spans all its files."""

    def __init__(self, partition: str, max_line_bytes: int, max_part_bytes: int, dedupe: bool = True) -> None:
        self.partition = partition
        self.dedupe = dedupe
        self.max_line = max_line_bytes
        self.max_part = max_part_bytes
        # 16-byte digest prefixes (2^-128 collision odds), stored compactly: a day's set stays small.
        self.seen = DigestSet()
        self.dup_counts: dict[bytes, int] = {}
        self.blank_lines = 0
        self.bytes_read = 0

    def _rest(self, path: str, line_no: int, reason: ReasonCode, detail: str) -> Quarantined:
        return Quarantined(trace_id=synthetic_trace_id(reason.value, self.partition, path, line_no),
                           partition=self.partition, source_file=path, line_no=line_no, raw_sha256=None,
                           reason=reason, detail=detail)

    def read_file(self, path: str) -> Iterator[RawLine | Quarantined]:
        if not path.endswith((*JSONL_SUFFIXES, PARQUET_SUFFIX)):
            yield self._rest(path, 1, ReasonCode.UNSUPPORTED_FILE,
                             f"not a part file ({', '.join((*JSONL_SUFFIXES, PARQUET_SUFFIX))}); not read")
            return
        try:
            fh = fsspec.open(path, "rb").open()
        except _READ_ERRORS as exc:
            yield self._rest(path, 1, ReasonCode.CORRUPT_FILE, f"cannot open part: {_detail(exc)}")
            return
        if path.endswith(PARQUET_SUFFIX):
            with fh:
                yield from self._parquet(fh, path)
            return
        with fh:
            try:
                magic = fh.read(2)
                fh.seek(0)
            except _READ_ERRORS as exc:
                yield self._rest(path, 1, ReasonCode.CORRUPT_FILE, f"cannot read part: {_detail(exc)}")
                return
            if not magic:
                return
            if path.endswith(".gz") and magic != _GZIP_MAGIC:
                yield self._rest(path, 1, ReasonCode.CORRUPT_FILE, "named .gz but is not gzip data")
                return
            stream = gzip.GzipFile(fileobj=fh, mode="rb") if magic == _GZIP_MAGIC else fh
            yield from self._records(path, stream)

    def _records(self, path: str, stream: Any) -> Iterator[RawLine | Quarantined]:
        partition = self.partition
        seen = self.seen
        line_no = 0
        for event in _physical_lines(stream, self.max_line, self.max_part):
            kind = event[0]
            if kind == _LINE:
                body = event[1]
                line_no += 1
                self.bytes_read += len(body) + 1
                if body.endswith(b"\r"):
                    body = body[:-1]
                if not body or body.isspace() or (  # as `not body.strip()`, without copying the line
                        line_no == 1 and body.startswith(_BOM) and (len(body) == 3 or body[3:].isspace())):
                    self.blank_lines += 1
                    continue
                digest = hashlib.sha256(body).digest()
                sha = digest.hex()
                key = digest[:16]
                if key in seen:
                    yield self._repeat(key, path, line_no, sha)
                    continue
                if self.dedupe:
                    seen.add(key)
                prov = Provenance(path, line_no, partition, sha)
                try:
                    obj = jsonio.loads(body[3:] if line_no == 1 and body.startswith(_BOM) else body)
                except jsonio.JSONDecodeError as exc:
                    yield self._bad_json(prov, body, exc)
                    continue
                yield RawLine(prov, obj, len(body))
            elif kind == _LONG:
                line_no += 1
                self.bytes_read += event[2] + 1
                sha = event[1]
                key = bytes.fromhex(sha)[:16]
                if key in seen:
                    yield self._repeat(key, path, line_no, sha)
                    continue
                if self.dedupe:
                    seen.add(key)
                yield Quarantined(trace_id=trace_id_for(sha), partition=partition, source_file=path,
                                  line_no=line_no, raw_sha256=sha, reason=ReasonCode.OVERSIZED_RECORD,
                                  detail=f"line of {event[2]} bytes exceeds the {self.max_line}-byte record limit")
            elif kind == _ERROR:
                yield self._rest(path, line_no + 1, ReasonCode.CORRUPT_FILE,
                                 f"part unreadable from line {line_no + 1} on: {_detail(event[1])}")
            else:
                yield self._rest(path, line_no + 1, ReasonCode.OVERSIZED_RECORD,
                                 f"decompressed part exceeds {self.max_part} bytes; not read from line {line_no + 1} on")

    def _parquet(self, fh: Any, path: str) -> Iterator[RawLine | Quarantined]:
        """One record per row, read ``PARQUET_BATCH_ROWS`` rows at a time."""
        try:
            pf = pq.ParquetFile(fh, pre_buffer=False, buffer_size=_PARQUET_BUFFER)
            groups = [pf.metadata.row_group(i).total_byte_size for i in range(pf.metadata.num_row_groups)]
        except (*_READ_ERRORS, pa.ArrowException) as exc:
            yield self._rest(path, 1, ReasonCode.CORRUPT_FILE, f"not a readable Parquet file: {_detail(exc)}")
            return
        row_no = 0
        done_bytes = 0
        for g, size in enumerate(groups):
            done_bytes += size
            if done_bytes > self.max_part:
                yield self._rest(path, row_no + 1, ReasonCode.OVERSIZED_RECORD,
                                 f"Parquet data exceeds {self.max_part} bytes uncompressed; "
                                 f"not read from row {row_no + 1} on")
                return
            batches = pf.iter_batches(batch_size=PARQUET_BATCH_ROWS, row_groups=[g], use_threads=False)
            while True:
                try:
                    batch = next(batches, None)
                except (*_READ_ERRORS, pa.ArrowException) as exc:
                    yield self._rest(path, row_no + 1, ReasonCode.CORRUPT_FILE,
                                     f"Parquet part unreadable from row {row_no + 1} on: {_detail(exc)}")
                    return
                if batch is None:
                    break
                for obj in batch.to_pylist():
                    row_no += 1
                    yield self._parquet_row(path, row_no, obj)

    def _parquet_row(self, path: str, row_no: int, obj: dict) -> RawLine | Quarantined:
        try:
            body = jsonio.canonical_bytes(obj)
        except jsonio.JSONEncodeError as exc:  # e.g. a decimal or binary column
            return self._rest(path, row_no, ReasonCode.SCHEMA_VIOLATION,
                              f"row {row_no} holds a value JSON cannot encode: {_detail(exc)}")
        self.bytes_read += len(body)
        sha = hashlib.sha256(body).hexdigest()
        key = bytes.fromhex(sha)[:16]
        if key in self.seen:
            return self._repeat(key, path, row_no, sha)
        if self.dedupe:
            self.seen.add(key)
        if len(body) > self.max_line:
            return Quarantined(trace_id=trace_id_for(sha), partition=self.partition, source_file=path,
                               line_no=row_no, raw_sha256=sha, reason=ReasonCode.OVERSIZED_RECORD,
                               detail=f"row of {len(body)} bytes of JSON exceeds the {self.max_line}-byte record limit")
        return RawLine(Provenance(path, row_no, self.partition, sha), jsonio.loads(body), len(body))

    def _repeat(self, key: bytes, path: str, line_no: int, sha: str) -> Quarantined:
        n = self.dup_counts.get(key, 0) + 1
        self.dup_counts[key] = n
        return duplicate_entry(self.partition, path, line_no, sha, n)

    def _bad_json(self, prov: Provenance, body: bytes, exc: Exception) -> Quarantined:
        try:
            body.decode("utf-8")
            reason, detail = ReasonCode.MALFORMED_JSON, f"not valid JSON: {exc}"
        except UnicodeDecodeError as uexc:
            reason, detail = ReasonCode.INVALID_ENCODING, f"not valid UTF-8: {uexc}"
        return Quarantined(trace_id=trace_id_for(prov.raw_sha256), partition=prov.partition,
                           source_file=prov.source_file, line_no=prov.line_no, raw_sha256=prov.raw_sha256,
                           reason=reason, detail=detail)


class RecordReader:
    """Iterates a partition's records; after iteration exposes ``blank_lines`` and ``bytes_read``."""

    def __init__(self, files: Iterable[str], *, partition: str, max_line_bytes: int = MAX_LINE_BYTES,
                 max_part_bytes: int = MAX_PART_BYTES, dedupe: bool = True) -> None:
        self.files = list(files)
        self._state = _PartReader(validate_partition(partition), max_line_bytes, max_part_bytes, dedupe)

    def __iter__(self) -> Iterator[RawLine | Quarantined]:
        for path in self.files:
            yield from self._state.read_file(path)

    @property
    def blank_lines(self) -> int:
        return self._state.blank_lines

    @property
    def bytes_read(self) -> int:
        return self._state.bytes_read


def read_records(files: Iterable[str], *, partition: str, max_line_bytes: int = MAX_LINE_BYTES,
                 max_part_bytes: int = MAX_PART_BYTES) -> Iterator[RawLine | Quarantined]:
    """One :class:`RawLine` or :class:`Quarantined` per non-blank line of ``files``, in file order."""
    return iter(RecordReader(files, partition=partition, max_line_bytes=max_line_bytes,
                             max_part_bytes=max_part_bytes))
