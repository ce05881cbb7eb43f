"""Images inside parquet / arrow shards: how the Hugging Face hub usually stores an image
dataset (the `datasets` library's Image feature, a column of structs `{bytes, path}`).

Each image row becomes a virtual file named by its `path`, so chains are found among rows
exactly as among loose files (`listing.chains_in`): `chain_07/012.png` in any shard is
frame 12 of chain `chain_07`, even when a chain's rows are split over two shards. A path with
no folder is placed in a folder named after its shard (`data/train-00000`), so a shard of bare
file names is one chain; a row with no path is skipped. A row is referred to as `SHARD#ROW`.

Reading is bounded, with the same limits as every other source (`frames.py`):
- a parquet footer's declared length is checked before it is parsed; listing reads only the
  image column's `path` child (a few bytes a row);
- an image's bytes are read one row group at a time, and only for row groups holding a wanted
  row; the column chunk's size is checked and reserved from the memory budget first;
- an arrow file (IPC file or stream, as `datasets.save_to_disk` writes) is memory-mapped, so
  its bytes are paged in as read, never copied whole;
- each image is at most `MAX_MEMBER_BYTES` and is decoded by `load_image` (pixel limits).

Extracted images are written to a cache folder, once, and decoded from there on demand.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from ..budget import BUDGET, size_text
from ..files import write_atomic
from .frames import MAX_MEMBER_BYTES, SHARD_SUFFIXES, Frames, is_image_name
from .images import BadImage, load_image
from .listing import ChainFormat, chains_in

ROW_MARK = "#"
MAX_FOOTER_BYTES = 64 * 2**20  # a footer of a few thousand row groups is a few MB
MAX_PATHS_BYTES = 256 * 2**20  # the `path` column of one row group, uncompressed
MAX_ROW_GROUP_BYTES = 4 * 2**30  # one row group's image bytes, uncompressed



class ShardSource(Protocol):
    """Where shards are read from: a local folder, or a dataset on the hub (`hub.py`)."""

    def open(self, shard: str) -> AbstractContextManager[Any]:
        """A seekable binary file pyarrow can read."""

    def cache(self, shard: str) -> Path:
        """The folder for this shard's extracted rows, keyed by the shard's version."""


class LocalShards:
    """Shards in a local folder, memory-mapped; rows extracted under the temporary folder,
    keyed by each shard's path, size and modification time."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def open(self, shard: str) -> AbstractContextManager[Any]:
        import pyarrow as pa

        return pa.memory_map(str(self.root / shard))

    def cache(self, shard: str) -> Path:
        import tempfile

        path = (self.root / shard).resolve()
        stat = path.stat()
        return Path(tempfile.gettempdir()) / "banana-space-rows" / _key(
            f"{path}|{stat.st_size}|{stat.st_mtime_ns}")


def _key(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:20]


def is_shard_name(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in SHARD_SUFFIXES


def row_ref(shard: str, row: int) -> str:
    return f"{shard}{ROW_MARK}{row}"


def split_ref(ref: str) -> tuple[str, int]:
    shard, _, row = ref.rpartition(ROW_MARK)
    return shard, int(row)


def image_column(schema: Any) -> str:
    """The first column of `{bytes, path}` structs (the Image feature), or a clear refusal."""
    import pyarrow as pa

    for field in schema:
        if pa.types.is_struct(field.type) and {"bytes", "path"} <= {
                field.type.field(i).name for i in range(field.type.num_fields)}:
            return field.name
    raise BadImage("holds no image column (a column of {bytes, path}, as the datasets "
                   "library's Image feature writes it)")


def _parquet(handle: Any, name: str) -> Any:
    """The shard's reader, its footer read exactly (its declared length checked first): not
    pyarrow's speculative 64 KB, which on the hub would be 64 KB of someone's images."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    if size < 12:
        raise BadImage(f"{name} is not a parquet file ({size} bytes)")
    handle.seek(size - 8)
    tail = handle.read(8)
    footer, magic = struct.unpack("<I4s", tail)
    if magic != b"PAR1" or footer > min(MAX_FOOTER_BYTES, size - 12):
        raise BadImage(f"{name}: not a parquet file, or its footer declares {footer:,} bytes "
                       f"(the limit is {MAX_FOOTER_BYTES // 2**20} MB)")
    handle.seek(size - 8 - footer)
    metadata = pq.read_metadata(pa.BufferReader(b"PAR1" + handle.read(footer) + tail))
    return pq.ParquetFile(handle, metadata=metadata)


def _chunk_bytes(meta: Any, group: int, column: str, stored: bool = False) -> int:
    """A column chunk's size in a row group, uncompressed (or as stored)."""
    chunks = meta.row_group(group)
    return sum(chunk.total_compressed_size if stored else chunk.total_uncompressed_size
               for chunk in map(chunks.column, range(chunks.num_columns))
               if chunk.path_in_schema == column)


def _parquet_paths(handle: Any, name: str) -> Iterator[tuple[str | None, int]]:
    """(path, approximate size) of each row: sizes are the row group's compressed image
    bytes shared out evenly (exact sizes would mean reading every image)."""
    shard = _parquet(handle, name)
    column = image_column(shard.schema_arrow)
    for group in range(shard.metadata.num_row_groups):
        if _chunk_bytes(shard.metadata, group, f"{column}.path") > MAX_PATHS_BYTES:
            raise BadImage(f"{name}: the image paths of row group {group} exceed "
                           f"{MAX_PATHS_BYTES // 2**20} MB")
        rows = shard.metadata.row_group(group).num_rows
        stored = _chunk_bytes(shard.metadata, group, f"{column}.bytes", stored=True)
        paths = shard.read_row_group(group, columns=[f"{column}.path"]).column(column)
        for path in paths.combine_chunks().field("path").to_pylist():
            yield path, stored // max(rows, 1)


def _arrow_batches(handle: Any) -> Iterator[Any]:
    import pyarrow as pa

    try:
        reader = pa.ipc.open_file(handle)
        yield from (reader.get_batch(i) for i in range(reader.num_record_batches))
    except pa.ArrowInvalid:
        handle.seek(0)
        yield from pa.ipc.open_stream(handle)


def _arrow_paths(handle: Any, name: str) -> Iterator[tuple[str | None, int]]:
    import pyarrow.compute as pc

    for batch in _arrow_batches(handle):
        images = batch.column(image_column(batch.schema))
        sizes = pc.binary_length(images.field("bytes")).fill_null(0).to_pylist()
        yield from zip(images.field("path").to_pylist(), sizes, strict=True)


def row_paths(shard: str, handle: Any) -> Iterator[tuple[str | None, int]]:
    """(image path or None, size in bytes) of each row of one shard, in row order."""
    import pyarrow as pa

    try:
        if shard.lower().endswith(".parquet"):
            yield from _parquet_paths(handle, shard)
        else:
            yield from _arrow_paths(handle, shard)
    except (pa.ArrowException, OSError) as error:
        raise BadImage(f"{shard} could not be read as a shard ({error})") from None
    except BadImage as error:
        raise BadImage(f"{shard}: {error}" if shard not in str(error) else str(error)) from None


def virtual_path(shard: str, path: str) -> str:
    """A row's path as a file name inside its dataset: never absolute, never `..`; a bare
    file name goes in a folder named after its shard."""
    parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in ("/", ".", "..")]
    if len(parts) < 2:
        parts = [str(PurePosixPath(shard).with_suffix("")), *parts[-1:]]
    return "/".join(parts)


def expand_shards(listing: Sequence[tuple[str, int]], shards: ShardSource
                  ) -> tuple[list[tuple[str, int]], dict[str, str]]:
    """The listing with each shard replaced by its image rows as virtual files; and the row
    reference of each virtual file. A name two rows share gets `~2`, `~3` … before its suffix."""
    listing = list(listing)
    plain = [(n, s) for n, s in listing if not is_shard_name(n)]
    refs: dict[str, str] = {}
    taken = {n for n, _ in plain}
    for shard in sorted(n for n, _ in listing if is_shard_name(n)):
        with shards.open(shard) as handle:
            for row, (path, size) in enumerate(row_paths(shard, handle)):
                if not path or not is_image_name(path):
                    continue
                name, count = virtual_path(shard, path), 1
                while name in taken:
                    count += 1
                    posix = PurePosixPath(virtual_path(shard, path))
                    name = str(posix.with_name(f"{posix.stem}~{count}{posix.suffix}"))
                taken.add(name)
                refs[name] = row_ref(shard, row)
                plain.append((name, size))
    return plain, refs


def _cached(shards: ShardSource, ref: str) -> Path:
    shard, row = split_ref(ref)
    return shards.cache(shard) / str(row)


def _parquet_rows(handle: Any, shard: str, rows: set[int]) -> Iterator[tuple[int, bytes]]:
    parquet = _parquet(handle, shard)
    column = image_column(parquet.schema_arrow)
    first = 0
    for group in range(parquet.metadata.num_row_groups):
        count = parquet.metadata.row_group(group).num_rows
        wanted = sorted(r - first for r in rows if first <= r < first + count)
        first += count
        if not wanted:
            continue
        size = _chunk_bytes(parquet.metadata, group, f"{column}.bytes")
        if size > MAX_ROW_GROUP_BYTES or not BUDGET.fits(size):
            raise BadImage(f"{shard}: row group {group} holds {size_text(size)} of images; at "
                           f"most {size_text(min(MAX_ROW_GROUP_BYTES, BUDGET.capacity))} is "
                           "read at once")
        with BUDGET.request(size):
            images = parquet.read_row_group(group, columns=[f"{column}.bytes"]).column(column)
            data = images.combine_chunks().field("bytes")
            for index in wanted:
                yield first - count + index, data[index].as_py() or b""


def _arrow_rows(handle: Any, rows: set[int]) -> Iterator[tuple[int, bytes]]:
    first = 0
    for batch in _arrow_batches(handle):
        images = batch.column(image_column(batch.schema)).field("bytes")
        for row in sorted(r for r in rows if first <= r < first + batch.num_rows):
            yield row, images[row - first].as_py() or b""
        first += batch.num_rows


def read_rows(refs: Sequence[str], shards: ShardSource) -> dict[str, Path]:
    """Each referenced row's image bytes as a file in its shard's cache (extracted once)."""
    files = {ref: _cached(shards, ref) for ref in refs}
    missing: dict[str, set[int]] = defaultdict(set)
    for ref, path in files.items():
        if not path.is_file():
            shard, row = split_ref(ref)
            missing[shard].add(row)
    for shard, rows in missing.items():
        found = set()
        with shards.open(shard) as handle:
            reader = (_parquet_rows(handle, shard, rows) if shard.lower().endswith(".parquet")
                      else _arrow_rows(handle, rows))
            for row, data in reader:
                if len(data) > MAX_MEMBER_BYTES:
                    raise BadImage(f"{row_ref(shard, row)} is {size_text(len(data))}; the limit "
                                   f"per image is {size_text(MAX_MEMBER_BYTES)}")
                target = _cached(shards, row_ref(shard, row))
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(target, data)
                found.add(row)
        if rows - found:
            raise BadImage(f"{shard} has no row {min(rows - found)}")
    return files


def chain_rows(listing: Sequence[tuple[str, int]], shards: ShardSource, source: str,
               names: Sequence[str] = ()) -> dict[str, str]:
    """The rows of one chain among shards, found by the same rule as among loose files.

    Args:
        listing: (path, size) of files; the shards among them are read.
        shards: where the shards are read from (local or the hub).
        source: what the chain is called in messages.
        names: the chain's possible paths in the rows; empty: the shards hold one chain.

    Returns:
        Each of the chain's rows by its path (path -> SHARD#ROW), in natural order; the steps
        are read from the paths (`chain_layout`).

    Raises:
        BadImage: no such chain, or several where one was expected.
    """
    rows, refs = expand_shards([(n, s) for n, s in listing if is_shard_name(n)], shards)
    chains = [c for c in chains_in(rows)
              if c.kind == ChainFormat.FOLDER and (not names or c.path in names)]
    if len(chains) != 1:
        shown = ", ".join(c.path for c in chains[:5]) + (" …" if len(chains) > 5 else "")
        raise BadImage(f"no chain called {source} in the shards' rows" if not chains else
                       f"{source} holds {len(chains)} chains ({shown}): add one's name")
    return {name: refs[name] for name in chains[0].files}


def frames_in_local_shards(path: Path, chain: str = "") -> Frames:
    """The one chain in a local shard or folder of shards, or the chain at path `chain` in
    their rows (`FOLDER/chain_07`), each frame named by its row's path."""
    root, listing = (path.parent, [(path.name, 0)]) if path.is_file() else (path, [
        (str(p.relative_to(path)), 0) for p in sorted(path.rglob("*")) if is_shard_name(p.name)])
    label = f"{path.name}/{chain}" if chain else path.name
    shards = LocalShards(root)
    rows = chain_rows(listing, shards, label, (chain,) if chain else ())
    return frames_in_rows(list(rows.values()), shards, label, list(rows))


def frames_in_rows(refs: Sequence[str], shards: ShardSource, label: str,
                   paths: Sequence[str] = ()) -> Frames:
    """A chain made of shard rows, in the order given; each frame is named by its row's path
    where `paths` gives them (its steps are then read from those, `chain_layout`), else by its
    row (SHARD#ROW) in the order given, the first step 0."""
    files = read_rows(refs, shards)
    row_of = dict(zip(paths or refs, refs, strict=True))
    return Frames(label, list(row_of), lambda name: load_image(files[row_of[name]]),
                  steps_in_names=bool(paths))
