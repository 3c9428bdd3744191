package io.lakectl.spark;

import java.io.EOFException;
import java.io.IOException;

import org.apache.orc.FileFormatException;

/**
 * A data file whose bytes the ORC reader cannot decode: empty, cut short or overwritten. The
 * message names the file; lakectl's CLI turns it into a damaged-table error (exit 76). Failures
 * of the storage itself (a missing file, permissions, the network) are not this: they keep their
 * own types.
 */
final class DamagedFileException extends IOException {
  private static final long serialVersionUID = 1L;

  private DamagedFileException(String url, Throwable cause) {
    super(
        "ORC file " + url + " is damaged or truncated (" + describe(cause) + ")", cause);
  }

  /**
   * {@code failure} of reading {@code url}, as this exception when it says the bytes are not
   * readable ORC (ORC's format and protobuf errors, reads past the end, decoders failing on bad
   * input), else unchanged.
   */
  static IOException of(String url, Throwable failure) {
    if (failure instanceof DamagedFileException) {
      return (DamagedFileException) failure;
    }
    if (isDamage(failure)) {
      return new DamagedFileException(url, failure);
    }
    if (failure instanceof IOException) {
      return (IOException) failure;
    }
    throw (RuntimeException) failure;
  }

  private static boolean isDamage(Throwable failure) {
    if (failure instanceof RuntimeException) {
      return true; // decoders index past their buffers on bad bytes
    }
    Class<?> type = failure.getClass();
    return failure instanceof FileFormatException
        || failure instanceof EOFException
        || type.getName().contains("InvalidProtocolBufferException")
        || type == IOException.class; // ORC's own checks ("Seek outside of data", ...)
  }

  private static String describe(Throwable cause) {
    String message = cause.getMessage();
    String text = cause.getClass().getSimpleName() + (message == null ? "" : ": " + message);
    return text.replace('\n', ' ');
  }
}
