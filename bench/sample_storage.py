"""Bytes per stored sample of a perfscope database (issue 21): checkpoints the WAL into the
file (TRUNCATE), then reports the file and WAL sizes, the samples the chunks hold, and the
pages each table takes (SQLite's dbstat), so fixed overhead and the chunks can be told apart.

Usage: python3 bench/sample_storage.py DATABASE [--json]
Run it after the server has stopped (or on a copy).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys


def measure(path: str) -> dict:
    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    samples, chunks = con.execute("SELECT IFNULL(SUM(count), 0), COUNT(*) FROM sample_chunks").fetchone()
    passes, pass_chunks = con.execute("SELECT IFNULL(SUM(count), 0), COUNT(*) FROM sample_passes").fetchone()
    series = con.execute("SELECT COUNT(*) FROM series").fetchone()[0]
    tables = {}
    try:
        for name, pages, size, unused in con.execute(
                "SELECT name, COUNT(*), SUM(pgsize), SUM(unused) FROM dbstat GROUP BY name ORDER BY SUM(pgsize) DESC"):
            tables[name] = {"pages": pages, "bytes": size, "unused_bytes": unused}
    except sqlite3.OperationalError:
        pass  # a SQLite without dbstat: the file size still says it all
    data_bytes = con.execute("SELECT IFNULL(SUM(LENGTH(data)), 0) FROM sample_chunks").fetchone()[0]
    pass_bytes = con.execute("SELECT IFNULL(SUM(LENGTH(data)), 0) FROM sample_passes").fetchone()[0]
    con.close()
    file_bytes = os.path.getsize(path)
    wal = path + "-wal"
    wal_bytes = os.path.getsize(wal) if os.path.exists(wal) else 0
    chunk_tables = sum(tables.get(t, {}).get("bytes", 0) for t in ("sample_chunks", "sample_passes"))
    # What a sample store holds for itself: the series catalogue (and its index) and the chunks;
    # not the tables of the other event kinds, empty or not, that a perfscope file also has.
    series_tables = sum(tables.get(t, {}).get("bytes", 0) for t in ("series", "sqlite_autoindex_series_1"))
    return {
        "series": series,
        "samples": samples,
        "sample_chunks": chunks,
        "passes": passes,
        "pass_chunks": pass_chunks,
        "file_bytes": file_bytes,
        "wal_bytes_after_checkpoint": wal_bytes,
        "bytes_per_sample": (file_bytes + wal_bytes) / samples if samples else None,
        "chunk_tables_bytes_per_sample": chunk_tables / samples if samples and chunk_tables else None,
        "series_and_chunk_tables_bytes_per_sample":
            (chunk_tables + series_tables) / samples if samples and chunk_tables else None,
        "encoded_bytes_per_sample": (data_bytes + pass_bytes) / samples if samples else None,
        "tables": tables,
    }


def main() -> None:
    m = measure(sys.argv[1])
    if "--json" in sys.argv:
        print(json.dumps(m, indent=1))
        return
    print(f"{m['samples']} samples of {m['series']} series in {m['sample_chunks']} chunks; "
          f"{m['passes']} passes in {m['pass_chunks']} pass chunks")
    print(f"file {m['file_bytes']} B + WAL {m['wal_bytes_after_checkpoint']} B after a checkpoint: "
          f"{m['bytes_per_sample']:.3f} bytes per sample")
    if m["chunk_tables_bytes_per_sample"]:
        print(f"the chunk tables' pages: {m['chunk_tables_bytes_per_sample']:.3f} bytes per sample "
              f"({m['series_and_chunk_tables_bytes_per_sample']:.3f} with the series catalogue); "
              f"encoded data alone {m['encoded_bytes_per_sample']:.3f}")
    for name, t in list(m["tables"].items())[:8]:
        print(f"  {name}: {t['pages']} pages, {t['bytes']} B ({t['unused_bytes']} unused)")


if __name__ == "__main__":
    main()
