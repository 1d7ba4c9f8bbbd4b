"""mpvis.gui."""
