package io.lakectl.spark;

import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;

/**
 * The valid delete events of one partition: for each (originalTransaction, bucket), the sorted
 * row ids it deletes. Probed row by row while a file is read; rows of a file come in row-id
 * order, so a cursor makes the probe of a row that is not deleted one comparison.
 */
final class DeleteSet {
  private static final int OP_DELETE = 2;

  private final Map<FileKey, long[]> rowIds;
  private long lastTransaction = Long.MIN_VALUE;
  private int lastBucket;
  private long[] rows;
  private int cursor;

  private DeleteSet(Map<FileKey, long[]> rowIds) {
    this.rowIds = rowIds;
  }

  /** Whether no event deletes anything (the reader then skips the probe). */
  boolean isEmpty() {
    return rowIds.isEmpty();
  }

  /** Whether a valid delete event names the row (originalTransaction, bucket, rowId). */
  boolean contains(long transaction, int bucket, long rowId) {
    if (transaction != lastTransaction || bucket != lastBucket) {
      lastTransaction = transaction;
      lastBucket = bucket;
      rows = rowIds.get(new FileKey(transaction, bucket));
      cursor = 0;
    }
    if (rows == null) {
      return false;
    }
    int c = cursor;
    if (c > 0 && rows[c - 1] >= rowId) {
      c = lowerBound(rows, 0, c, rowId); // a row before the last one probed
    } else if (c < rows.length && rows[c] < rowId) {
      c = seekForward(rows, c, rowId);
    }
    cursor = c;
    return c < rows.length && rows[c] == rowId;
  }

  /**
   * The first index at or after {@code from} whose value is at least {@code value}, given
   * {@code values[from] < value}: steps of 1, 2, 4, ... then a binary search, so passing the
   * next few deleted rows costs a few comparisons rather than a search of the whole array.
   * Package-private: a test calls it through reflection.
   */
  static int seekForward(long[] values, int from, long value) {
    int lo = from + 1; // values[lo - 1] < value throughout
    int step = 1;
    int hi = lo;
    while (hi < values.length && values[hi] < value) {
      lo = hi + 1;
      step <<= 1;
      hi = step >= values.length - from ? values.length : from + step; // no int overflow
    }
    return lowerBound(values, lo, Math.min(hi, values.length), value);
  }

  private static int lowerBound(long[] values, int from, int to, long value) {
    int lo = from;
    int hi = to;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (values[mid] < value) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * Read the delete events of {@code files} that the plan's valid write ids admit, through
   * {@code batch} (of {@link AcidFiles#newBatch}).
   */
  static DeleteSet load(
      AcidFiles files, ReadPlan.FileRef[] deletes, ReadPlan plan, VectorizedRowBatch batch)
      throws IOException {
    Map<FileKey, LongList> lists = new HashMap<>();
    for (ReadPlan.FileRef file : deletes) {
      try (AcidFiles.Events reader = files.openEvents(file)) {
        FileKey key = null;
        LongList list = null;
        while (reader.nextBatch(batch)) {
          LongColumnVector op = (LongColumnVector) batch.cols[AcidFiles.OPERATION];
          LongColumnVector txn = (LongColumnVector) batch.cols[AcidFiles.ORIGINAL_TRANSACTION];
          LongColumnVector bucket = (LongColumnVector) batch.cols[AcidFiles.BUCKET];
          LongColumnVector rowId = (LongColumnVector) batch.cols[AcidFiles.ROW_ID];
          LongColumnVector current = (LongColumnVector) batch.cols[AcidFiles.CURRENT_TRANSACTION];
          for (int i = 0; i < batch.size; i++) {
            if (AcidFiles.isNull(op, i)
                || AcidFiles.value(op, i) != OP_DELETE
                || AcidFiles.isNull(current, i)
                || !plan.valid(AcidFiles.value(current, i))
                || AcidFiles.isNull(txn, i)
                || AcidFiles.isNull(bucket, i)
                || AcidFiles.isNull(rowId, i)) {
              continue;
            }
            long t = AcidFiles.value(txn, i);
            int b = (int) AcidFiles.value(bucket, i);
            if (key == null || key.transaction != t || key.bucket != b) {
              key = new FileKey(t, b);
              list = lists.computeIfAbsent(key, k -> new LongList());
            }
            list.add(AcidFiles.value(rowId, i));
          }
        }
      }
    }
    Map<FileKey, long[]> sorted = new HashMap<>();
    for (Map.Entry<FileKey, LongList> entry : lists.entrySet()) {
      long[] values = entry.getValue().toArray();
      Arrays.sort(values);
      sorted.put(entry.getKey(), values);
    }
    return new DeleteSet(sorted);
  }

  /**
   * The rows a delete event can name: those of one writer's bucket file. A class rather than a
   * record: a record's equals and hashCode are bound at run time through method handles, which
   * the JIT compiles into the row loop (JFR, first read of a process: the C2 compilations of
   * lakectl's classes took 0.65 s with the record, 0.16 s without).
   */
  private static final class FileKey {
    final long transaction;
    final int bucket;

    FileKey(long transaction, int bucket) {
      this.transaction = transaction;
      this.bucket = bucket;
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof FileKey k && k.transaction == transaction && k.bucket == bucket;
    }

    @Override
    public int hashCode() {
      return Long.hashCode(transaction) * 31 + bucket;
    }
  }

  private static final class LongList {
    private long[] values = new long[64];
    private int size;

    void add(long value) {
      if (size == values.length) {
        values = Arrays.copyOf(values, size * 2);
      }
      values[size++] = value;
    }

    long[] toArray() {
      return Arrays.copyOf(values, size);
    }
  }
}
