"""The Spark layer: the only package that imports pyspark."""

import warnings

# pyspark warns at import that it does not "fully support" pandas 3; lakectl only hands it
# Arrow-backed frames, which work. Keep that noise out of command output.
warnings.filterwarnings("ignore", message=".*pandas.*", category=FutureWarning)
