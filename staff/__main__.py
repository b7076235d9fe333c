import sys

from staff.cli import main

sys.exit(main())
