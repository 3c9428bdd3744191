package io.lakectl.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.SerializableConfiguration;

/** The scan of an {@link AcidSource}: the plan's splits, the columns Spark asked for. */
final class AcidScan implements Scan, Batch {
  private final StructType schema;
  private final StructType required;
  private final ReadPlan plan;

  /** Keeps only the columns a query uses (the row's other fields are not decoded). */
  static final class Builder implements ScanBuilder, SupportsPushDownRequiredColumns {
    private final StructType schema;
    private final ReadPlan plan;
    private StructType required;

    Builder(StructType schema, ReadPlan plan) {
      this.schema = schema;
      this.plan = plan;
      this.required = schema;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
      this.required = requiredSchema;
    }

    @Override
    public Scan build() {
      return new AcidScan(schema, required, plan);
    }
  }

  AcidScan(StructType schema, StructType required, ReadPlan plan) {
    this.schema = schema;
    this.required = required;
    this.plan = plan;
  }

  @Override
  public StructType readSchema() {
    return required;
  }

  @Override
  public String description() {
    int files = 0;
    int deletes = 0;
    for (ReadPlan.Split split : plan.splits) {
      for (ReadPlan.Group group : split.groups) {
        files += group.files.length;
        deletes += group.deletes.length;
      }
    }
    return "lakectl ACID merge-on-read: " + files + " files, " + deletes + " delete delta files";
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    return plan.splits;
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    int[] sources = new int[required.fields().length];
    for (int i = 0; i < sources.length; i++) {
      StructField field = required.fields()[i];
      sources[i] = schema.fieldIndex(field.name());
    }
    // The session's Hadoop settings (its SQL conf included), as Spark's own file scans use;
    // shipped the way they ship them (a Java-serialized wrapper, also under Kryo).
    SparkSession session = SparkSession.active();
    Configuration hadoop = session.sessionState().newHadoopConf();
    Broadcast<SerializableConfiguration> conf =
        SerializableConfiguration.broadcast(session.sparkContext(), hadoop);
    return new ReaderFactory(schema, sources, plan, conf);
  }

  /** Creates each task's {@link AcidBatchReader}. */
  static final class ReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final StructType schema;
    private final int[] sources;
    private final ReadPlan plan;
    private final Broadcast<SerializableConfiguration> conf;

    ReaderFactory(
        StructType schema,
        int[] sources,
        ReadPlan plan,
        Broadcast<SerializableConfiguration> conf) {
      this.schema = schema;
      this.sources = sources;
      this.plan = plan;
      this.conf = conf;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("lakectl-acid reads columnar batches only");
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      return new AcidBatchReader(
          schema, sources, plan, (ReadPlan.Split) partition, conf.value().value());
    }
  }
}
