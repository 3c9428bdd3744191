package io.lakectl.spark;

import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Merge-on-read of a lakectl (Hive 3 ACID) table as a Spark data source.
 *
 * <p>The driver-side planner of lakectl chooses the files and packs them into splits; this
 * source only executes that plan ({@link ReadPlan}, the {@code plan} option). Each task reads
 * the delete events of its partitions' delete deltas into a {@link DeleteSet} and drops the
 * rows they name while it reads the bases and deltas, as Hive's ACID reader does, so a read
 * needs no join and no broadcast of delete events.
 *
 * <p>Usage: {@code spark.read.format("io.lakectl.spark.AcidSource").schema(output)
 * .option("plan", json).load()}. The schema is required: the data columns, then the
 * partition columns, then (if the plan asks for them) originalTransaction, bucket, rowId.
 */
public final class AcidSource implements TableProvider, DataSourceRegister {

  @Override
  public String shortName() {
    return "lakectl-acid";
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    throw new IllegalArgumentException("lakectl-acid needs the output schema (.schema(...))");
  }

  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> props) {
    return new AcidTable(schema);
  }

  /** The table: a schema and one capability, batch reads. */
  static final class AcidTable implements SupportsRead {
    private final StructType schema;

    AcidTable(StructType schema) {
      this.schema = schema;
    }

    @Override
    public String name() {
      return "lakectl-acid";
    }

    @Override
    @SuppressWarnings("deprecation") // columns() is derived from it by Spark
    public StructType schema() {
      return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
      return Set.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
      String plan = options.get("plan");
      if (plan == null) {
        throw new IllegalArgumentException("lakectl-acid needs the option 'plan'");
      }
      return new AcidScan.Builder(schema, ReadPlan.parse(plan, schema));
    }
  }
}
