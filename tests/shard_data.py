"""Image datasets stored as the hub usually stores them, for tests: parquet shards whose image
column holds `{bytes, path}` structs (the `datasets` Image feature), built with pyarrow from
tiny generated PNGs."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

from banana_space.files import png_bytes

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])



def parquet_shards(chains: dict[str, list[Image.Image]], shards: int = 2,
                   rows_per_group: int = 3, prefix: str = "data/train") -> dict[str, bytes]:
    """The rows of every chain (`NAME/STEP.png`, chain after chain) split evenly over
    `shards` parquet files, so a chain may straddle two shards; returns name -> file bytes."""
    rows = [{"bytes": png_bytes(frame), "path": f"{name}/{step}.png"}
            for name, frames in chains.items() for step, frame in enumerate(frames)]
    rows.append({"bytes": b"not read", "path": None})  # a row with no path is skipped
    table = pa.table({"image": pa.array(rows, IMAGE),
                      "note": [f"row {i}" for i in range(len(rows))]})
    per_shard = -(-len(rows) // shards)
    files = {}
    for index in range(shards):
        buffer = io.BytesIO()
        pq.write_table(table.slice(index * per_shard, per_shard), buffer,
                       row_group_size=rows_per_group)
        files[f"{prefix}-{index:05d}-of-{shards:05d}.parquet"] = buffer.getvalue()
    return files


def row_group_spans(data: bytes, column: str = "image.bytes") -> list[tuple[int, int, int]]:
    """(first row, first byte, last byte) of `column`'s chunk in each row group of a shard."""
    meta = pq.ParquetFile(io.BytesIO(data)).metadata
    spans, first = [], 0
    for group in range(meta.num_row_groups):
        chunks = meta.row_group(group)
        for chunk in map(chunks.column, range(chunks.num_columns)):
            if chunk.path_in_schema == column:
                start = min(o for o in (chunk.dictionary_page_offset, chunk.data_page_offset)
                            if o is not None)
                spans.append((first, start, start + chunk.total_compressed_size - 1))
        first += chunks.num_rows
    return spans
