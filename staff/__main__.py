import sys

from staff.cli import main

if __name__ == "__main__":  # not when a process pool's child imports this module
    sys.exit(main())
