"""A synthetic encyclopedia of invented people, companies and cities, with graded questions.

``actune world generate --seed S --out DIR`` writes it; :func:`write_world` does the same from Python.
"""

from __future__ import annotations

from actune.world.config import WORLD_VERSION, QuestionMix, WorldConfig
from actune.world.generate import GeneratedWorld, default_world_dir, generate_world, write_world

__all__ = ["WORLD_VERSION", "QuestionMix", "WorldConfig", "GeneratedWorld", "generate_world", "write_world",
           "default_world_dir"]
