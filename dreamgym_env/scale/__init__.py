"""Scale-out on existing engines; import the module you need (each pulls in its own extra).

* :mod:`dreamgym_env.scale.ray_vector`: :class:`~dreamgym_env.scale.ray_vector.RayVectorEnv`, a
  vector env whose sub-env batches live in Ray actors (extra ``ray``).
* :mod:`dreamgym_env.scale.openenv_server`: any DreamGym id served over HTTP/WebSocket with the
  OpenEnv standard, as ``dreamgym serve`` does (extra ``openenv``).
* :mod:`dreamgym_env.scale.infos`: Gymnasium vector infos split back into one dict per sub-env.

docs/scaling.md shows how to run them on one machine and on a cluster.
"""

DEFAULT_MAX_SESSIONS = 64
"""How many sessions at once an OpenEnv server of a DreamGym id takes by default."""
