"""Ranks for the lines of an envelope that dropped SGLang's rank tag (NVIDIA Dynamo's formatter).

Every scheduler rank prints the same start-up lines (`Init torch distributed begin.`, `Load weight
end. ...`, `KV Cache is allocated. ...`), and without the tag they cannot be told apart. Summed as one
rank's they give a TP=4 launch's KV pool four times over. So within a launch (from its
`server_args` dump, or from an `Init ... begin` after other per-rank lines) the n-th line of each such
kind is numbered rank n mod R, R being the launch's `Init ... begin` lines: each rank's figures stay
one rank's, a draft model's second weight load is again each rank's second, and `ranks` counts R. Which
process printed a given line is not known; the number says only how many ranks there were.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

# The tables whose lines every scheduler rank prints.
PER_RANK_TABLES = frozenset({"init_distributed", "weight_loads", "kv_cache", "memory_pool", "cuda_graphs",
                             "host_cache"})
LAUNCH_KIND = "server_args"
RANK_OPENING_KIND = "init_distributed_begin"
GUESSED_COLUMN = "tp"  # the column the number goes to


@dataclass
class RankGuess:
    """The numbering state of one source, carried from block to block."""

    ranks: int = 0
    seen: Counter = field(default_factory=Counter)

    def rank_of(self, kind: str, table: str | None) -> int | None:
        """The rank to give a line of `kind` (None: a line no rank prints on its own)."""
        if kind == LAUNCH_KIND:
            self.ranks, self.seen = 0, Counter()
            return None
        if table not in PER_RANK_TABLES:
            return None
        if kind == RANK_OPENING_KIND:
            if sum(self.seen.values()) > self.ranks:  # other per-rank lines came since: a new launch
                self.ranks, self.seen = 0, Counter()
            self.ranks += 1
            self.seen[kind] += 1
            return self.ranks - 1
        n = self.seen[kind]
        self.seen[kind] += 1
        return n % self.ranks if self.ranks else n
