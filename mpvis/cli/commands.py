"""The ``mpvis`` subcommands' names and one-line help, without importing them.

``mpvis --help`` lists these lines; each subcommand's module
(``mpvis.cli.<name>``, with its ``register``) takes its line from here when it
registers, so the two never differ.  This module imports nothing: the
dispatcher (:mod:`mpvis.cli.main`) imports a subcommand's module only when that
subcommand runs (issue 16: importing all of them took about 0.5 s, half of a
cached ``mpvis check``).
"""

from __future__ import annotations

#: Subcommand -> its line in ``mpvis --help``, in the order ``mpvis --help`` lists them.
COMMANDS: dict[str, str] = {
    "check": "report the races and deadlocks of a saved trace",
    "cone": "show the causality cone of an event",
    "predicate": "find where a conjunctive or disjunctive predicate first holds",
    "run": "run an MPI program under mpvis and watch it",
    "replay": "re-execute a recorded run with the same message deliveries",
    "collector": "run this machine's collector for a run across machines",
    "demo": "watch a built-in simulated program (no MPI needed)",
    "open": "browse a saved trace in the window",
    "render": "draw a trace's space-time diagram into an image file",
    "export": "write a trace as OTF2, Perfetto JSON or CSV",
    "orderings": "count a run's message orderings before and after POEG decomposition",
    "explore": "replay a program's other message delivery orders and report those that change it",
    "recover": "merge the ranks' spill files of a run into its trace",
}
