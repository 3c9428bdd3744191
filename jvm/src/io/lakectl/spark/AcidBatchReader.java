package io.lakectl.spark;

import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.StructColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One task of an {@link AcidSource} scan: for each group (partition directory) of its split,
 * the delete events, then the rows of its bases and deltas that are inserts, visible (a delta
 * of a valid write id) and not deleted, as columnar batches over the ORC vectors.
 */
final class AcidBatchReader implements PartitionReader<ColumnarBatch> {
  private static final int OP_DELETE = 2;

  private final ReadPlan plan;
  private final ReadPlan.Split split;
  private final AcidFiles files;
  private final VectorizedRowBatch batch;
  private final OrcVector.Selection selection = new OrcVector.Selection();
  private final ConstantColumnVector[] partitionVectors; // by output column, null if none
  private final int[] partitionSources; // partition column index by output column, or -1
  private final ColumnarBatch output;

  private int group = -1;
  private int file;
  private DeleteSet deletes;
  private AcidFiles.Events events;
  private boolean base;

  AcidBatchReader(
      StructType schema, int[] sources, ReadPlan plan, ReadPlan.Split split, Configuration conf) {
    this.plan = plan;
    this.split = split;
    boolean[] readFields = new boolean[plan.dataColumns];
    for (int source : sources) {
      if (source < plan.dataColumns) {
        readFields[source] = true;
      }
    }
    if (plan.notNullField >= 0) {
      readFields[plan.notNullField] = true;
    }
    this.files = new AcidFiles(conf, plan.rowType, readFields); // read only: not copied
    this.batch = files.newBatch();
    StructColumnVector row = (StructColumnVector) batch.cols[AcidFiles.ROW];
    ColumnVector[] columns = new ColumnVector[sources.length];
    partitionVectors = new ConstantColumnVector[sources.length];
    partitionSources = new int[sources.length];
    for (int i = 0; i < sources.length; i++) {
      int source = sources[i];
      DataType type = schema.fields()[source].dataType();
      partitionSources[i] = -1;
      if (source < plan.dataColumns) {
        columns[i] = new OrcVector(type, row.fields[source], selection);
      } else if (source < plan.dataColumns + plan.partitionColumns) {
        partitionSources[i] = source - plan.dataColumns;
        partitionVectors[i] = new ConstantColumnVector(AcidFiles.BATCH_SIZE, type);
        columns[i] = partitionVectors[i];
      } else {
        int identity = source - plan.dataColumns - plan.partitionColumns;
        int column =
            new int[] {AcidFiles.ORIGINAL_TRANSACTION, AcidFiles.BUCKET, AcidFiles.ROW_ID}[
                identity];
        columns[i] = new OrcVector(type, batch.cols[column], selection);
      }
    }
    output = new ColumnarBatch(columns);
  }

  @Override
  public boolean next() throws IOException {
    while (true) {
      if (events == null && !openNextFile()) {
        return false;
      }
      if (!events.nextBatch(batch)) {
        events.close();
        events = null;
        continue;
      }
      if (select() > 0) {
        output.setNumRows(selection.size);
        return true;
      }
    }
  }

  @Override
  public ColumnarBatch get() {
    return output;
  }

  @Override
  public void close() throws IOException {
    if (events != null) {
      events.close();
      events = null;
    }
  }

  private boolean openNextFile() throws IOException {
    while (group < 0 || file >= split.groups[group].files.length) {
      group++;
      file = 0;
      if (group >= split.groups.length) {
        return false;
      }
      startGroup(split.groups[group]);
    }
    ReadPlan.FileRef next = split.groups[group].files[file++];
    base = next.base;
    events = files.openRows(next);
    return true;
  }

  private void startGroup(ReadPlan.Group g) throws IOException {
    deletes = DeleteSet.load(files, g.deletes, plan, batch);
    for (int i = 0; i < partitionVectors.length; i++) {
      if (partitionVectors[i] != null) {
        setConstant(partitionVectors[i], g.values[partitionSources[i]]);
      }
    }
  }

  private static void setConstant(ConstantColumnVector vector, Object value) {
    if (value == null) {
      vector.setNull();
      return;
    }
    vector.setNotNull();
    if (value instanceof String s) {
      vector.setUtf8String(UTF8String.fromString(s));
    } else if (value instanceof Long l) {
      vector.setLong(l);
    } else if (value instanceof Integer n) {
      vector.setInt(n);
    } else if (value instanceof Short s) {
      vector.setShort(s);
    } else if (value instanceof Byte b) {
      vector.setByte(b);
    } else if (value instanceof Boolean b) {
      vector.setBoolean(b);
    } else {
      throw new IllegalStateException("unexpected partition value " + value);
    }
  }

  /** Choose the batch's live rows into the selection; returns how many. */
  private int select() {
    LongColumnVector op = (LongColumnVector) batch.cols[AcidFiles.OPERATION];
    LongColumnVector txn = (LongColumnVector) batch.cols[AcidFiles.ORIGINAL_TRANSACTION];
    LongColumnVector bucket = (LongColumnVector) batch.cols[AcidFiles.BUCKET];
    LongColumnVector rowId = (LongColumnVector) batch.cols[AcidFiles.ROW_ID];
    LongColumnVector current = (LongColumnVector) batch.cols[AcidFiles.CURRENT_TRANSACTION];
    StructColumnVector row = (StructColumnVector) batch.cols[AcidFiles.ROW];
    org.apache.hadoop.hive.ql.exec.vector.ColumnVector notNull =
        plan.notNullField < 0 ? null : row.fields[plan.notNullField];
    boolean probe = !deletes.isEmpty();
    int[] index = selection.index;
    int n = 0;
    for (int i = 0; i < batch.size; i++) {
      if (AcidFiles.isNull(op, i)
          || AcidFiles.value(op, i) == OP_DELETE
          || AcidFiles.isNull(row, i)
          || (notNull != null && AcidFiles.isNull(notNull, i))
          || AcidFiles.isNull(current, i)
          || (!base && !plan.valid(AcidFiles.value(current, i)))
          || AcidFiles.isNull(txn, i)
          || AcidFiles.isNull(bucket, i)
          || AcidFiles.isNull(rowId, i)) {
        continue;
      }
      if (probe
          && deletes.contains(
              AcidFiles.value(txn, i), (int) AcidFiles.value(bucket, i), AcidFiles.value(rowId, i))) {
        continue;
      }
      index[n++] = i;
    }
    selection.size = n;
    selection.all = n == batch.size;
    return n;
  }
}
