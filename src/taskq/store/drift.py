"""Actor configuration drift: what a registry says versus what the store recorded.

Workers record their registry's actor options in the ``actors`` table when they start
(``Store.sync_actor_configs``); a client that enqueues by name reads them. A new version
of the code changes some of them. ``config_differences`` lists each change as a
``Difference``; one that changes **where jobs go** (``routes``: an actor's queue) is
refused unless forced, since jobs enqueued by name would then go to a queue that the
workers of the old code do not consume. Every other change (how a job runs: attempts,
timeout, backoff, crashes, idempotent, priority, snoozes) is taken on by the new code
and logged once (``actor-config-updated``). docs/jobs.md, "Actor options and deploys".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..jobs import ActorConfig

#: the options that decide where an actor's jobs go
ROUTING = frozenset({"queue"})


@dataclass(frozen=True, slots=True)
class Difference:
    """One option of one actor, as stored and as the registry has it."""

    actor: str
    option: str
    before: Any
    after: Any

    @property
    def routes(self) -> bool:
        """A change of where the actor's jobs go: refused unless forced."""
        return self.option in ROUTING

    def __str__(self) -> str:
        return f"{self.actor}: {self.option} {self.before!r} -> {self.after!r}"


def config_differences(
    stored: Mapping[str, ActorConfig], wanted: Sequence[ActorConfig]
) -> list[Difference]:
    """Each option that differs, in the registry's order. Actors not stored yet are not
    differences, nor is an ``extra`` option the stored row does not have (it was
    recorded by a version that did not record that option)."""
    found = []
    for config in wanted:
        old = stored.get(config.name)
        if old is None:
            continue
        before, after = _options(old), _options(config)
        for option, value in after.items():
            if option in before and before[option] != value:
                found.append(Difference(config.name, option, before[option], value))
    return found


def _options(config: ActorConfig) -> dict[str, Any]:
    return {**config.extra, **config.comparable()}


def routing_refusal(refused: Sequence[Difference]) -> str:
    """The one line a worker (and ``taskq workgroup validate``) says about changes of
    queue it will not take on alone."""
    moves = "; ".join(
        f"actor {d.actor!r} moved from queue {d.before!r} to {d.after!r}" for d in refused
    )
    return (
        f"{moves}: jobs enqueued by name would go to the new queue while workers of the "
        "old code still consume the old one; deploy this change once with "
        "--force-update-actor-config (workgroup: force_update_actor_config = true), then "
        "without it"
    )
