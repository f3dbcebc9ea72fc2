"""actune's environments in the field's other forms, and theirs in actune's loop: TRL's ``environment_factory``
classes (:mod:`actune.bridges.trl`), OpenEnv servers (:mod:`actune.bridges.openenv`), verifiers environments
(:mod:`actune.bridges.verifiers`); what they share is :mod:`actune.bridges.shared`."""
