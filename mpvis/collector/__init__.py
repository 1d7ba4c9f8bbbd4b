"""mpvis.collector."""
