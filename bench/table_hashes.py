"""Fingerprint every table and every named query after ingesting a fixed set of inputs.

    python bench/table_hashes.py [--out hashes.json] [--shared ../shared]

Ingests the bundled example, each sample of `../shared/samples` and the whole of `../shared/corpus`
into fresh databases and prints, per database, the row count and an order-independent hash of every
table and every named query's result. Run it before and after a change that must not alter results
(a restructure, a faster ingest) and compare the two outputs: `diff before.json after.json`.

Columns that name the moment of the ingest are left out of the hashes, and the checkout's and the shared
folder's paths inside any text are replaced by `<repo>` and `<shared>`, so two checkouts in different
folders compare equal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import duckdb

from logmine import api
from logmine.query import named_queries
from logmine.query.rows import Rows

ROOT = Path(__file__).resolve().parents[1]
# Columns whose values depend on where and when the ingest ran, not on what it read.
VOLATILE_COLUMNS = {"ingested_at", "mtime", "db_path", "created_at", "updated_at"}


def input_sets(shared: Path) -> dict[str, list[Path]]:
    sets = {"demo": [ROOT / "examples" / "demo"]}
    for sample in sorted((shared / "samples").glob("*/")):
        sets[f"samples/{sample.name}"] = [sample]
    if (shared / "corpus").is_dir():
        sets["corpus"] = [shared / "corpus"]
    return sets


def relation_hash(rows: Rows, places: dict[str, str]) -> dict:
    """Row count and a hash of the sorted rows, volatile columns left out and `places` (a path -> its
    placeholder) replaced in every row's text."""
    keep = [i for i, name in enumerate(rows.columns) if name not in VOLATILE_COLUMNS]
    texts = []
    for row in rows.rows:
        text = repr(tuple(row[i] for i in keep))
        for path, placeholder in places.items():
            text = text.replace(path, placeholder)
        texts.append(text)
    rows = sorted(texts)
    digest = hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]
    return {"rows": len(rows), "hash": digest}


def fingerprint(paths: list[Path], places: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "hashes.duckdb"
        api.ingest([str(p) for p in paths], db=db)
        con = duckdb.connect(str(db), read_only=True)
        tables = [name for (name,) in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "ORDER BY table_name").fetchall()]
        result = {
            "tables": {t: relation_hash(named_queries.fetch(con, f'SELECT * FROM "{t}"'), places) for t in tables},
            "queries": {q: relation_hash(named_queries.fetch(con, named_queries.text(q)), places)
                        for q in named_queries.names()},
        }
        con.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared")
    parser.add_argument("--out", type=Path, help="write the JSON here as well as to stdout")
    args = parser.parse_args()
    shared = args.shared.resolve()
    places = {str(shared): "<shared>", str(ROOT): "<repo>"}
    result = {name: fingerprint(paths, places) for name, paths in input_sets(shared).items()}
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        args.out.write_text(text + "\n")
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
