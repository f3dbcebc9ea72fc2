import sys

from actune.cli import main

sys.exit(main())
