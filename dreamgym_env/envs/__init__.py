"""Environments: the domain-agnostic synthetic env, the vector env and the domain packs."""
