"""mpvis.sim."""
