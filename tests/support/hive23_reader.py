"""Read one partition of an ACID table with Hive 2.3's own reader, as a Hive query would.

Hive 2.3.10's ``OrcInputFormat`` (shipped in pyspark's ``hive-exec`` jar) is driven through
py4j with the job configuration Hive builds for a transactional table scan: the table's
columns, ``transactional``/``transactional_properties=default`` (split update: insert deltas are
read like bases, delete deltas as delete events), the transactional-scan flag and the valid
transaction list. Hive 2.3 knows transaction ids only; lakectl's write ids fill their place.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lakectl.table.validity import ValidWriteIds


def hive_txn_list(spark: Any, valid: ValidWriteIds) -> str:
    """Hive 2.3's ``ValidReadTxnList`` text for ``valid``, written by Hive's own class (its
    form, ``hwm:minOpen:exception:...``, is not Hive 3's table-qualified write-id list)."""
    exceptions = sorted(valid.exceptions)
    gateway = spark.sparkContext._gateway
    ids = gateway.new_array(gateway.jvm.long, len(exceptions))
    for i, write_id in enumerate(exceptions):
        ids[i] = write_id
    min_open = exceptions[0] if exceptions else 2**63 - 1
    txn_list = gateway.jvm.org.apache.hadoop.hive.common.ValidReadTxnList(
        ids, valid.high_watermark, min_open
    )
    return str(txn_list.writeToString())


def _job_conf(spark: Any, columns: Sequence[tuple[str, str]], txn_list: str) -> Any:
    jvm = spark._jvm
    conf = jvm.org.apache.hadoop.mapred.JobConf(spark._jsc.hadoopConfiguration())
    names = ",".join(name for name, _ in columns)
    types = ":".join(kind for _, kind in columns)
    settings = {
        "columns": names,
        "columns.types": types,
        "schema.evolution.columns": names,
        "schema.evolution.columns.types": types,
        "transactional": "true",
        "transactional_properties": "default",
        "hive.transactional.table.scan": "true",
        "hive.txn.valid.txns": txn_list,
        "hive.txn.operational.properties": str(
            jvm.org.apache.hadoop.hive.ql.io.AcidUtils.AcidOperationalProperties.getDefault().toInt()
        ),
    }
    for key, value in settings.items():
        conf.set(key, value)
    return conf


def read_partition(
    spark: Any, directory: str, columns: Sequence[tuple[str, str]], txn_list: str
) -> list[tuple[Any, ...]]:
    """Every row Hive 2.3 reads from the partition ``directory`` (a URL) with the data
    ``columns`` (name, Hive type) under ``txn_list``, as Python values, sorted."""
    jvm = spark._jvm
    hive = jvm.org.apache.hadoop.hive
    conf = _job_conf(spark, columns, txn_list)
    jvm.org.apache.hadoop.mapred.FileInputFormat.setInputPaths(conf, directory)
    struct = "struct<" + ",".join(f"{name}:{kind}" for name, kind in columns) + ">"
    inspector = hive.ql.io.orc.OrcStruct.createObjectInspector(
        hive.serde2.typeinfo.TypeInfoUtils.getTypeInfoFromTypeString(struct)
    )
    input_format = hive.ql.io.orc.OrcInputFormat()
    rows = []
    for split in input_format.getSplits(conf, 1):
        reader = input_format.getRecordReader(
            split, conf, jvm.org.apache.hadoop.mapred.Reporter.NULL
        )
        key, value = reader.createKey(), reader.createValue()
        try:
            while reader.next(key, value):
                fields = json.loads(hive.serde2.SerDeUtils.getJSONString(value, inspector))
                rows.append(tuple(fields[name] for name, _ in columns))
        finally:
            reader.close()
    return sorted(rows, key=repr)


def txn_list_is_understood(spark: Any, txn_list: str, valid: ValidWriteIds) -> bool:
    """True when Hive's ``ValidReadTxnList`` parsed from ``txn_list`` admits exactly the write
    ids ``valid`` admits (checked up to one past the high watermark)."""
    parsed = spark._jvm.org.apache.hadoop.hive.common.ValidReadTxnList(txn_list)
    return all(
        bool(parsed.isTxnValid(w)) == valid.is_valid(w) for w in range(1, valid.high_watermark + 2)
    )
