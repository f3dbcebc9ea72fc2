"""A warehouse inventory as an actune environment: your own tools, not Wikipedia.

A run config names it by import path, from the repository root (a module that is not installed is imported
from the current directory)::

    env:
      name: examples.inventory.inventory_env:make_env
      options: {data: examples/inventory/inventory.jsonl}

Actions (declared once in ``InventoryEnv.actions``: the instruction, the step parser, ``actune import`` and
``actune export`` all read them from there):

- ``lookup[item]``: an item's SKU, stock, price, shelf and supplier, by name or SKU (case aside; a name that
  only one item's name contains is enough: ``lookup[hammer]``);
- ``shelf[location]``: the items a shelf holds (``shelf[B1]``);
- ``finish[answer]``: the answer; ends the episode.

Grounding: every step's ``info["titles"]`` names what it read, the item's name or ``shelf B1``; a task's
``meta.supporting_titles`` lists those its answer rests on, and the judge keeps an episode only when it read
them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from actune.config import ConfigError
from actune.envs.actions import ActionSpec, ToolEnvironment
from actune.envs.base import StepResult
from actune.envs.config import EnvConfig
from actune.envs.observation import clip_observation
from actune.envs.titles import normalize_title
from actune.records.jsonl import iter_jsonl_objects
from actune.records.task_record import Task

__all__ = ["DEFAULT_DATA", "InventoryEnv", "Item", "make_env", "read_items"]

DEFAULT_DATA = Path(__file__).with_name("inventory.jsonl")
"""The example's stock list, used when ``options.data`` is not given."""

OPTIONS = ("data",)


@dataclass(frozen=True)
class Item:
    """One stock line of the data file (``{"item", "sku", "stock", "price_eur", "shelf", "supplier"}``)."""

    item: str
    sku: str
    stock: int
    price_eur: float
    shelf: str
    supplier: str

    def describe(self) -> str:
        return (f"{self.item} (SKU {self.sku}): {self.stock} in stock, {self.price_eur:.2f} EUR each, "
                f"on shelf {self.shelf}, supplied by {self.supplier}.")


def read_items(path: str | Path) -> list[Item]:
    """The items of a JSONL stock list; a bad line is a ValueError naming ``file:line``."""
    if not Path(path).is_file():
        raise ConfigError(f"env.options.data: {path}: file not found")
    items = []
    for where, rec in iter_jsonl_objects(path):
        try:
            items.append(Item(str(rec["item"]), str(rec["sku"]), int(rec["stock"]), float(rec["price_eur"]),
                              str(rec["shelf"]).upper(), str(rec["supplier"])))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{where}: a stock line needs item, sku, stock, price_eur, shelf, supplier ({e})") from e
    if not items:
        raise ValueError(f"{path}: holds no items")
    return items


class InventoryEnv(ToolEnvironment):
    """Look items up, list shelves, answer. Deterministic: the same action always gets the same observation."""

    name = "inventory"
    finish_action = "finish"
    actions = (
        ActionSpec("lookup", "item", "returns the item's SKU, stock, price, shelf and supplier; give its name or "
                                     "SKU, e.g. lookup[claw hammer]."),
        ActionSpec("shelf", "location", "lists the items stored on a shelf, e.g. shelf[B1]."),
        ActionSpec("finish", "answer", "returns the answer and finishes the task."),
    )

    def __init__(self, items: list[Item], max_observation_chars: int | None = 2000) -> None:
        self.items = items
        self.by_key = {normalize_title(k): i for i in items for k in (i.item, i.sku)}
        self.shelves: dict[str, list[Item]] = {}
        for i in items:
            self.shelves.setdefault(i.shelf, []).append(i)
        self.max_observation_chars = max_observation_chars
        self.reset(Task(id="", question="", env=self.name))

    def reset(self, task: Task, seed: int | None = None) -> str:
        self.task = task
        self.answer = None
        return ""

    def _result(self, observation: str, titles: list[str] | None = None, **info: Any) -> StepResult:
        return StepResult(clip_observation(observation, self.max_observation_chars), info.pop("done", False),
                          {"titles": titles or [], **info})

    def _find(self, query: str) -> tuple[Item | None, list[Item]]:
        """The item ``query`` names, else None and the items whose names hold all its words."""
        key = normalize_title(query)
        if key in self.by_key:
            return self.by_key[key], []
        words = key.split()
        partial = [i for i in self.items if all(w in normalize_title(i.item).split() for w in words)]
        return (partial[0], []) if len(partial) == 1 else (None, partial)

    def act_lookup(self, query: str) -> StepResult:
        item, candidates = self._find(query)
        if item is not None:
            return self._result(item.describe(), titles=[item.item])
        if candidates:
            names = ", ".join(i.item for i in candidates)
            return self._result(f"Several items match {query!r}: {names}. Look one up by its full name.")
        return self._result(f"There is no item {query!r}. Items: {', '.join(i.item for i in self.items)}.")

    def act_shelf(self, location: str) -> StepResult:
        code = normalize_title(location).removeprefix("shelf").strip().upper()
        if code not in self.shelves:
            return self._result(f"There is no shelf {location!r}. Shelves: {', '.join(sorted(self.shelves))}.")
        names = ", ".join(i.item for i in self.shelves[code])
        return self._result(f"Shelf {code} holds: {names}.", titles=[f"shelf {code}"])

    def act_finish(self, answer: str) -> StepResult:
        self.answer = answer
        return self._result("Episode finished.", done=True, answer=answer)


def make_env(cfg: EnvConfig) -> InventoryEnv:
    """The factory ``env.name`` names: the stock list is ``env.options.data`` (default: this folder's)."""
    unknown = sorted(set(cfg.options) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"env.options: unknown key(s) {unknown}; the inventory takes {', '.join(OPTIONS)}")
    return InventoryEnv(read_items(cfg.options.get("data") or DEFAULT_DATA), cfg.max_observation_chars)
