"""Arrays with named axes: the factor algebra of the estimator.

A factor lives on the cells of a clique, one axis per attribute, the axes always in the
domain's order; so a factor on a subset of another's attributes broadcasts against it by
a reshape alone, and a marginal is a sum over the other axes (Koller & Friedman 2009,
ch. 10; McKenna, Sheldon & Miklau 2019, sec. 4).
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from dpevolve.measurements import Clique


def positions(within: Clique, attrs: Sequence[str]) -> tuple[int, ...]:
    """Axes of ``within`` that carry ``attrs`` (each must be present)."""
    return tuple(within.index(a) for a in attrs)


def broadcast_shape(values: np.ndarray, attrs: Clique, target: Clique) -> np.ndarray:
    """``values`` on ``attrs`` reshaped to broadcast against an array on ``target``.

    ``attrs`` must be a subsequence of ``target`` (both in domain order): the axes
    then already come in the right order and missing ones become length 1.
    """
    shape = [1] * len(target)
    last = -1
    for attr, size in zip(attrs, values.shape, strict=True):
        axis = target.index(attr)
        if axis <= last:
            raise ValueError("factor axes must follow the domain order")
        shape[axis] = size
        last = axis
    return values.reshape(shape)


def combine_into(
    ufunc: np.ufunc, target: np.ndarray, target_attrs: Clique, values: np.ndarray, attrs: Clique
) -> None:
    """``target = ufunc(target, values)`` in place, ``values`` on a subsequence ``attrs``
    of ``target_attrs`` broadcast over the rest.

    Neighbouring axes of one kind (in ``attrs`` or not) are merged first, so numpy
    broadcasts over a few long axes rather than many short interleaved ones.
    """
    if not target.flags.c_contiguous:
        raise ValueError("combine_into needs a contiguous target")
    blocks, shaped = _broadcast_plan(target.shape, target_attrs, attrs)
    view = target.reshape(blocks)
    ufunc(view, values.reshape(shaped), out=view)


@lru_cache(maxsize=4096)
def _broadcast_plan(
    shape: tuple[int, ...], target_attrs: Clique, attrs: Clique
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Merged block shape of the target and the matching shape of the broadcast values."""
    positions_in = [target_attrs.index(a) for a in attrs]
    if positions_in != sorted(positions_in):
        raise ValueError("factor axes must follow the domain order")
    blocks, kinds = _blocks(shape, [a in attrs for a in target_attrs])
    return blocks, tuple(b if k else 1 for b, k in zip(blocks, kinds, strict=True))


def _blocks(shape: tuple[int, ...], kept: list[bool]) -> tuple[tuple[int, ...], list[bool]]:
    """Merge neighbouring axes of the same kind (kept or summed): a free reshape."""
    blocks: list[int] = []
    kinds: list[bool] = []
    for size, k in zip(shape, kept, strict=True):
        if kinds and kinds[-1] == k:
            blocks[-1] *= size
        else:
            blocks.append(size)
            kinds.append(k)
    return tuple(blocks), kinds


# Below this many cells numpy's own multi-axis sum costs less than the planned passes.
SMALL = 4096
# A short last axis is summed slice by slice (strided adds): a reduction along it would
# pay numpy's per-output overhead.
SHORT_AXIS = 16


def sum_to(
    values: np.ndarray, attrs: Clique, keep: Clique, *, keepdims: bool = False
) -> np.ndarray:
    """``values`` on ``attrs`` summed down to ``keep`` (a subsequence of ``attrs``).

    Neighbouring axes of one kind are merged (a free reshape), then the summed blocks go
    one at a time, the largest first, so the first pass shrinks the array most and
    every pass is a single-axis sum, a few nanoseconds per cell where numpy's own
    multi-axis sum over interleaved axes takes up to ten times longer.
    """
    plan = _sum_plan(values.shape, attrs, keep)
    if plan is None:
        return values
    drop, blocks, steps, kept_shape, keepdims_shape = plan
    if values.size <= SMALL:
        summed = np.add.reduce(values, axis=drop)
    else:
        summed = np.ascontiguousarray(values).reshape(blocks)
        for axis, after in steps:
            summed = _sum_axis(summed, axis).reshape(after)
    return summed.reshape(keepdims_shape if keepdims else kept_shape)


SumPlan = tuple[
    tuple[int, ...],
    tuple[int, ...],
    tuple[tuple[int, tuple[int, ...]], ...],
    tuple[int, ...],
    tuple[int, ...],
]


@lru_cache(maxsize=4096)
def _sum_plan(shape: tuple[int, ...], attrs: Clique, keep: Clique) -> SumPlan | None:
    """The summed axes, the merged blocks, each pass (axis, shape after) largest first,
    and the result's shapes without and with the summed axes kept as length 1."""
    kept = [a in keep for a in attrs]
    if all(kept):
        return None
    drop = tuple(i for i, k in enumerate(kept) if not k)
    blocks, kinds = _blocks(shape, kept)
    current = list(blocks)
    steps = []
    for axis in sorted((i for i, k in enumerate(kinds) if not k), key=lambda i: -blocks[i]):
        current[axis] = 1
        steps.append((axis, tuple(current)))
    kept_shape = tuple(s for s, k in zip(shape, kept, strict=True) if k)
    keepdims_shape = tuple(s if k else 1 for s, k in zip(shape, kept, strict=True))
    return drop, blocks, tuple(steps), kept_shape, keepdims_shape


def _sum_axis(values: np.ndarray, axis: int) -> np.ndarray:
    if axis == values.ndim - 1 and values.shape[axis] <= SHORT_AXIS:
        out = values[..., 0].copy()
        for j in range(1, values.shape[axis]):
            out += values[..., j]
        return out
    letters = string.ascii_letters[: values.ndim]
    return np.einsum(f"{letters}->{letters.replace(letters[axis], '')}", values)


@lru_cache(maxsize=4096)
def nesting(
    shape: tuple[int, ...], attrs: Clique, parts: tuple[Clique, ...]
) -> tuple[tuple[int, int | None], ...]:
    """For ``parts`` (subsequences of ``attrs``, cell shape ``shape``), each part's
    index with the part it nests in: the smallest other part that contains it (an
    equal part counts when listed earlier), ``None`` for a part no other contains.
    Listed largest first, so a part always comes after the one it nests in."""
    size = dict(zip(attrs, shape, strict=True))
    cells = [math.prod(size[a] for a in part) for part in parts]
    order = sorted(range(len(parts)), key=lambda k: (-cells[k], -len(parts[k]), k))
    out: list[tuple[int, int | None]] = []
    for pos, k in enumerate(order):
        wanted = set(parts[k])
        holders = [j for j in order[:pos] if wanted <= set(parts[j])]
        out.append((k, min(holders, key=lambda j: cells[j], default=None)))
    return tuple(out)


def marginals(values: np.ndarray, attrs: Clique, parts: Sequence[Clique]) -> list[np.ndarray]:
    """``values`` summed down to each of ``parts``, each from the smallest marginal
    already computed that contains it, so ``values`` is read once per part that no
    other part contains."""
    out: list[np.ndarray] = [values] * len(parts)
    for k, holder in nesting(values.shape, attrs, tuple(parts)):
        if holder is None:
            out[k] = sum_to(values, attrs, parts[k])
        else:
            out[k] = sum_to(out[holder], parts[holder], parts[k])
    return out


def add_all_into(
    target: np.ndarray, target_attrs: Clique, items: Sequence[tuple[Clique, np.ndarray]]
) -> None:
    """Add every ``(attrs, values)`` of ``items`` into ``target`` (broadcast), nested
    items first into the item that holds them, so ``target`` takes one pass per item
    that no other item contains."""
    parts = tuple(a for a, _ in items)
    merged: dict[int, np.ndarray] = {}
    for k, holder in reversed(nesting(target.shape, target_attrs, parts)):
        values = merged.get(k, items[k][1])
        if holder is None:
            combine_into(np.add, target, target_attrs, values, parts[k])
            continue
        if holder not in merged:
            merged[holder] = np.array(items[holder][1], dtype=float)
        combine_into(np.add, merged[holder], parts[holder], values, parts[k])
