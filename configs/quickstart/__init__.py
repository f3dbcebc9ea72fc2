"""The quickstart presets (``smoke.yaml``, ``full.yaml``), installed as ``actune.presets`` so that
``actune quickstart --preset full`` works from a wheel as well as from the source tree."""
