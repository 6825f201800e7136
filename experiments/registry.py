"""Every study, by name."""

from __future__ import annotations

from experiments.runner import Study


def all_studies() -> dict[str, Study]:
    """Study name -> :class:`~experiments.runner.Study`, in running order."""
    from experiments import baselines, pubmix_studies, softvote_studies, studies

    out: dict[str, Study] = {}
    for module in (studies, softvote_studies, baselines, pubmix_studies):
        for study in module.STUDIES:
            out[study.name] = study
    return out


def select(names: list[str]) -> list[Study]:
    """Studies by name; ``all`` or a group name (``bfsoft``, ``pubmix``, ``baselines``)
    selects several."""
    registry = all_studies()
    chosen: list[Study] = []
    for name in names:
        if name == "all":
            matches = list(registry.values())
        elif name in registry:
            matches = [registry[name]]
        else:
            matches = [s for s in registry.values() if s.group == name]
        if not matches:
            known = ", ".join([*registry, "all", "bfsoft", "pubmix", "baselines"])
            raise KeyError(f"unknown study {name!r} (known: {known})")
        chosen += [s for s in matches if s not in chosen]
    return chosen
