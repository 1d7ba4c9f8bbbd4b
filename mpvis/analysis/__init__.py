"""mpvis.analysis."""
