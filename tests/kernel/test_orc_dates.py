"""Dates before 1582-10-15 through ORC files: stored in the hybrid Julian calendar as Spark and
Hive store them, read back day for day. The day numbers below are what Spark's
``RebaseDateTime`` gives (checked against it once, over every switch of the calendars)."""

from __future__ import annotations

import datetime as dt
import io

import numpy as np
import pyarrow as pa
import pyarrow.orc as orc

from lakectl.kernel.orc_dates import (
    batch_from_orc,
    batch_to_orc,
    from_orc,
    gregorian_to_julian_days,
    julian_to_gregorian_days,
    to_orc,
)
from lakectl.kernel.schema_map import conformed
from lakectl.table.orc_stats import ColumnStats, stripe_statistics

EPOCH = dt.date(1970, 1, 1)


def _days(day: dt.date) -> int:
    return (day - EPOCH).days


# (stored day, the date it is) as Spark's ORC writer and reader agree on them.
STORED = [
    (-719164, dt.date(1, 1, 1)),
    (-208120, dt.date(1400, 3, 1)),
    (-141428, dt.date(1582, 10, 4)),
    (-141427, dt.date(1582, 10, 15)),
    (19782, dt.date(2024, 2, 29)),
]


def test_stored_days_read_as_the_dates_spark_reads():
    stored = np.array([s for s, _ in STORED])
    assert julian_to_gregorian_days(stored).tolist() == [_days(d) for _, d in STORED]
    assert gregorian_to_julian_days(julian_to_gregorian_days(stored)).tolist() == stored.tolist()


def test_spark_rebase_values_at_the_switches_of_the_calendars():
    # Spark's values (stored day: day read) at a few switches of the difference, BC included.
    spark = {
        -799382: -799378,
        -792160: -792157,
        -755892: -755890,
        -682946: -682944,
        -682945: -682944,
        -646421: -646420,
        -646420: -646420,
        -141428: -141438,
        -141427: -141427,
    }
    assert julian_to_gregorian_days(np.array(list(spark))).tolist() == list(spark.values())
    # A Julian February 29 that the Gregorian calendar lacks reads as March 1.
    feb28 = int(gregorian_to_julian_days(np.array([_days(dt.date(1500, 2, 28))]))[0])
    assert julian_to_gregorian_days(np.array([feb28, feb28 + 1, feb28 + 2])).tolist() == [
        _days(dt.date(1500, 2, 28)),
        _days(dt.date(1500, 3, 1)),
        _days(dt.date(1500, 3, 1)),
    ]
    # The ten days the hybrid calendar skips store as 1582-10-15.
    skipped = np.arange(_days(dt.date(1582, 10, 5)), _days(dt.date(1582, 10, 15)))
    assert set(gregorian_to_julian_days(skipped).tolist()) == {-141427}


def test_every_day_from_year_one_survives_a_write_and_a_read():
    days = np.arange(_days(dt.date(1, 1, 1)), _days(dt.date(1600, 1, 1)))
    skipped = (days >= _days(dt.date(1582, 10, 5))) & (days < _days(dt.date(1582, 10, 15)))
    back = julian_to_gregorian_days(gregorian_to_julian_days(days))
    assert (back[~skipped] == days[~skipped]).all()


def test_nested_dates_nulls_and_slices_are_moved_and_the_rest_is_kept():
    dates = pa.array([dt.date(1400, 3, 1), None, dt.date(2024, 1, 2)], pa.date32())
    stored = to_orc(dates)
    assert stored.cast(pa.int32()).to_pylist() == [-208120, None, _days(dt.date(2024, 1, 2))]
    struct = pa.StructArray.from_arrays(
        [stored, pa.array(["a", "b", "c"])], names=["d", "s"], mask=pa.array([False, False, True])
    )
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 3, 3]), stored)
    maps = pa.MapArray.from_arrays(pa.array([0, 1, 3, 3]), pa.array([1, 2, 3]), stored)
    batch = pa.RecordBatch.from_arrays([struct, lists, maps], names=["st", "l", "m"])
    read = batch_from_orc(batch)
    assert read.column("st").to_pylist() == [
        {"d": dt.date(1400, 3, 1), "s": "a"},
        {"d": None, "s": "b"},
        None,
    ]
    assert read.column("l").to_pylist() == [[dt.date(1400, 3, 1), None], [dt.date(2024, 1, 2)], []]
    assert read.column("m").to_pylist() == [
        [(1, dt.date(1400, 3, 1))],
        [(2, None), (3, dt.date(2024, 1, 2))],
        [],
    ]
    assert from_orc(stored.slice(1)).to_pylist() == [None, dt.date(2024, 1, 2)]
    assert batch_to_orc(batch_from_orc(batch)).equals(batch)
    modern = pa.array([dt.date(2024, 1, 2)], pa.date32())
    assert from_orc(modern) is modern


def test_the_schema_mapping_reads_a_files_dates_in_arrows_calendar():
    stored = pa.array([-208120, None], pa.int32()).cast(pa.date32())
    field = pa.field("day", pa.date32())
    assert conformed(stored, field, None, 2).to_pylist() == [dt.date(1400, 3, 1), None]
    widened = pa.field("at", pa.timestamp("us"))
    assert conformed(stored, widened, None, 2).to_pylist() == [dt.datetime(1400, 3, 1), None]


def test_a_stripes_date_bounds_before_1582_are_not_compared():
    """Stored bounds count days in the hybrid calendar: read as Arrow dates they would be
    days off, so a stripe test could skip a stripe that holds the rows asked for."""
    sink = io.BytesIO()
    old = to_orc(pa.array([dt.date(1400, 3, 1), dt.date(1400, 3, 5)], pa.date32()))
    new = pa.array([dt.date(2020, 1, 1), dt.date(2021, 1, 1)], pa.date32())
    orc.write_table(pa.table({"old": old, "new": new}), sink)
    data = sink.getvalue()
    reader = orc.ORCFile(pa.BufferReader(data))
    offset = (
        reader.file_length
        - 1
        - reader.file_postscript_length
        - reader.file_footer_length
        - reader.stripe_statistics_length
    )
    stats = stripe_statistics(
        pa.BufferReader(data),
        offset,
        reader.stripe_statistics_length,
        reader.compression,
        list(reader.schema),
    )
    assert stats is not None
    (stripe,) = stats
    assert not stripe["old"].has_range
    assert stripe["new"] == ColumnStats(2, dt.date(2020, 1, 1), dt.date(2021, 1, 1))


def test_pythons_writers_store_the_days_sparks_writer_stores(tmp_path):
    """lakectl's pyarrow writer of event files (the Arrow engine's) stores dates as Spark's
    writer does, and the kernel reads them back."""
    import lakectl
    from lakectl.arrow.acid_writer import write_event_file
    from tests.support.acid_events import event_table

    table = lakectl.create_table(str(tmp_path / "t"), schema="id bigint, day date")
    store = table.context.table(table.location)
    meta = store.read_state().metadata
    dates = [d for _, d in STORED]
    n = len(dates)
    rows = pa.StructArray.from_arrays(
        [pa.array(range(n), pa.int64()), pa.array(dates, pa.date32())], names=["id", "day"]
    )
    events = event_table(rows, meta.data_schema)
    path = str(tmp_path / "bucket_00000")
    write_event_file(store.storage, path, events, meta)
    stored = orc.ORCFile(path).read().column("row").combine_chunks().field("day")
    assert stored.cast(pa.int32()).to_pylist() == [s for s, _ in STORED]
    assert conformed(stored, pa.field("day", pa.date32()), None, n).to_pylist() == dates


def test_a_timestamp_pyarrow_cannot_hold_is_written_and_read(tmp_path):
    """pyarrow's ORC reader holds timestamps as nanoseconds: an end date 9999-12-31 is written
    and read through pyorc, as Spark writes and reads it."""
    import lakectl
    from lakectl.arrow.acid_writer import write_event_file
    from lakectl.arrow.event_reader import EventRead
    from lakectl.arrow.types import event_schema
    from tests.support.acid_events import event_table

    table = lakectl.create_table(str(tmp_path / "t"), schema="id bigint, until timestamp")
    store = table.context.table(table.location)
    meta = store.read_state().metadata
    until = dt.datetime(9999, 12, 31, tzinfo=dt.UTC)
    rows = pa.StructArray.from_arrays(
        [pa.array([1], pa.int64()), pa.array([until], pa.timestamp("us", tz="UTC"))],
        names=["id", "until"],
    )
    events = event_table(rows, meta.data_schema)
    path = str(tmp_path / "bucket_00000")
    write_event_file(store.storage, path, events, meta)
    fields = tuple(event_schema(meta.data_schema).field("row").type)
    read = EventRead(("operation",), fields, ("id", "until"))
    (flat,) = read.stripes(store.storage, path)
    assert flat.data[1].to_pylist() == [until]
