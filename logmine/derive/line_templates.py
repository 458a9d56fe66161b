"""Templates of the lines no pattern knows, mined with Drain3 so that variants of one message group together.

Each untyped line gets a key: its message with the SGLang prefix, paths, hex ids and numbers masked
(`untyped_key`, a SQL macro, so queries compute it where the lines are). Drain3 then groups keys that
differ in a few tokens (`... self_attn.k_scale not found` and `... self_attn.v_scale not found`) into
one template with `<*>` where they differ. Only keys not seen before are mined at each ingest, and the
miner's state is kept in the database, so a template keeps its id across ingests.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ..store import append, create_tables, execute, typed_table

UNTYPED_KEY = r"""CREATE OR REPLACE MACRO untyped_key(message) AS
    regexp_replace(
        regexp_replace(
            regexp_replace(
                regexp_replace(message, '^\[[^\]]*\] ?', '[…] '),
                '(?:[A-Za-z]:)?(?:/[\w.@+-]+)+/?', '<path>', 'g'),
            '0x[0-9a-fA-F]+|\b[0-9a-f]{12,}\b', '<hex>', 'g'),
        '-?\d+(?:\.\d+)?', '<n>', 'g')"""
TABLES = {
    "template_miner_state": {"state": "BLOB"},
    "untyped_keys": {"key": "VARCHAR", "template_id": "INTEGER"},
    "untyped_templates": {"template_id": "INTEGER", "template": "VARCHAR"},
}


class DatabaseState:
    """Drain3's state in the `template_miner_state` table (its persistence-handler interface)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con

    def save_state(self, state: bytes) -> None:
        execute(self.con, "DELETE FROM template_miner_state")
        execute(self.con, "INSERT INTO template_miner_state VALUES (?)", [state])

    def load_state(self) -> bytes | None:
        rows = execute(self.con, "SELECT state FROM template_miner_state")
        return rows[0][0] if rows else None


def mine(con: duckdb.DuckDBPyConnection) -> None:
    """Give every key of the untyped lines a template id, mining the keys not seen before; keys no stored
    line has any more (a line cut by the end of a growing file, read again whole; a source replaced) are
    dropped, with the templates only they made, from the tables and from the miner's state."""
    create_tables(con, TABLES)
    execute(con, UNTYPED_KEY)
    execute(con, "CREATE OR REPLACE TEMP TABLE _present_keys AS SELECT DISTINCT untyped_key(message) AS key "
                 "FROM lines WHERE kind IS NULL AND message IS NOT NULL")
    try:
        new_keys = [r[0] for r in execute(con, "SELECT key FROM _present_keys EXCEPT SELECT key FROM untyped_keys "
                                               "ORDER BY key")]
        emptied = [r[0] for r in execute(con, """
            SELECT DISTINCT template_id FROM untyped_keys WHERE key NOT IN (SELECT key FROM _present_keys)
            EXCEPT SELECT template_id FROM untyped_keys WHERE key IN (SELECT key FROM _present_keys)""")]
        stale = execute(con, "SELECT count(*) FROM untyped_keys WHERE key NOT IN (SELECT key FROM _present_keys)")
        if stale[0][0]:
            execute(con, "DELETE FROM untyped_keys WHERE key NOT IN (SELECT key FROM _present_keys)")
    finally:
        execute(con, "DROP TABLE _present_keys")
    if not new_keys and not emptied:
        return
    from drain3 import TemplateMiner  # here: most ingests have no new untyped line
    from drain3.template_miner_config import TemplateMinerConfig

    config = TemplateMinerConfig()
    config.snapshot_interval_minutes = 10**9  # saved once, below, inside the ingest's transaction
    miner = TemplateMiner(DatabaseState(con), config)
    for template_id in emptied:  # the prefix tree skips ids it no longer finds
        miner.drain.id_to_cluster.pop(template_id, None)
    ids = [miner.add_log_message(key)["cluster_id"] for key in new_keys]
    if new_keys:
        _store(con, "untyped_keys", {"key": new_keys, "template_id": ids})
    execute(con, "DELETE FROM untyped_templates")  # a template widens as keys join it
    clusters = miner.drain.clusters
    _store(con, "untyped_templates", {"template_id": [c.cluster_id for c in clusters],
                                      "template": [c.get_template() for c in clusters]})
    miner.save_state("ingest")


def _store(con: duckdb.DuckDBPyConnection, table: str, columns: dict[str, list]) -> None:
    types = TABLES[table]
    append(con, table, typed_table(pa.table(columns), types), types)
