"""Experience replay: buffer, embedders, vector index, offline data."""
