package io.lakectl.spark;

import java.io.Closeable;
import java.io.IOException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hive.ql.exec.vector.ColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.LongColumnVector;
import org.apache.hadoop.hive.ql.exec.vector.VectorizedRowBatch;
import org.apache.orc.OrcFile;
import org.apache.orc.Reader;
import org.apache.orc.RecordReader;
import org.apache.orc.TypeDescription;

/**
 * Opens the ORC files of an ACID table with the event struct
 * {@code struct<operation, originalTransaction, bucket, rowId, currentTransaction, row>}, the
 * row's fields mapped by position (Hive writes {@code _col0, _col1, ...}).
 */
final class AcidFiles {
  static final int OPERATION = 0;
  static final int ORIGINAL_TRANSACTION = 1;
  static final int BUCKET = 2;
  static final int ROW_ID = 3;
  static final int CURRENT_TRANSACTION = 4;
  static final int ROW = 5;
  static final int BATCH_SIZE = 4096;

  private final Configuration conf;
  private final TypeDescription events;
  private final Reader.Options rowsOptions;
  private final Reader.Options eventsOptions;

  /**
   * @param rowType the ORC type of the row struct (the table's data columns)
   * @param readFields which of the row's fields to decode (the others stay null)
   */
  AcidFiles(Configuration conf, String rowType, boolean[] readFields) {
    this.conf = conf;
    TypeDescription row = TypeDescription.fromString(rowType);
    this.events =
        TypeDescription.createStruct()
            .addField("operation", TypeDescription.createInt())
            .addField("originalTransaction", TypeDescription.createLong())
            .addField("bucket", TypeDescription.createInt())
            .addField("rowId", TypeDescription.createLong())
            .addField("currentTransaction", TypeDescription.createLong())
            .addField("row", row);
    int columns = events.getMaximumId() + 1;
    boolean[] rowsIncluded = new boolean[columns];
    boolean[] eventsIncluded = new boolean[columns];
    for (int id = 0; id <= events.getChildren().get(ROW).getId(); id++) {
      rowsIncluded[id] = true;
      eventsIncluded[id] = id < events.getChildren().get(ROW).getId();
    }
    TypeDescription rowStruct = events.getChildren().get(ROW);
    for (int i = 0; i < readFields.length; i++) {
      if (readFields[i]) {
        TypeDescription field = rowStruct.getChildren().get(i);
        for (int id = field.getId(); id <= field.getMaximumId(); id++) {
          rowsIncluded[id] = true;
        }
      }
    }
    rowsOptions = readOptions(conf, events, rowsIncluded);
    eventsOptions = readOptions(conf, events, eventsIncluded);
  }

  /**
   * Options for reading {@code include} of the event struct, made once per task and cloned per
   * file. ORC formats a reader's options into a debug message whether or not it is logged
   * ({@code ReaderImpl.rows}): for a read of 800 small files, that string building was hot
   * enough for the JIT to compile it (0.13 s of C2 time in JFR), so these options describe
   * themselves in a few words.
   */
  private static Reader.Options readOptions(
      Configuration conf, TypeDescription schema, boolean[] include) {
    Reader.Options options =
        new Reader.Options(conf) {
          @Override
          public String toString() {
            return "lakectl ACID events";
          }
        };
    return options.schema(schema).include(include).forcePositionalEvolution(true);
  }

  /** A batch of the event struct. */
  VectorizedRowBatch newBatch() {
    return events.createRowBatch(BATCH_SIZE);
  }

  /** The events of {@code file} with the row's chosen fields. */
  Events openRows(ReadPlan.FileRef file) throws IOException {
    return open(file, rowsOptions);
  }

  /** The events of {@code file} without their row (for delete deltas). */
  Events openEvents(ReadPlan.FileRef file) throws IOException {
    return open(file, eventsOptions);
  }

  private Events open(ReadPlan.FileRef file, Reader.Options read) throws IOException {
    OrcFile.ReaderOptions options = OrcFile.readerOptions(conf);
    if (file.size > 0) {
      options.maxLength(file.size);
    }
    Reader reader;
    try {
      reader = OrcFile.createReader(new Path(file.url), options);
    } catch (IOException | RuntimeException e) {
      throw DamagedFileException.of(file.url, e);
    }
    if (!org.apache.orc.impl.SchemaEvolution.checkAcidSchema(reader.getSchema())) {
      reader.close();
      throw new IOException(
          file.url + ": not an ACID event file (its schema is " + reader.getSchema() + ")");
    }
    try {
      return new Events(file.url, reader, reader.rows(read.clone()));
    } catch (IOException | RuntimeException e) {
      reader.close();
      throw DamagedFileException.of(file.url, e);
    }
  }

  /** An open file's record reader; closing it closes the file. */
  static final class Events implements Closeable {
    private final String url;
    private final Reader reader;
    private final RecordReader rows;

    Events(String url, Reader reader, RecordReader rows) {
      this.url = url;
      this.reader = reader;
      this.rows = rows;
    }

    /** The next batch of events; a file whose bytes do not decode is a {@link DamagedFileException}. */
    boolean nextBatch(VectorizedRowBatch batch) throws IOException {
      try {
        return rows.nextBatch(batch);
      } catch (IOException | RuntimeException e) {
        throw DamagedFileException.of(url, e);
      }
    }

    @Override
    public void close() throws IOException {
      try {
        rows.close();
      } finally {
        reader.close();
      }
    }
  }

  static boolean isNull(ColumnVector vector, int row) {
    return !vector.noNulls && vector.isNull[vector.isRepeating ? 0 : row];
  }

  static long value(LongColumnVector vector, int row) {
    return vector.vector[vector.isRepeating ? 0 : row];
  }
}
