"""``actune run --env`` and ``actune import --env`` take any environment name, checked as the command line is parsed:
a built-in, an entry point, ``module:function``; anything else is a usage error (exit 2) saying what would work."""

from __future__ import annotations

import pytest

from actune.cli import build_parser, main
from actune.cli.env_argument import IMPORT_BUILTINS

INVENTORY = "examples.inventory.inventory_env:make_env"


def test_run_takes_an_env_by_import_path_and_an_agent_override_beside_it() -> None:
    args = build_parser().parse_args(["run", "--env", INVENTORY, "exemplar_set=examples/inventory/exemplars.json",
                                      "--question", "Who supplies the item stored on shelf C2?"])
    assert (args.env, args.items) == (INVENTORY, ["exemplar_set=examples/inventory/exemplars.json"])
    assert build_parser().parse_args(["run", "--question", "q"]).env == "wiki"


def test_run_help_after_a_custom_env_parses_and_says_what_env_takes(capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(["run", "--env", INVENTORY, "--help"])
    assert e.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "module:function (e.g. examples.inventory.inventory_env:make_env, from the repository root)" in out


@pytest.mark.parametrize("argv", [["run", "--question", "q"], ["import", "x.jsonl", "--format", "openai"]])
def test_an_unknown_env_is_a_usage_error_listing_what_would_work(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main([*argv, "--env", "webshop"])
    assert e.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert ("argument --env: unknown environment 'webshop': not a built-in (wiki, fever, docqa, alfworld), nor an "
            "entry point of group actune.envs") in err
    assert "module:function (e.g. examples.inventory.inventory_env:make_env)" in err


def test_import_takes_a_custom_env_but_not_a_builtin_that_needs_its_data(capsys) -> None:
    from actune.bootstrap.importers import IMPORT_ENVS

    assert IMPORT_BUILTINS == IMPORT_ENVS
    args = build_parser().parse_args(["import", "x.jsonl", "--format", "openai", "--env", INVENTORY])
    assert args.env == INVENTORY
    with pytest.raises(SystemExit) as e:
        main(["import", "x.jsonl", "--format", "openai", "--env", "docqa"])
    assert e.value.code == 2
    assert "argument --env: 'docqa': imported steps are checked against an environment whose actions are known " \
           "without its data: wiki, fever, or your own" in " ".join(capsys.readouterr().err.split())


def test_run_plays_an_episode_in_a_custom_env(monkeypatch, capsys) -> None:
    """``actune run --env module:function --endpoint URL --json`` against a FAKE OpenAI server: the env is built
    from its import path, prompted with its own actions, and the record says the env's own name."""
    import json

    from agent.fakes import FakeStreamingAPI

    import actune.llm
    from actune.records.trajectory import Trajectory

    fake = FakeStreamingAPI([" Shelf C2 first.\nAction 1: shelf[C2]",
                             " The drill bit set.\nAction 2: lookup[drill bit set]",
                             " Voltra supplies it.\nAction 3: finish[Voltra]"])
    real = actune.llm.LLMClient
    monkeypatch.setattr(actune.llm, "LLMClient", lambda cfg: real(cfg, transport=fake.transport))
    argv = ["run", "--env", INVENTORY, "exemplar_set=examples/inventory/exemplars.json", "--endpoint",
            "http://fake/v1", "--model", "m", "--json", "--question", "Who supplies the item stored on shelf C2?",
            "--answer", "Voltra"]
    assert main(argv) == 0
    traj = Trajectory.from_json(capsys.readouterr().out.strip().splitlines()[-1])
    assert (traj.task.env, traj.prediction, traj.correct) == ("inventory", "Voltra", True)
    assert traj.info["env_info"]["titles"] == ["shelf C2", "drill bit set"]
    prompt = fake.requests[0][1]["prompt"]
    assert "shelf[location]: lists the items stored on a shelf, e.g. shelf[B1].\n" in prompt
    assert json.dumps(traj.info["prompt"]["instruction"]).count("lookup[item]") == 1
