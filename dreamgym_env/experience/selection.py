"""Which experience model an env gets when none is passed."""

from __future__ import annotations

import logging
import os

from dreamgym_env.errors import ConfigurationError
from dreamgym_env.experience.base import ExperienceModel

logger = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("DREAMGYM_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_KEY")


def default_experience_model() -> ExperienceModel:
    """Choose a backend: an endpoint configured in the environment, else a clear error.

    Explicit constructor arguments always win; this runs only when an env got no model.
    """
    configured = [name for name in ENDPOINT_VARIABLES if os.environ.get(name)]
    if configured:
        from dreamgym_env.experience.openai_backend import OpenAIExperienceModel

        model = OpenAIExperienceModel()
        logger.info("experience model: %r (configured by %s)", model, configured[0])
        return model
    raise ConfigurationError(
        "no experience model configured: pass experience_model=... to the env, or set "
        "DREAMGYM_BASE_URL (and DREAMGYM_MODEL, DREAMGYM_API_KEY) to an OpenAI-compatible endpoint"
    )
