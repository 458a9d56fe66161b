"""How well `logmine plan` predicts the next run: for every pair of runs of one source where settings the plan
models changed, the prediction from the earlier run (with the later run's values) against what the later
run logged: KV tokens, KV GiB and the HiCache host pool per rank.

    python bench/plan_bench.py [../shared]

Ingests the bundled example and every log under ../shared/samples and ../shared/corpus/sglang into a
temporary database; a pair is the later run and the last earlier run of the same source that allocated a
KV pool. Settings the plan does not model (random_seed, ports...) are left out of the changes.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from logmine import api
from logmine.query import plan

REPO = Path(__file__).resolve().parents[1]
FIGURES = [("KV tokens", "kv_tokens_per_rank", "kv_tokens"), ("KV GiB", "kv_gib_per_rank", "kv_gib"),
           ("host GB/rank", "host_cache_gb_per_rank", "host_cache_gb")]


def inputs(shared: Path) -> list[str]:
    found = [str(REPO / "examples" / "demo" / "journal.txt")]
    found += sorted(str(p) for p in (shared / "samples").glob("*/journal.txt"))
    found += sorted(str(p) for p in (shared / "corpus" / "sglang").glob("*.log"))
    return found


def logged(con, source: str, run: int) -> dict | None:
    budget = api.query(con, "memory-budget", source=source, run=run)
    ranks = budget[(budget["rank"] != "all ranks") & budget["kv_tokens"].notna()]
    if ranks.empty:
        return None
    first = ranks.iloc[0]
    # The pool each rank allocated, or asked for where SGLang refused it (the audit reads both).
    host = api.host_memory_audit(con, run=f"{source}:{run}")["requested_gb_per_rank"]
    return {"kv_tokens": int(first["kv_tokens"]), "kv_gib": float(first["kv_gib"]), "host_cache_gb": host}


def main() -> None:
    shared = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO.parent / "shared"
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.duckdb"
        api.ingest(inputs(shared), db=db, jobs=1)
        with api.open_db(db) as con:
            names = api.source_names(con)
            runs = api.sql_rows(con, """
                SELECT s.display, r.ordinal, c.args FROM runs AS r JOIN sources AS s USING (source_id)
                LEFT JOIN configs AS c USING (config_id) ORDER BY r.source_id, r.ordinal""").rows
            print(f"{'source':<22} {'from':>4} {'to':>3}  {'figure':<13} {'predicted':>11} {'logged':>11} {'error':>7}")
            earlier: dict[str, tuple[int, dict]] = {}
            errors: list[float] = []
            for display, ordinal, args in runs:
                figures = logged(con, display, ordinal)
                config = plan.config_dict(args)
                if display in earlier and figures and config:
                    start, old = earlier[display]
                    changes = {k: config.get(k) for k in plan.SETTINGS if config.get(k) != old.get(k)}
                    if changes:
                        predicted = api.plan(con, changes, run=f"{display}:{start}")
                        said = ", ".join(f"{k}={v}" for k, v in changes.items())
                        print(f"{names[display][-22:]:<22} {start:>4} {ordinal:>3}  changed: {said}")
                        for label, key, logged_key in FIGURES:
                            want, got = figures[logged_key], predicted[key]
                            if want is None and got is None:
                                continue
                            error = (None if want in (None, 0) or got is None else (got - want) / want)
                            if error is not None:
                                errors.append(abs(error))
                            print(f"{'':<22} {'':>4} {'':>3}  {label:<13} {_shown(got):>11} {_shown(want):>11} "
                                  f"{'n/a' if error is None else f'{error:+.2%}':>7}")
                if figures and config:
                    earlier[display] = (ordinal, config)
            if errors:
                print(f"{len(errors)} predicted figures: mean |error| {sum(errors) / len(errors):.3%}, "
                      f"max {max(errors):.3%}")


def _shown(value: object) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


if __name__ == "__main__":
    main()
