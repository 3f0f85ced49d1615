"""``--stop-when decided``, ``--margin``, ``--look-every`` and ``--order-seed``: the sequential audit's flags, shared
by ``run`` and ``audit`` (:mod:`counterbench.sequential`)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from counterbench.errors import UserError
from counterbench.options import StoppingRule, parse_margins

#: the values ``--stop-when`` takes
STOP_WHEN = ("decided",)

StopWhenOpt = Annotated[str | None, typer.Option(
    "--stop-when", help="'decided': send the slots in a random order, a round at a time, and stop each model when "
                        "every comparison of its family is decided (gap, or no gap above --margin) with its error "
                        "rate kept under continuous monitoring.")]
MarginOpt = Annotated[list[str] | None, typer.Option(
    "--margin", help="With --stop-when: the gap that counts as none, in the outcome's gap unit (% of the pair's mean "
                     "for amounts, percentage points, points): 5, or KIND=5 for one kind (repeatable). Default 5, "
                     "or 5% of a score's range.")]
LookEveryOpt = Annotated[int, typer.Option(
    "--look-every", help="With --stop-when: prompts per round (whole slots); the verdicts are read after each.")]
OrderSeedOpt = Annotated[int, typer.Option("--order-seed", help="With --stop-when: the seed of the slots' order.")]

DEFAULT_LOOK_EVERY = 100


def stopping_rule(stop_when: str | None, margin: list[str] | None, look_every: int, order_seed: int
                  ) -> StoppingRule | None:
    """The rule the flags ask for (``None``: no --stop-when); a flag that needs --stop-when without it is refused."""
    if stop_when is None:
        if margin or look_every != DEFAULT_LOOK_EVERY or order_seed:
            raise UserError("--margin, --look-every and --order-seed go with --stop-when decided")
        return None
    if stop_when not in STOP_WHEN:
        raise UserError(f"--stop-when takes {', '.join(STOP_WHEN)}, got {stop_when!r}")
    return StoppingRule(margins=parse_margins(margin or []), look_every=look_every, seed=order_seed)


#: the flags :func:`with_stopping_rule` gives a verb: name -> (option, default)
STOPPING_FLAGS: dict[str, tuple[object, object]] = {
    "stop_when": (StopWhenOpt, None), "margin": (MarginOpt, None), "look_every": (LookEveryOpt, DEFAULT_LOOK_EVERY),
    "order_seed": (OrderSeedOpt, 0),
}


def with_stopping_rule(verb: Callable[..., None]) -> Callable[..., None]:
    """Give ``verb`` the flags of :data:`STOPPING_FLAGS` in place of its ``stopping`` parameter, and call it with
    them as one rule (:func:`stopping_rule`; ``None`` without ``--stop-when``), as ``with_prompt_filters`` does
    for the prompt filters."""
    own = inspect.signature(verb)
    parameters: list[inspect.Parameter] = []
    for p in own.parameters.values():
        if p.name == "stopping":
            parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=option, default=default)
                           for name, (option, default) in STOPPING_FLAGS.items()]
        else:
            parameters.append(p)

    @functools.wraps(verb)
    def wrapper(**values: Any) -> None:
        flags = {name: values.pop(name) for name in STOPPING_FLAGS}
        return verb(**values, stopping=stopping_rule(**flags))

    wrapper.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    return wrapper
