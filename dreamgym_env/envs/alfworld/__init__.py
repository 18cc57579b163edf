"""The ALFWorld domain pack: seeded household rooms, ALFWorld's commands, tasks, reference env, expert.

Not registered yet: the domain is :class:`~dreamgym_env.envs.alfworld.domain.ALFWorldDomain`.
"""
