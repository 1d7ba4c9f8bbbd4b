"""mpvis.cli."""
