"""Actor configuration drift: what a registry says versus what the store recorded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..jobs import ActorConfig


def config_differences(
    stored: Mapping[str, ActorConfig], wanted: Sequence[ActorConfig]
) -> list[str]:
    """One human-readable line per option that differs, e.g.
    ``"resize: max_attempts 3 -> 5"``. Actors not stored yet are not differences."""
    lines = []
    for config in wanted:
        old = stored.get(config.name)
        if old is None:
            continue
        before, after = old.comparable(), config.comparable()
        for option, value in after.items():
            if before[option] != value:
                lines.append(f"{config.name}: {option} {before[option]!r} -> {value!r}")
    return lines
