"""A scenario case: which script scenario, which systems, what sizes, what to report."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Metric:
    key: str  # dotted path into the script's JSON result
    label: str
    unit: str
    higher_is_better: bool = True
    digits: int = 0


@dataclass(frozen=True)
class Case:
    id: str
    family: str  # what --scenarios selects: enqueue, drain, latency, recovery, ...
    title: str
    script_scenario: str
    subject: str  # the taskq system the ratios are taken for
    peers: tuple[str, ...]
    full: dict[str, object]
    quick: dict[str, object] | None  # None: skipped by --quick (too slow)
    metrics: tuple[Metric, ...]
    timeout: float = 600.0
    full_runs: int | None = None  # None: the --runs value
    #: judged only on a Postgres that runs autovacuum: when the bench server does not,
    #: the case runs on a throwaway cluster with the defaults (benchmarks/servers.py)
    default_server: bool = False
    notes: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def systems(self) -> tuple[str, ...]:
        return (self.subject, *self.peers)

    def params(self, quick: bool) -> dict[str, object] | None:
        return self.quick if quick else self.full

    def metrics_for(self, quick: bool) -> tuple[Metric, ...]:
        return self.extra.get("quick_metrics", self.metrics) if quick else self.metrics


def lookup(result: dict, key: str) -> float | None:
    value: object = result
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None
