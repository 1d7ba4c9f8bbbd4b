"""mpvis.protocol."""
