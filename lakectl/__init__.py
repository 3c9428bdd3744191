"""lakectl: maintenance for Hive-ACID-layout data lakes from the command line."""

__version__ = "0.1.0"
