"""What ``actune``'s exit status means, the same for every command (README, "Exit codes"):

- ``0`` done;
- ``1`` it ran and stopped with an error, named in one line: an input file that is missing or malformed (file and
  line), a server that would not start or died past its restarts, an endpoint that refused the key, a training
  that diverged, disk full; everything written before it is kept, and the same command continues;
- ``2`` the command line or a config is wrong (an unknown key, a bad value, a missing environment variable), found
  before anything ran;
- ``3`` it ran and had nothing to do or kept nothing: an empty source, every record rejected;
- ``130`` interrupted (Ctrl-C, SIGTERM); the same command continues.
"""

from __future__ import annotations

__all__ = ["OK", "FAILED", "USAGE", "NOTHING_DONE", "INTERRUPTED"]

OK = 0
FAILED = 1
USAGE = 2  # argparse's own code for a bad command line
NOTHING_DONE = 3
INTERRUPTED = 130
