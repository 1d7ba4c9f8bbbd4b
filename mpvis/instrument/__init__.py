"""mpvis.instrument."""
