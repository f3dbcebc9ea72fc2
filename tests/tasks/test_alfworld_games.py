from __future__ import annotations

from pathlib import Path

import pytest

from actune.tasks.alfworld_games import find_games, game_task, load_games, walkthrough

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "alfworld"


def test_tasks_come_from_game_folders(tmp_path: Path) -> None:
    tasks = load_games(SAMPLE)
    assert len(tasks) == 1
    t = tasks[0]
    assert t.id == "look_at_obj_in_light-AlarmClock-None-DeskLamp-323/trial_T20190909_044715_250790"
    assert t.question == "look at the AlarmClock under the DeskLamp"
    assert t.env == "alfworld" and t.answer == "" and t.meta["task_type"] == "examine"
    assert Path(t.meta["gamefile"]).is_file()
    game = tmp_path / "pick_two_obj_and_place-Newspaper-None-Drawer-224" / "trial_1" / "game.tw-pddl"
    game.parent.mkdir(parents=True)
    game.write_text("{}")
    t2 = game_task(game, tmp_path)
    assert (t2.id, t2.question, t2.meta["task_type"]) == (
        "pick_two_obj_and_place-Newspaper-None-Drawer-224/trial_1", "put two Newspapers in/on the Drawer", "puttwo")
    assert find_games(tmp_path) == [game]
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty: no game.tw-pddl files found"):
        load_games(tmp_path / "empty")
    with pytest.raises(FileNotFoundError, match="absent: ALFWorld games folder not found"):
        load_games(tmp_path / "absent")


def test_walkthrough_is_the_games_stored_command_list() -> None:
    game = find_games(SAMPLE)[0]
    assert walkthrough(game) == ["go to desk 1", "use desklamp 1", "take alarmclock 2 from desk 1"]
