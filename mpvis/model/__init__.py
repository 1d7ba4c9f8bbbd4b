"""mpvis.model."""
