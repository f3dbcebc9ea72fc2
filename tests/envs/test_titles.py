from __future__ import annotations

from actune.envs.titles import base_title, normalize_title


def test_normalize_title_forgives_case_underscores_entities_spaces_and_quotes() -> None:
    assert normalize_title("Scott_Derrickson") == "scott derrickson"
    assert normalize_title("  SCOTT   derrickson ") == "scott derrickson"
    assert normalize_title("&quot;Q&quot; Is for Quarry") == '"q" is for quarry'
    assert normalize_title('"Q" Is for Quarry') == '"q" is for quarry'  # inner quotes are kept
    assert normalize_title('"Paris"') == "paris"  # a wrapping pair is not
    assert normalize_title("Ｐａｒｉｓ") == "paris"  # NFKC: full-width letters
    assert normalize_title("Paris.") == normalize_title("Paris")
    assert normalize_title("   ") == ""


def test_base_title_drops_one_trailing_parenthetical() -> None:
    assert base_title("Paris (1994 TV series)") == "paris"
    assert base_title("Ed Wood (film)") == "ed wood"
    assert base_title("(Old Dogs, Children and) Watermelon Wine") == "(old dogs, children and) watermelon wine"
    assert base_title("(Film)") == "(film)"  # nothing would be left
