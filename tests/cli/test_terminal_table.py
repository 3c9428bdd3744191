"""The terminal rendering of tables (pure): cut cells end in an ellipsis, numbers are
right-aligned with one precision per column, and too-wide tables become one block per record."""

from __future__ import annotations

import datetime as dt
import decimal

from lakectl.cli.terminal_table import Bar, cut, draw_bar, format_column, render

COLUMNS = ["id", "name", "amount", "day"]
ROWS = [
    (1, "plain", 1.5, dt.date(2024, 1, 1)),
    (22, "a long note " * 6, -2.25, dt.date(2024, 1, 2)),
    (333, None, None, dt.date(2024, 1, 3)),
]


def test_a_table_that_fits_is_shown_whole_with_numbers_right_aligned() -> None:
    assert render("t @ version 2", COLUMNS, ROWS, 120) == [
        "t @ version 2",
        " id │ name                                                                     │ amount │ day",
        "────┼──────────────────────────────────────────────────────────────────────────┼────────┼───────────",
        "  1 │ plain                                                                    │   1.50 │ 2024-01-01",
        " 22 │ a long note a long note a long note a long note a long note a long note  │  -2.25 │ 2024-01-02",
        "333 │ NULL                                                                     │   NULL │ 2024-01-03",
    ]  # fmt: skip


def test_the_widest_text_column_is_cut_with_an_ellipsis_to_fit() -> None:
    lines = render(None, COLUMNS, ROWS, 60)
    assert lines == [
        " id │ name                             │ amount │ day",
        "────┼──────────────────────────────────┼────────┼───────────",
        "  1 │ plain                            │   1.50 │ 2024-01-01",
        " 22 │ a long note a long note a long … │  -2.25 │ 2024-01-02",
        "333 │ NULL                             │   NULL │ 2024-01-03",
    ]
    assert max(len(line) for line in lines) <= 60


def test_too_narrow_for_cut_columns_shows_one_record_per_block() -> None:
    assert render(None, COLUMNS, ROWS[:2], 30) == [
        "-[ RECORD 1 ]-----------------",
        "id     │ 1",
        "name   │ plain",
        "amount │ 1.50",
        "day    │ 2024-01-01",
        "-[ RECORD 2 ]-----------------",
        "id     │ 22",
        "name   │ a long note a long …",
        "amount │ -2.25",
        "day    │ 2024-01-02",
    ]


def test_floats_share_one_precision_and_tiny_ones_switch_to_scientific() -> None:
    assert format_column([1.5, 10.0, None, -0.125]) == (["1.500", "10.000", "NULL", "-0.125"], True)
    assert format_column([1.5, 1e-9]) == (["1.5e+00", "1.0e-09"], True)
    assert format_column([decimal.Decimal("1.20"), 3]) == (["1.20", "3"], True)
    assert format_column([float("nan"), 2.5]) == (["nan", "2.5"], True)


def test_numbers_formatted_as_text_are_right_aligned_but_codes_are_not() -> None:
    assert format_column(["1,234", "-", "12.5 MB", "0"])[1] is True
    assert format_column(["S01", "12"])[1] is False
    assert format_column(["007"])[1] is False
    assert format_column([True, False])[1] is False


def test_cut_counts_terminal_cells_of_wide_characters() -> None:
    assert cut("日本語テキスト", 7) == "日本語…"
    assert cut("short", 5) == "short"


def test_bars_scale_to_the_largest_value_and_mark_the_average() -> None:
    assert draw_bar(10, [10, 5, 0.01], 10) == "█" * 10
    assert draw_bar(5, [10, 5], 10, mark=8) == "█████   ┆"
    assert draw_bar(0.01, [10, 0.01], 10) == "▏"
    assert draw_bar(None, [10], 10) == ""
    lines = render(None, ["value", "rows"], [["a", "10"], ["b", "5"]], 40, [Bar("bar", [10, 5])])
    assert lines == [
        "value │ rows │ bar",
        "──────┼──────┼───────────────────────",
        "a     │   10 │ " + "█" * 22,
        "b     │    5 │ " + "█" * 11,
    ]


def test_bars_are_left_out_when_there_is_no_room() -> None:
    lines = render(None, ["value"], [["x" * 30]], 36, [Bar("bar", [1])])
    assert lines[0] == "value"


def test_long_lines_fold_between_words_under_their_start() -> None:
    from lakectl.cli.output import fold

    text = "  properties: clean.retain=7d, orc.compress=SNAPPY, write.target-file-size=128MB"
    assert fold(text, 40) == (
        "  properties: clean.retain=7d,\n"
        "      orc.compress=SNAPPY,\n"
        "      write.target-file-size=128MB"
    )
    assert fold("short", 40) == "short"


def test_short_texts_are_never_cut_only_long_ones() -> None:
    rows = [["2024-01-02 10:00:00", "apply-updates", "inserted=8, updated=4, deleted=1"]]
    columns = ["committed (UTC)", "operation", "counts"]
    assert (
        render(None, columns, rows, 50)[2] == "2024-01-02 10:00:00 │ apply-updates │ inserted=8,…"
    )
    # without a long text to cut, a table too wide becomes blocks
    assert render(None, columns[:2], [rows[0][:2]], 30)[0].startswith("-[ RECORD 1 ]")


def test_several_bar_columns_stay_aligned() -> None:
    bars = [Bar("deltas", [3, 1]), Bar("bytes", [100, 100])]
    assert render(None, ["p"], [["a"], ["b"]], 30, bars) == [
        "p │ deltas     │ bytes",
        "──┼────────────┼───────────",
        "a │ ██████████ │ ██████████",
        "b │ ███        │ ██████████",
    ]
