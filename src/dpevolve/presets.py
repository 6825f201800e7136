"""Named methods: a preset is a method instance (docs/guide.md, "Presets"; docs/math.md §6).

* ``adaptive`` (the default): the select-measure-estimate-generate engine
  (:class:`~dpevolve.engine.method.AdaptiveMethod`): marginals chosen round by round by
  the exponential mechanism where the model is most wrong (AIM's shape), reconciled by a
  graphical model (:mod:`dpevolve.estimate`) from which fresh rows are drawn.
* ``tabpe``: Private Evolution (:class:`~dpevolve.pe.method.PEMethod`) in Tab-PE's
  released Adult setting. N = 1000, 30 generations (29 DP rounds; the random generation
  0 costs nothing): rounds 1-4 sample parents in proportion to the clipped noisy count
  with one mutation each; from round 5 keep the top N by noisy count plus 3 mutations of
  each (pool 4N) and rank-select N. One-hot/L2 distance, hard votes, threshold H = 0.
* ``bfsoft``: Private Evolution in the BF-Soft study setting. 512-record releases, 8
  rounds of sampling selection, Gower distance; hard votes unless a soft vote is asked.
* ``hybrid``: Private Evolution's population as a pool: the whole budget measures the
  2-way marginals, the 3-way ones holding the label and, at two bins per number, the
  4-way ones holding the label, in one Gaussian release; the pool is weighted to match
  them and rows are drawn from it. Far better marginals on Adult and XOR-3, worse TSTR
  on Person Activity (benchmarks/FIDELITY.md).

Each preset's settings (:class:`~dpevolve.config.Preset`) are in :mod:`dpevolve.config`;
:func:`get_method` names the method, :func:`method_of` reads one from a name, a method or
a run file's words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from dpevolve.config import PRESETS, Preset, get_preset
from dpevolve.engine.method import AdaptiveMethod
from dpevolve.errors import InputError
from dpevolve.method import Method
from dpevolve.pe.method import PEMethod, pe_method

#: The method of a run that names none (benchmarks/FIDELITY.md).
DEFAULT_METHOD = "adaptive"

#: The named methods, in the order the help lists them.
METHODS: tuple[str, ...] = tuple(PRESETS)

#: Private Evolution's settings, which only a PE method takes.
PE_SETTINGS = ("vote", "mechanism", "marginals")

#: A run file's words that are not the method's (the budget, where to count, what to do
#: with invalid rows).
RUN_WORDS = ("budget", "backend", "on_invalid")


def get_method(name: str, **settings: Any) -> Method:
    """The method ``name``: ``adaptive`` (settings: ``engine``, options laid over the
    :class:`~dpevolve.engine.spec.EngineSpec`) or a Private Evolution preset (settings:
    ``vote``, ``mechanism``, ``marginals``, ``population``, ``rounds``, ``distance``).
    A setting the method does not take is refused by name."""
    if name not in PRESETS:
        raise InputError(f"unknown method '{name}' (choose {', '.join(PRESETS)}, or a run file)")
    preset = get_preset(name)
    if preset.engine is not None:
        refused = sorted(k for k, v in settings.items() if k != "engine" and v is not None)
        if refused:
            raise InputError(
                f"the {name} method takes no {', '.join(refused)}: "
                f"{'it is a' if len(refused) == 1 else 'they are'} Private Evolution "
                "setting(s) (choose method tabpe, hybrid or bfsoft)"
            )
        method = AdaptiveMethod(preset.engine, name)
        engine = settings.get("engine")
        return method if engine is None else method.with_options(engine)
    if settings.get("engine") is not None:
        raise InputError(f"the {name} method runs Private Evolution: engine options are "
                         f"for method {DEFAULT_METHOD}")  # fmt: skip
    settings = {k: v for k, v in settings.items() if k != "engine"}
    return PEMethod.named(name, **settings)


def overlaid(
    method: Method,
    *,
    engine: Mapping[str, Any] | None = None,
    population: int | None = None,
    rounds: int | None = None,
) -> Method:
    """``method`` with engine options, or a Private Evolution population or rounds, laid
    over it (``--engine-options``, ``--population``, ``--rounds`` over a run file's
    method); one it does not take is refused by name."""
    if isinstance(method, AdaptiveMethod):
        refused = [k for k, v in (("population", population), ("rounds", rounds)) if v]
        if refused:
            raise InputError(f"the {method.name} method takes no {', '.join(refused)}: "
                             "Private Evolution setting(s)")  # fmt: skip
        return method if engine is None else method.with_options(engine)
    if isinstance(method, PEMethod):
        if engine is not None:
            raise InputError(f"the {method.name} method runs Private Evolution: engine "
                             f"options are for method {DEFAULT_METHOD}")  # fmt: skip
        return replace(method, preset=method.preset.with_overrides(population, rounds))
    if (engine, population, rounds) != (None, None, None):
        raise InputError(f"the {method.name} method takes no engine options, population or rounds")
    return method


def method_of(value: Method | str | Mapping[str, Any] | None) -> Method:
    """A method from itself, its name (``None``: the default) or run-file words: a
    ledger's ``config`` block or ``{"preset": ..., "vote": ..., ...}``."""
    if value is None:
        return get_method(DEFAULT_METHOD)
    if isinstance(value, str):
        return get_method(value)
    if isinstance(value, Mapping):
        return method_from_dict(value)
    if isinstance(value, Method):
        return value
    raise InputError(f"method must be a name or a method, got {type(value).__name__}")


def method_from_dict(data: Mapping[str, Any]) -> Method:
    """A method from run-file words: what :meth:`Method.to_dict` writes (a ledger's
    ``config`` block), or ``{"method": NAME, ...}`` with the method's settings (``vote``,
    ``mechanism``, ``marginals`` for Private Evolution; ``engine`` for the engine).
    The run's other words (``budget``, ``backend``, ``on_invalid``) are passed over."""
    unknown = sorted(set(data) - {"method", "preset", "engine", *PE_SETTINGS, *RUN_WORDS})
    if unknown:
        raise InputError(f"run file: unknown settings {unknown} (known: method, preset, "
                         f"engine, {', '.join(PE_SETTINGS)}, {', '.join(RUN_WORDS)})")  # fmt: skip
    if "method" in data and "preset" in data:
        raise InputError("run file: give the method or the preset, not both")
    preset = data.get("preset") or data.get("method") or DEFAULT_METHOD
    chosen = Preset.from_dict(preset) if isinstance(preset, Mapping) else get_preset(preset)
    if data.get("engine") is not None:
        chosen = chosen.with_engine(data["engine"])
    settings = {k: data.get(k) for k in PE_SETTINGS}
    return from_settings(chosen, settings)


def from_settings(preset: Preset | str | None, settings: Mapping[str, Any]) -> Method:
    """The method that a preset and Private Evolution settings name (a run file's
    ``preset``, ``vote``, ``mechanism``, ``marginals``).

    A Private Evolution setting given to the adaptive engine (the default) is refused
    by name: the run never switches algorithm on its own.
    """
    chosen = get_preset(preset or DEFAULT_METHOD) if not isinstance(preset, Preset) else preset
    if chosen.engine is None:
        return pe_method(chosen, settings)
    default = {"mechanism": (None, "gaussian")}
    asked = [k for k, v in settings.items() if not _default(k, v, default.get(k, (None,)))]
    if asked:
        raise InputError(
            f"the {chosen.name} method takes no {', '.join(asked)}: Private Evolution "
            f"setting(s); name a PE method (method='tabpe', 'hybrid' or 'bfsoft')"
        )
    return AdaptiveMethod(chosen.engine, chosen.name)


def _default(name: str, value: Any, plain: tuple[Any, ...]) -> bool:
    """``value`` is the setting left as a run that asks nothing of it leaves it."""
    from dpevolve.pe.specs import GaussianSpec, VoteSpec

    if value in plain:
        return True
    if name == "vote" and isinstance(value, (VoteSpec, Mapping)):
        return value in (VoteSpec(), VoteSpec().to_dict())
    if name == "mechanism" and isinstance(value, (GaussianSpec, Mapping)):
        return value in (GaussianSpec(), GaussianSpec().to_dict())
    return False


__all__ = [
    "DEFAULT_METHOD",
    "METHODS",
    "PRESETS",
    "Preset",
    "from_settings",
    "get_method",
    "get_preset",
    "method_from_dict",
    "method_of",
    "overlaid",
]
