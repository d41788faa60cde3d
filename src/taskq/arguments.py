"""An actor's arguments checked against its function's signature when a job is made.

``client.enqueue(resize, "a.png", widht=3)`` is refused where it is written, with
``ArgumentsMismatch`` naming the parameter (``resize() got an unexpected keyword argument
'widht' (did you mean 'width'?)``, and a required one left missing), instead of failing
with a ``TypeError`` in a worker, attempts later. ``check_arguments`` is the one rule: ``enqueue``,
``enqueue_with`` and ``enqueue_many`` of an ``Actor`` call it (and anything else that
makes jobs of an actor object, such as a workflow's ``add``). An actor given by name (a
``str``) cannot be checked: its function may not even be importable here.

Cheap enough for every enqueue: the signature is read once per function and kept, and
the common call (positional arguments only, a count the function accepts) is two
comparisons; anything else is bound with ``inspect.Signature.bind``. A function whose
signature cannot be read (some builtins) is not checked. Only a refusal pays for the
words: the unexpected keywords and the close names are found after ``bind`` failed.
"""

from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .exceptions import ArgumentsMismatch
from .registry import AnyActor

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class _Fit:
    """What one function accepts: the positional counts that need no binding, and its
    signature for everything else."""

    __slots__ = ("high", "low", "signature")

    def __init__(self, signature: inspect.Signature) -> None:
        params = list(signature.parameters.values())
        positional = [p for p in params if p.kind in _POSITIONAL]
        self.signature = signature
        self.low = sum(1 for p in positional if p.default is inspect.Parameter.empty)
        self.high: float = (
            math.inf
            if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
            else len(positional)
        )
        if any(
            p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
            for p in params
        ):
            self.high = -1  # a required keyword-only parameter: always bind


#: function -> its _Fit, or None when its signature cannot be read (not checked)
_fits: dict[Callable[..., Any], _Fit | None] = {}


def _fit(fn: Callable[..., Any]) -> _Fit | None:
    try:
        return _fits[fn]
    except KeyError:
        pass
    except TypeError:  # an unhashable callable: read every time
        return _read(fn)
    fit = _fits[fn] = _read(fn)
    return fit


def _read(fn: Callable[..., Any]) -> _Fit | None:
    try:
        return _Fit(inspect.signature(fn))
    except (TypeError, ValueError):
        return None


def positional_fit(actor: AnyActor) -> tuple[float, float]:
    """The counts of positional arguments (and no keywords) that fit ``actor``'s
    function without binding: ``low <= len(args) <= high`` (a batch checks its items
    against them, and calls ``check_arguments`` only for an item outside them)."""
    fit = _fit(actor.fn)
    return (0, math.inf) if fit is None else (fit.low, fit.high)


def check_arguments(
    actor: AnyActor, args: Sequence[Any], kwargs: Mapping[str, Any] | None = None
) -> None:
    """Raise ``ArgumentsMismatch`` unless ``actor``'s function can be called with
    ``args`` and ``kwargs`` (as a worker will call it). Nothing else is checked here:
    that the values are JSON is the payload's rule (``taskq.payload``)."""
    fit = _fit(actor.fn)
    if fit is None:
        return
    # arguments that are not JSON-shaped are the payload's to refuse, in its words
    if type(args) is not tuple and type(args) is not list:
        if isinstance(args, str | bytes) or not isinstance(args, Sequence):
            return
    if not kwargs:
        if fit.low <= len(args) <= fit.high:
            return
    elif not isinstance(kwargs, Mapping) or not all(type(key) is str for key in kwargs):
        return
    try:
        fit.signature.bind(*args, **(kwargs or {}))
    except TypeError as exc:
        why = str(exc)
        if why == "too many positional arguments":  # say how many
            why += f": {len(args)} given, at most {fit.high:g}"
        unexpected = _unexpected(actor, fit.signature, len(args), kwargs or {})
        if unexpected:  # Signature.bind names a missing argument first: name these too
            why = "; ".join([*unexpected, *([] if "unexpected keyword" in why else [why])])
        raise ArgumentsMismatch(
            f"arguments do not fit actor {actor.name!r}, {_shown(actor, fit.signature)}: "
            f"{why}; nothing was enqueued"
        ) from None


def _unexpected(
    actor: AnyActor, signature: inspect.Signature, given: int, kwargs: Mapping[str, Any]
) -> list[str]:
    """Each keyword the function does not take, in Python's words, with the parameter
    it most likely meant (``difflib``: ``widht`` -> ``width``) among those not given
    yet. Only on the failure path."""
    params = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return []
    by_keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    open_names = [
        name
        for i, (name, p) in enumerate(params.items())
        if p.kind in by_keyword
        and name not in kwargs
        and not (p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and i < given)
    ]
    fn_name = getattr(actor.fn, "__name__", actor.name)
    out = []
    for key in kwargs:
        param = params.get(key)
        if param is not None and param.kind is not inspect.Parameter.VAR_POSITIONAL:
            continue  # one it takes (or a positional-only one: bind's words say so)
        line = f"{fn_name}() got an unexpected keyword argument {key!r}"
        if close := difflib.get_close_matches(key, open_names, n=1):
            line += f" (did you mean {close[0]!r}?)"
        out.append(line)
    return out


def _shown(actor: AnyActor, signature: inspect.Signature) -> str:
    """``name(path, width=0)``: the parameters, without their annotations."""
    empty = inspect.Parameter.empty
    bare = signature.replace(
        parameters=[p.replace(annotation=empty) for p in signature.parameters.values()],
        return_annotation=empty,
    )
    return f"{getattr(actor.fn, '__name__', actor.name)}{bare}"
