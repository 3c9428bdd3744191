"""The table's row rules, once, in pyarrow: every Python reader applies them through here.

- :mod:`lakectl.kernel.live_rows`: which stored events are live rows (an insert event of a valid
  write id, every event column set, its row present, that no valid delete event of its partition
  names by its identity), and the one structure that holds a partition's deleted identities.
- :mod:`lakectl.kernel.schema_map`: a file written with an older schema read in today's: the
  ``row`` struct's fields matched by position, widened types cast, columns added since filled
  with their default.
- :mod:`lakectl.kernel.spark_hash`: Spark's ``hash()`` (Murmur3, seed 42) of key columns, and so
  the bucket Spark's writer gives a new row of a bucketed table.

They work on Arrow arrays and batches of one partition (or bucket) at a time, and import neither
Spark nor a command module: the Arrow engine, compaction's bucket rewrite, the key lookup of a
load, the change feed and restore call them, on the driver or inside Spark tasks. The Java data
source (``jvm/``) is the one other implementation; the differential tests hold it to the same
results.
"""
