"""Registration of the DreamGym/* ids with Gymnasium."""

from __future__ import annotations

import gymnasium as gym

from dreamgym_env.envs.domains import get_domain

NAMESPACE = "DreamGym"
SYNTHETIC_IDS = {"webshop": f"{NAMESPACE}/WebShop-v0"}
REFERENCE_IDS = {"webshop": f"{NAMESPACE}/WebShop-Ref-v0"}
REFERENCE_ENTRY_POINTS = {"webshop": "dreamgym_env.envs.webshop.reference_env:WebShopRefEnv"}


def register_envs() -> None:
    """Register every synthetic and reference id; safe to call more than once."""
    for domain_name, env_id in SYNTHETIC_IDS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point="dreamgym_env.envs.synthetic:DreamEnv",
            vector_entry_point="dreamgym_env.envs.vector:make_vector_env",
            kwargs={"domain": domain_name},
            max_episode_steps=get_domain(domain_name).max_episode_steps,
            nondeterministic=True,
        )
    for domain_name, env_id in REFERENCE_IDS.items():
        if env_id in gym.registry:
            continue
        gym.register(
            id=env_id,
            entry_point=REFERENCE_ENTRY_POINTS[domain_name],
            max_episode_steps=get_domain(domain_name).max_episode_steps,
        )
