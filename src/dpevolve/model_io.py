"""Saving and loading a fitted :class:`~dpevolve.synthesizer.Synthesizer`.

A model file holds four things and nothing else: the schema, the public parameters
(:data:`WITHHELD_PARAMS` left out), the released values (:data:`RELEASED`: the final
population, the synthetic table, the marginal support, the adaptive engine's fitted
model, the per-round history, ``n``)
and the **shareable** ledger (:meth:`~dpevolve.privacy.Ledger.shareable_dict`, the
ledger's one allow-list). Never the noise seed (anyone holding it could remove the
noise), never the validation counts or notes of the full ledger: those stay with the
data. Loading needs no private data, and sampling from a loaded model costs no privacy.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from dpevolve.data.io import atomic_write
from dpevolve.errors import InputError
from dpevolve.estimator import EstimatorParams
from dpevolve.privacy.ledger import SharedLedger

# The facade's class, passed in: this module never imports the facade.
Model = TypeVar("Model", bound=EstimatorParams)

#: Bumped whenever a saved model's pickled classes change shape (3: the engine model's
#: inward decoding, the synthetic table's seed; 4: every method's generator in
#: ``generator_``, the ``method`` parameter; 5: the marginal support's release is a
#: ``Measurement``; 6: the inward decoding's end bins), so an older file is refused
#: by name. Fields added with a default that keeps the earlier behaviour need no bump
#: (the inward decoding's held bins and end reach: a file without them decodes as
#: before).
FORMAT = "dpevolve-model/6"

#: Fitted attributes that are released values or public facts (``n`` under replace-one).
RELEASED = (
    "fits_",
    "population_",
    "synthetic_",
    "synthetic_seed_",
    "support_",
    "generator_",
    "history_",
    "schema_",
    "n_private_",
    "warnings_",
)

#: Parameters a model file never holds: the noise seed (research only; it removes the
#: noise) and the backend (it may hold a cluster connection).
WITHHELD_PARAMS = ("noise_seed", "backend")


def save_model(model: EstimatorParams, path: str | Path, *, force: bool = False) -> None:
    """Write ``model`` (fitted) to ``path``, atomically; never overwrites unless ``force``."""
    target = Path(path)
    if target.exists() and not force:
        raise InputError(f"{target} exists (pass force=True to overwrite)")
    if not hasattr(model, "ledger_"):
        raise InputError("call fit() before save()")
    params = {k: v for k, v in model.get_params(deep=False).items() if k not in WITHHELD_PARAMS}
    payload: dict[str, Any] = {
        "format": FORMAT,
        "class": type(model).__name__,
        "params": params,
        # The instance's own values: an adaptive model's synthetic_ is saved only if it
        # was drawn (else it is drawn again from synthetic_seed_ when read).
        "released": {
            k: vars(model)[k]
            for k in RELEASED
            if k in vars(model)
            # A generator made of the other released values is held as those alone.
            and not (k == "generator_" and getattr(vars(model)[k], "saved_as_parts", False))
        },
        "ledger": SharedLedger.of(model.ledger_).to_dict(),
    }
    # Where sampling has got to (post-processing, seeded by the public random_state):
    # the generator's state alone, not the seed sequence it came from.
    sample_rng = getattr(model, "_sample_rng", None)
    if sample_rng is not None:
        payload["sample_state"] = sample_rng.bit_generator.state
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    atomic_write(target, lambda tmp: tmp.write_bytes(data))


def load_model(path: str | Path, cls: type[Model]) -> Model:
    """Read a model of class ``cls`` written by :func:`save_model` (only load files you
    trust: pickle).

    The model's ``ledger_`` is the shareable ledger
    (:class:`~dpevolve.privacy.ledger.SharedLedger`); it samples as the saved one would.
    """
    source = Path(path)
    if not source.is_file():
        raise InputError(f"model file not found: {source}")
    try:
        payload: dict[str, Any] = pickle.loads(source.read_bytes())
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError) as exc:
        raise InputError(f"{source} is not a dpevolve model ({type(exc).__name__})") from None
    if not isinstance(payload, dict) or not str(payload.get("format", "")).startswith(
        "dpevolve-model/"
    ):
        raise InputError(f"{source} is not a dpevolve model (format {FORMAT})")
    if payload["format"] != FORMAT:
        raise InputError(
            f"{source} was saved by another dpevolve version ({payload['format']}; this one "
            f"reads {FORMAT}): fit and save it again"
        )
    model = cls(**payload["params"])
    for key, value in payload["released"].items():
        setattr(model, key, value)
    setattr(model, "ledger_", SharedLedger(payload["ledger"]))  # noqa: B010 (a read-back type)
    state = payload.get("sample_state")
    if state is not None:
        generator = getattr(np.random, state["bit_generator"])()
        generator.state = state
        setattr(model, "_sample_rng", np.random.Generator(generator))  # noqa: B010
    return model
