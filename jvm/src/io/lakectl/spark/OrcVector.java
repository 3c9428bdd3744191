package io.lakectl.spark;

import java.util.Arrays;

import org.apache.hadoop.hive.ql.exec.vector.BytesColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DecimalColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.DoubleColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.spark.sql.catalyst.util.RebaseDateTime;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A Spark column over an ORC column of the current batch, through the batch's {@link
 * Selection}: row {@code i} of this column is row {@code selection.index[i]} of the ORC
 * column, so deleted and invisible rows are skipped without copying values. Atomic types only
 * ({@link #supports}). Dates are rebased from the hybrid Julian calendar ORC returns, as
 * Spark's own ORC reader does.
 */
final class OrcVector extends ColumnVector {
  private final org.apache.hadoop.hive.ql.exec.vector.ColumnVector data;
  private final Selection selection;
  private final long[] longs;
  private final double[] doubles;
  private final BytesColumnVector bytes;
  private final DecimalColumnVector decimals;
  private final boolean date;

  /** Which rows of the ORC batch are this batch's rows. */
  static final class Selection {
    int[] index = new int[AcidFiles.BATCH_SIZE];
    boolean all;
    int size;
  }

  OrcVector(DataType type, org.apache.hadoop.hive.ql.exec.vector.ColumnVector data, Selection s) {
    super(type);
    this.data = data;
    this.selection = s;
    this.longs = data instanceof LongColumnVector l ? l.vector : null;
    this.doubles = data instanceof DoubleColumnVector d ? d.vector : null;
    this.bytes = data instanceof BytesColumnVector b ? b : null;
    this.decimals = data instanceof DecimalColumnVector d ? d : null;
    this.date = type instanceof DateType;
  }

  /** Whether values of {@code type} can be read through this class. */
  static boolean supports(DataType type) {
    String name = type.typeName();
    return switch (name) {
      case "boolean", "byte", "short", "integer", "long", "float", "double", "string", "binary",
          "date" -> true;
      default -> name.startsWith("decimal");
    };
  }

  private int row(int rowId) {
    if (data.isRepeating) {
      return 0;
    }
    return selection.all ? rowId : selection.index[rowId];
  }

  @Override
  public void close() {}

  @Override
  public boolean hasNull() {
    return !data.noNulls;
  }

  @Override
  public int numNulls() {
    if (data.noNulls) {
      return 0;
    }
    int count = 0;
    for (int i = 0; i < selection.size; i++) {
      if (data.isNull[row(i)]) {
        count++;
      }
    }
    return count;
  }

  @Override
  public boolean isNullAt(int rowId) {
    return !data.noNulls && data.isNull[row(rowId)];
  }

  @Override
  public boolean getBoolean(int rowId) {
    return longs[row(rowId)] == 1;
  }

  @Override
  public byte getByte(int rowId) {
    return (byte) longs[row(rowId)];
  }

  @Override
  public short getShort(int rowId) {
    return (short) longs[row(rowId)];
  }

  @Override
  public int getInt(int rowId) {
    int value = (int) longs[row(rowId)];
    return date ? RebaseDateTime.rebaseJulianToGregorianDays(value) : value;
  }

  @Override
  public long getLong(int rowId) {
    return longs[row(rowId)];
  }

  @Override
  public float getFloat(int rowId) {
    return (float) doubles[row(rowId)];
  }

  @Override
  public double getDouble(int rowId) {
    return doubles[row(rowId)];
  }

  @Override
  public Decimal getDecimal(int rowId, int precision, int scale) {
    if (isNullAt(rowId)) {
      return null;
    }
    java.math.BigDecimal value = decimals.vector[row(rowId)].getHiveDecimal().bigDecimalValue();
    return Decimal.apply(value, precision, scale);
  }

  @Override
  public UTF8String getUTF8String(int rowId) {
    if (isNullAt(rowId)) {
      return null;
    }
    int r = row(rowId);
    return UTF8String.fromBytes(bytes.vector[r], bytes.start[r], bytes.length[r]);
  }

  @Override
  public byte[] getBinary(int rowId) {
    if (isNullAt(rowId)) {
      return null;
    }
    int r = row(rowId);
    return Arrays.copyOfRange(bytes.vector[r], bytes.start[r], bytes.start[r] + bytes.length[r]);
  }

  @Override
  public ColumnarArray getArray(int rowId) {
    throw new UnsupportedOperationException("lakectl-acid reads atomic columns only");
  }

  @Override
  public ColumnarMap getMap(int rowId) {
    throw new UnsupportedOperationException("lakectl-acid reads atomic columns only");
  }

  @Override
  public ColumnVector getChild(int ordinal) {
    throw new UnsupportedOperationException("lakectl-acid reads atomic columns only");
  }
}
