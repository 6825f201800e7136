"""Saving and loading a fitted :class:`~dpevolve.synthesizer.Synthesizer`.

A saved model holds its parameters and what the fit released (the final population,
the synthetic table, the ledger, the per-round history): functions of the release and
public inputs only, never a private record. Loading needs no private data, and
sampling from a loaded model costs no privacy.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, TypeVar

from dpevolve.data.io import atomic_write
from dpevolve.errors import InputError
from dpevolve.estimator import EstimatorParams

# The facade's class, passed in: this module never imports the facade.
Model = TypeVar("Model", bound=EstimatorParams)

FORMAT = "dpevolve-model/1"

# The numpy Generator that post-processes samples: kept so a loaded model samples on.
_KEPT_PRIVATE_STATE = ("_sample_rng",)


def save_model(model: EstimatorParams, path: str | Path, *, force: bool = False) -> None:
    """Write ``model`` (fitted) to ``path``, atomically; never overwrites unless ``force``."""
    target = Path(path)
    if target.exists() and not force:
        raise InputError(f"{target} exists (pass force=True to overwrite)")
    fitted = {k: v for k, v in vars(model).items() if k.endswith("_") and not k.startswith("_")}
    if "ledger_" not in fitted:
        raise InputError("call fit() before save()")
    state = {k: getattr(model, k) for k in _KEPT_PRIVATE_STATE if hasattr(model, k)}
    # A backend may hold a cluster connection: it is not part of the released model.
    params = {k: v for k, v in model.get_params(deep=False).items() if k != "backend"}
    payload = {"format": FORMAT, "class": type(model).__name__, "params": params}
    payload["fitted"], payload["state"] = fitted, state
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    atomic_write(target, lambda tmp: tmp.write_bytes(data))


def load_model(path: str | Path, cls: type[Model]) -> Model:
    """Read a model of class ``cls`` written by :func:`save_model` (only load files you
    trust: pickle)."""
    source = Path(path)
    if not source.is_file():
        raise InputError(f"model file not found: {source}")
    try:
        payload: dict[str, Any] = pickle.loads(source.read_bytes())
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError) as exc:
        raise InputError(f"{source} is not a dpevolve model ({type(exc).__name__})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise InputError(f"{source} is not a dpevolve model (format {FORMAT})")
    model = cls(**payload["params"])
    for key, value in {**payload["fitted"], **payload["state"]}.items():
        setattr(model, key, value)
    return model
