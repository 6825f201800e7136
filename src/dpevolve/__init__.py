"""dpevolve: differentially private synthetic tables.

The facade (:class:`Synthesizer`) runs a method (:mod:`dpevolve.method`): by default the
adaptive engine (:mod:`dpevolve.engine`: marginals chosen where the model is most wrong,
one graphical model, fresh rows); or, by name, the Private Evolution family
(:mod:`dpevolve.pe`: votes, Blowfish policies, PubMix, the public pilot, the hybrid tail).
Presets are named methods (:mod:`dpevolve.presets`); docs/architecture.md maps the rest.

>>> from dpevolve import Synthesizer, load_schema
>>> model = Synthesizer(load_schema("schema.yaml"), epsilon=1.0, delta=1e-5)  # doctest: +SKIP
>>> synthetic = model.fit(private_df).sample()                                 # doctest: +SKIP
>>> model.ledger_.to_dict()["epsilon"]                                         # doctest: +SKIP
>>> Synthesizer(load_schema("schema.yaml"), method="bfsoft", rho=1e-3)         # doctest: +SKIP
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from dpevolve.errors import DPEvolveError, InputError

if TYPE_CHECKING:
    from dpevolve.data.schema import Schema, load_schema
    from dpevolve.pe.policy.blowfish import Policy
    from dpevolve.synthesizer import Synthesizer

try:
    __version__ = version("dpevolve")
except PackageNotFoundError:  # a source tree on sys.path, not installed
    __version__ = "0+unknown"

__all__ = [
    "DPEvolveError",
    "InputError",
    "Schema",
    "Synthesizer",
    "__version__",
    "load_policy",
    "load_schema",
]


def load_policy(path: str, schema: Schema) -> Policy:
    """Read a Blowfish policy YAML file, validated against ``schema``."""
    from dpevolve.pe.policy.blowfish import load_policy as _load

    return _load(path, schema)


def __getattr__(name: str) -> Any:
    # The engine pulls in scipy and dp-accounting, the schema pandas: each is imported on
    # first use only (`dpevolve --version` needs neither).
    if name == "Synthesizer":
        from dpevolve.synthesizer import Synthesizer

        return Synthesizer
    if name in ("Schema", "load_schema"):
        from dpevolve.data import schema

        return getattr(schema, name)
    raise AttributeError(name)
