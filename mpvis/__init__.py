"""mpvis: a desktop debugger for message-passing (MPI) programs."""

__version__ = "0.1.0"
