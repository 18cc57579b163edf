"""Vector infos split back into one dict per sub-env (the inverse of ``batch_infos``)."""

from __future__ import annotations

from typing import Any

import numpy as np


def unbatch_infos(infos: dict[str, Any], num_envs: int) -> list[dict[str, Any]]:
    """One info dict per sub-env from Gymnasium's vector layout (``key`` arrays, ``_key`` masks).

    A sub-env's dict holds the keys its mask sets; numeric array items come back as Python
    ``bool``/``int``/``float`` and nested dicts are split likewise, so that
    :func:`~dreamgym_env.envs.vector.batch_infos` over the result gives ``infos`` again.
    A key without a mask is given to every sub-env.
    """
    split: list[dict[str, Any]] = [{} for _ in range(num_envs)]
    for key, value in infos.items():
        if key.startswith("_") and key[1:] in infos:
            continue  # a mask
        mask = infos.get("_" + key)
        present = np.ones(num_envs, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        items = unbatch_infos(value, num_envs) if isinstance(value, dict) else None
        for i in np.flatnonzero(present):
            split[i][key] = items[i] if items is not None else _item(value, int(i))
    return split


def _item(values: Any, i: int) -> Any:
    """Item ``i`` of a batched info value, numeric items as Python scalars."""
    if isinstance(values, np.ndarray) and values.dtype != object:
        return values[i].item()
    return values[i]
