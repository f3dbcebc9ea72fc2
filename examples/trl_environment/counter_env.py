"""A TRL-style environment, as TRL's ``GRPOTrainer(environment_factory=Counter)`` takes it, played by actune's
agent loop through the plug-in mechanism: ``env.name: examples.trl_environment.counter_env:make_env``.

The class knows nothing of actune: ``reset(**example)`` with the example's columns, a public method per tool (typed
argument, docstring with ``Args:``) and ``get_reward``. ``actune_environment`` makes each tool an action
(``add[amount]``) and adds ``finish[answer]``, since actune's loop ends an episode on an answer.
"""

from actune.bridges.trl import actune_environment


class Counter:
    """Reach the question's number by adding amounts."""

    def reset(self, **example) -> str:
        self.total = 0
        return "The total is 0."

    def add(self, amount: str) -> str:
        """Adds an amount to the total and shows the new total.

        Args:
            amount: the whole number to add.
        """
        try:
            self.total += int(amount)
        except ValueError:
            return f"{amount!r} is not a whole number."
        return f"The total is {self.total}."


make_env = actune_environment(Counter, name="counter")
