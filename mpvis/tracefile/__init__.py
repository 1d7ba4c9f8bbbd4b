"""mpvis.tracefile."""
