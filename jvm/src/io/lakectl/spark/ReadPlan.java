package io.lakectl.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructType;

/**
 * What lakectl's planner decided a read is, as the JSON of the {@code plan} option.
 *
 * <pre>{
 *   "rowType": "struct&lt;a:bigint,b:string&gt;",   ORC type of the row struct (data columns)
 *   "dataColumns": 2, "partitionColumns": 1, "identity": false,
 *   "notNullField": 0,                             rows where this row field is null are not live
 *   "highWatermark": 12, "exceptions": [7],       valid write ids of delta and delete events
 *   "splits": [{"groups": [{"values": ["2024-01-01"],
 *                            "files": [["file:/t/d=x/base_5/bucket_00000", 123, true], ...],
 *                            "deletes": [["file:/t/d=x/delete_delta_6_6/bucket_00000", 45]]}]}]
 * }</pre>
 *
 * A group is one partition directory: its files and the delete deltas that apply to them. A
 * split is one Spark task. Partition values are JSON values of the partition column's type
 * (a date as its day number).
 */
final class ReadPlan implements Serializable {
  private static final long serialVersionUID = 1L;

  final String rowType;
  final int dataColumns;
  final int partitionColumns;
  final boolean identity;
  final int notNullField; // a row field that is never null in a live row (the key), or -1
  final long highWatermark;
  final long[] exceptions; // sorted
  // Each task gets its own split; the rest of the plan travels with the reader factory.
  final transient Split[] splits;

  private ReadPlan(
      String rowType,
      int dataColumns,
      int partitionColumns,
      boolean identity,
      int notNullField,
      long highWatermark,
      long[] exceptions,
      Split[] splits) {
    this.rowType = rowType;
    this.dataColumns = dataColumns;
    this.partitionColumns = partitionColumns;
    this.identity = identity;
    this.notNullField = notNullField;
    this.highWatermark = highWatermark;
    this.exceptions = exceptions;
    this.splits = splits;
  }

  /** Whether an event written by {@code writeId} is visible (a delta's or delete delta's). */
  boolean valid(long writeId) {
    return writeId <= highWatermark
        && (exceptions.length == 0 || Arrays.binarySearch(exceptions, writeId) < 0);
  }

  /** A file and its length as listed (ORC reads the tail without asking the filesystem). */
  static final class FileRef implements Serializable {
    private static final long serialVersionUID = 1L;
    final String url;
    final long size;
    final boolean base;

    FileRef(String url, long size, boolean base) {
      this.url = url;
      this.size = size;
      this.base = base;
    }
  }

  /** One partition directory's files, delete deltas and (typed) partition values. */
  static final class Group implements Serializable {
    private static final long serialVersionUID = 1L;
    final Object[] values;
    final FileRef[] files;
    final FileRef[] deletes;

    Group(Object[] values, FileRef[] files, FileRef[] deletes) {
      this.values = values;
      this.files = files;
      this.deletes = deletes;
    }
  }

  /** One task's groups. */
  static final class Split implements InputPartition {
    private static final long serialVersionUID = 1L;
    final Group[] groups;

    Split(Group[] groups) {
      this.groups = groups;
    }
  }

  /** Parse the plan option against the output {@code schema} (which types the values). */
  static ReadPlan parse(String json, StructType schema) {
    JsonNode root;
    try {
      root = new ObjectMapper().readTree(json);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException("lakectl-acid: the plan is not JSON: " + e.getMessage());
    }
    int data = root.path("dataColumns").asInt(-1);
    int parts = root.path("partitionColumns").asInt(-1);
    boolean identity = root.path("identity").asBoolean(false);
    int expected = data + parts + (identity ? 3 : 0);
    if (data < 0 || parts < 0 || expected != schema.fields().length) {
      throw new IllegalArgumentException(
          "lakectl-acid: the schema has " + schema.fields().length + " fields, the plan " + expected);
    }
    JsonNode exceptionsNode = root.path("exceptions");
    long[] exceptions = new long[exceptionsNode.size()];
    for (int i = 0; i < exceptions.length; i++) {
      exceptions[i] = exceptionsNode.get(i).asLong();
    }
    Arrays.sort(exceptions);
    List<Split> splits = new ArrayList<>();
    for (JsonNode split : root.path("splits")) {
      List<Group> groups = new ArrayList<>();
      for (JsonNode group : split.path("groups")) {
        Object[] values = new Object[parts];
        JsonNode valuesNode = group.path("values");
        for (int i = 0; i < parts; i++) {
          values[i] = partitionValue(valuesNode.get(i), schema.fields()[data + i].dataType());
        }
        groups.add(new Group(values, files(group.path("files")), files(group.path("deletes"))));
      }
      splits.add(new Split(groups.toArray(new Group[0])));
    }
    return new ReadPlan(
        root.path("rowType").asText(),
        data,
        parts,
        identity,
        root.path("notNullField").asInt(-1),
        root.path("highWatermark").asLong(),
        exceptions,
        splits.toArray(new Split[0]));
  }

  private static FileRef[] files(JsonNode node) {
    FileRef[] out = new FileRef[node.size()];
    for (int i = 0; i < out.length; i++) {
      JsonNode f = node.get(i);
      out[i] = new FileRef(f.get(0).asText(), f.get(1).asLong(), f.path(2).asBoolean(false));
    }
    return out;
  }

  private static Object partitionValue(JsonNode node, DataType type) {
    if (node == null || node.isNull()) {
      return null;
    }
    if (type instanceof StringType) {
      return node.asText();
    }
    if (type instanceof LongType) {
      return node.asLong();
    }
    if (type instanceof IntegerType || type instanceof DateType) {
      return node.asInt();
    }
    if (type instanceof ShortType) {
      return (short) node.asInt();
    }
    if (type instanceof ByteType) {
      return (byte) node.asInt();
    }
    if (type instanceof BooleanType) {
      return node.asBoolean();
    }
    throw new IllegalArgumentException("lakectl-acid: no partition columns of type " + type);
  }
}
