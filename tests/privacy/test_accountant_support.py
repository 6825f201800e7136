"""Every accountant supports exactly the events it composes.

Each composition method answers ``supports`` and composes from one dispatch
(:meth:`dpevolve.privacy.accountants.Composition.part`); here every method and the
:class:`~dpevolve.privacy.Accountant` are fed one event of every kind that
``privacy/events.py`` defines (found by inspection, so a new kind fails this test until
it has examples): where ``supports`` says yes, composition gives a finite epsilon;
where it says no, composition refuses with a :class:`~dpevolve.errors.PrivacyError`
naming the event. Before, ``Pld`` said yes to any event but a discrete Gaussian.
"""

from __future__ import annotations

import inspect
import itertools
import math

import pytest

from dpevolve.errors import PrivacyError
from dpevolve.privacy import Accountant, events
from dpevolve.privacy.accountants import Basic, GaussianExact, Pld, Rdp, Zcdp

HALF, TWO = math.log(0.4), math.log(0.6)

#: At least one event of every kind, costly and free where a kind can be both.
EXAMPLES: dict[type, list[events.Event]] = {
    events.GaussianEvent: [
        events.GaussianEvent(1.0, 2.0),
        events.GaussianEvent(1.0, 2.0, discrete=True),
        events.GaussianEvent(0.0, 2.0),
        events.GaussianEvent(0.0, 2.0, discrete=True),
    ],
    events.PrivacyLossPairEvent: [
        events.PrivacyLossPairEvent({0: TWO, 1: HALF}, {0: HALF, 1: TWO}),
        events.PrivacyLossPairEvent(
            {0: TWO, 1: HALF}, {0: HALF, 1: TWO}, claimed_epsilon=0.5, claimed_delta=0.0
        ),
    ],
    events.ApproxDPEvent: [events.ApproxDPEvent(0.5, 1e-7), events.ApproxDPEvent(0.0, 0.0)],
    events.ZeroCostEvent: [events.ZeroCostEvent("pilot")],
    events.ExponentialEvent: [events.ExponentialEvent(0.5, 1.0)],
}
METHODS = [GaussianExact(), Pld(), Rdp(), Zcdp(), Basic()]
DELTA = 1e-5


def event_kinds() -> set[type]:
    """Every event class of ``privacy/events.py``: the classes there with a claim."""
    return {
        cls
        for _, cls in inspect.getmembers(events, inspect.isclass)
        if cls.__module__ == events.__name__ and callable(getattr(cls, "claim", None))
    }


def test_every_event_kind_has_examples_and_is_known_to_the_accountants() -> None:
    kinds = event_kinds()
    assert kinds == set(events.EVENT_TYPES)
    assert kinds == set(EXAMPLES), "add examples of the new event kind here"


def _every_event() -> list[events.Event]:
    return [e for kind in sorted(EXAMPLES, key=lambda k: k.__name__) for e in EXAMPLES[kind]]


def _name(event: events.Event) -> str:
    """A short test id: the kind, whether it is discrete and whether it is free."""
    discrete = "-discrete" if getattr(event, "discrete", False) else ""
    return f"{type(event).__name__}{discrete}{'-free' if event.is_free else ''}"


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
@pytest.mark.parametrize("event", _every_event(), ids=_name)
def test_a_method_supports_exactly_what_it_composes(method, event) -> None:
    if method.supports([event]):
        epsilon, delta = method.epsilon([event], DELTA)
        assert 0.0 <= epsilon < math.inf and 0.0 <= delta < 1.0
    else:
        with pytest.raises(PrivacyError, match=type(event).__name__):
            method.epsilon([event], DELTA)


@pytest.mark.parametrize("event", _every_event(), ids=_name)
def test_the_accountant_supports_exactly_what_it_composes(event) -> None:
    accountant = Accountant(DELTA)
    if accountant.supports([event]):
        assert 0.0 <= accountant.epsilon([event]).epsilon < math.inf
    else:
        with pytest.raises(PrivacyError):
            accountant.epsilon([event])


def test_pld_refuses_only_the_discrete_gaussian() -> None:
    refused = [e for e in _every_event() if not Pld().supports([e])]
    assert refused == [events.GaussianEvent(1.0, 2.0, discrete=True)]


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.name)
def test_a_list_is_supported_when_each_of_its_events_is(method) -> None:
    for a, b in itertools.combinations(_every_event(), 2):
        both = method.supports([a]) and method.supports([b])
        assert method.supports([a, b]) == both
        assert not method.supports([a, object()])  # not an event: nothing composes it
