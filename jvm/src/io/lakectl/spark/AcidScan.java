package io.lakectl.spark;

import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
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
    SparkContext sc = SparkContext.getOrCreate();
    Broadcast<HadoopConf> conf =
        JavaSparkContext.fromSparkContext(sc).broadcast(new HadoopConf(sc.hadoopConfiguration()));
    return new ReaderFactory(schema, sources, plan, conf);
  }

  /** Creates each task's {@link AcidBatchReader}. */
  static final class ReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final StructType schema;
    private final int[] sources;
    private final ReadPlan plan;
    private final Broadcast<HadoopConf> conf;

    ReaderFactory(StructType schema, int[] sources, ReadPlan plan, Broadcast<HadoopConf> conf) {
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

  /** A Hadoop configuration that Spark can ship to executors. */
  static final class HadoopConf implements Serializable {
    private static final long serialVersionUID = 1L;
    private transient Configuration value;

    HadoopConf(Configuration value) {
      this.value = value;
    }

    Configuration value() {
      return value;
    }

    private void writeObject(ObjectOutputStream out) throws IOException {
      value.write(out);
    }

    private void readObject(ObjectInputStream in) throws IOException {
      value = new Configuration(false);
      value.readFields(in);
    }
  }
}
