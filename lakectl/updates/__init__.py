"""updates layer."""
