"""How `ModelRunner` calls meet the result cache: keys, all-or-nothing lookups, stores, counts.

A key holds everything that changes an output: the model identity (weights and dtype), the
method and its parameters, the item (prompt, gold/answer), the intervention's key, the source
of the runner's modules and of the calling code (`produced_by`), and the kbench, torch and
transformers versions. A lookup is all-or-nothing: a call gets cached values only when every
one of its items is cached, so the items it computes always run in the batches of a cold call.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kbench.models.provenance import RUNNER_MODULES, cache_versions, source_hash
from kbench.models.result_cache import ResultCache


class CallCache:
    def __init__(self, cache: ResultCache | None, model_identity: str, model_name: str):
        self.cache = cache
        self.model_identity, self.model_name = model_identity, model_name
        self.runner_code = source_hash(RUNNER_MODULES)
        self.caller_code: str | None = None
        self._stats: dict[str, dict[str, int]] = {}

    @contextlib.contextmanager
    def produced_by(self, code: str | None):
        previous, self.caller_code = self.caller_code, code
        try:
            yield
        finally:
            self.caller_code = previous

    def keys(self, method: str, params: dict, items: list[dict], intervention_key: str | None) -> list[str]:
        common = {
            "model": self.model_identity,
            "method": method,
            "params": params,
            "intervention": intervention_key,
            "code": [self.runner_code, self.caller_code],
            "versions": cache_versions(),
        }
        return [ResultCache.key(**common, item=item) for item in items]

    def lookup(self, call: str, keys: list[str], n_items: int) -> dict[str, Any]:
        """The cached values of `keys` when every one is cached, else {} (the caller computes
        the whole call). `n_items` items of `call` are counted as hits or computed."""
        found = self.cache.get_many(keys) if self.cache is not None and keys else {}
        if not all(k in found for k in keys):
            found = {}
        stats = self._stats.setdefault(call, {"hits": 0, "computed": 0})
        stats["hits" if found else "computed"] += n_items
        return found

    def store(self, method: str, values: dict[str, Any]) -> None:
        if self.cache is not None:
            self.cache.put_many(values, method, self.model_name)

    def stats(self) -> dict:
        total = {kind: sum(s[kind] for s in self._stats.values()) for kind in ("hits", "computed")}
        return {**total, "by_method": {call: dict(s) for call, s in self._stats.items()}}


def first_indices(keys: list) -> list[int]:
    """The index of each distinct key's first occurrence: duplicates in a call are computed once."""
    first: dict[Any, int] = {}
    for i, key in enumerate(keys):
        first.setdefault(key, i)
    return list(first.values())
