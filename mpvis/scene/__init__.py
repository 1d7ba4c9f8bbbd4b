"""mpvis.scene."""
