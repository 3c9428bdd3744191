"""``lakectl stream`` from an s3:// landing directory without hadoop-aws: Spark's file source
cannot watch it, so lakectl lists it every trigger and reads the files through fsspec, with the
same exactly-once records. The table is on S3 too."""

from __future__ import annotations

from lakectl.storage.fs import storage_for

FILES = {
    "a.csv": "id,ts,v,op_code\n1,1,a,I\n2,2,b,I\n3,3,c,I\n",
    "b.csv": "id,ts,v,op_code\n1,4,a2,U\n2,5,,D\n3,1,late,U\n",  # id 3 at ts 1 is older: ignored
}


def test_stream_from_an_s3_landing_directory(s3, lakectl_cli, spark):
    for name, body in FILES.items():
        storage, path = storage_for(s3.url(f"landing/{name}"))
        storage.write_bytes(path, body.encode())
    table = s3.url("t")
    made = lakectl_cli(
        "create", table, "--schema", "id bigint, ts bigint, v string", "--primary-key", "id"
    )
    assert made.code == 0, made.err
    streamed = lakectl_cli(
        "stream", table, s3.url("landing"), "--op-column", "op_code", "--order-by", "ts",
        "--trigger", "500ms", "--max-files-per-batch", "1", "--max-batches", "2",
        "--no-compact", "--json",
    )  # fmt: skip
    assert streamed.code == 0, streamed.err
    totals = streamed.json["status"]
    assert totals["files"] == 2 and totals["batches"] == 2
    assert totals["counts"]["ignored"] == 1
    shown = lakectl_cli("snapshot", table, "--json", "--limit", "0")
    assert shown.code == 0, shown.err
    assert sorted((r["id"], r["ts"], r["v"]) for r in shown.json["rows"]) == [
        (1, 4, "a2"),
        (3, 3, "c"),
    ]
    # The log names each landing file once: a restart applies nothing again.
    again = lakectl_cli(
        "stream", table, s3.url("landing"), "--op-column", "op_code", "--order-by", "ts",
        "--trigger", "500ms", "--stop-after", "3", "--no-compact", "--json",
    )  # fmt: skip
    assert again.code == 0, again.err
    assert again.json["status"]["files"] == 0 and again.json["status"]["batches"] == 0
